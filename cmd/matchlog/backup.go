package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/matchlog/matchlog/cluster/backup"
	"github.com/matchlog/matchlog/internal/vfs"
)

const backupUsage = `usage: matchlog backup <command> [flags]

Commands:
  create  --from DIR --to BDIR: a verified backup image of the node directory
          DIR, running or stopped: its latest complete snapshot set (at S)
          and its log from S to B (the end of its whole frames when read),
          with recording.log and catalog, written into BDIR (new or empty)
          as a node directory. DIR is only read. The image is restored to a
          scratch directory and a node started from it (the strict snapshot
          load, the replay to B) before BDIR/backup.json, the manifest, is
          written; a failed create removes what it wrote and leaves no
          manifest.
  drill   --backup BDIR [--work-dir DIR]: restore the image onto an empty
          directory, every file checked against the manifest, start a node
          from it and check its state hash against the manifest's; the
          drill's figures (date, duration, bytes restored, restore bytes/s,
          replay positions/s, ok or failed and why) are appended to
          BDIR/drills.jsonl. Exit 1 when the drill fails.

'matchlog retention plan --model B --backup BDIR' reads B from the manifest
and refuses without a drill that passed within --max-drill-age. Every
command takes --json; its fields are listed by 'matchlog help backup
<command>'.
`

var backupCommands = map[string]any{
	"create": backup.Manifest{},
	"drill":  backup.DrillRecord{},
}

func runBackup(args []string, stdout, stderr io.Writer) error {
	name, ok, err := subcommand("backup", args, func(n string) bool { _, ok := backupCommands[n]; return ok }, backupUsage, stderr)
	if !ok {
		return err
	}
	var from, to, dir, work string
	var jsonOut bool
	fs := flag.NewFlagSet("backup "+name, flag.ContinueOnError)
	head := ""
	switch name {
	case "create":
		head = "usage: matchlog backup create --from DIR --to BDIR [--work-dir DIR] [--json]\n\n"
		fs.StringVar(&from, "from", "", "node directory to back up, holding cluster/ and archive/ (required; only read, a node may run on it)")
		fs.StringVar(&to, "to", "", "backup directory, new or empty (required)")
		fs.StringVar(&work, "work-dir", "", "new or empty directory the image is restored into to be verified, removed afterwards (default: BDIR's sibling .BDIR.verify)")
	case "drill":
		head = "usage: matchlog backup drill --backup BDIR [--work-dir DIR] [--json]\n\n"
		fs.StringVar(&dir, "backup", "", "backup directory written by 'backup create' (required)")
		fs.StringVar(&work, "work-dir", "", "new or empty directory to restore into; the restored node is left there, stopped (default: BDIR's sibling .BDIR.drill-<unix ms>, removed after the drill)")
	}
	fs.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	fs.Usage = usageWithJSON(fs, head, backupCommands[name])
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "backup "+name)
	if name == "create" {
		switch {
		case from == "":
			return bad("--from is required")
		case to == "":
			return bad("--to is required")
		}
		if st, err := os.Stat(from); err != nil || !st.IsDir() {
			return fmt.Errorf("--from %s is not a directory: give a node directory (holding cluster/ and archive/)", from)
		}
		if _, err := resolveDir(from, "archive", "archive.catalog"); err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		m, err := backup.Create(backup.Options{FS: vfs.Default, From: from, To: to, Scratch: work})
		if err != nil {
			return err
		}
		if jsonOut {
			return writeJSON(stdout, m)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "backup of %s in %s: verified\n", m.Source, to)
		fmt.Fprintf(&b, "  S %d (snapshot state hash %s), B %d (state hash %s, %d log entries replayed)\n", m.S, m.SnapshotStateHash, m.B, m.StateHash, m.ReplayedEntries)
		fmt.Fprintf(&b, "  %d files, %d bytes; source running: %v; created %s\n", len(m.Files), m.Bytes, m.SourceRunning, m.Created)
		fmt.Fprintf(&b, "  next: matchlog backup drill --backup %s\n", to)
		_, err = io.WriteString(stdout, b.String())
		return err
	}
	if dir == "" {
		return bad("--backup is required")
	}
	remove := false
	if work == "" {
		clean := filepath.Clean(dir)
		work = filepath.Join(filepath.Dir(clean), fmt.Sprintf(".%s.drill-%d", filepath.Base(clean), time.Now().UnixMilli()))
		remove = true
	}
	d, derr := backup.Drill(backup.DrillOptions{FS: vfs.Default, Backup: dir, WorkDir: work})
	if remove {
		if err := os.RemoveAll(work); err != nil {
			derr = errors.Join(derr, fmt.Errorf("remove the drill directory %s: %w", work, err))
		}
	}
	if d == nil {
		return derr
	}
	var err2 error
	if jsonOut {
		err2 = writeJSON(stdout, d)
	} else {
		state := "PASSED"
		if !d.OK {
			state = "FAILED: " + d.Why
		}
		var b strings.Builder
		fmt.Fprintf(&b, "drill of %s at %s: %s\n", dir, d.Date, state)
		fmt.Fprintf(&b, "  restored %d bytes in %.3fs (%.0f bytes/s); replayed %d positions (%d entries) in %.3fs (%.0f positions/s); start %.3fs, drill %.3fs\n",
			d.RestoreBytes, d.RestoreSeconds, d.RestoreBytesPerSec, d.ReplayedPositions, d.ReplayedEntries, d.ReplaySeconds, d.ReplayPositionsPerSec, d.StartSeconds, d.DurationSeconds)
		fmt.Fprintf(&b, "  state hash at B %d: %s (manifest %s); recorded in %s\n", d.B, d.StateHash, d.ExpectedStateHash, filepath.Join(dir, backup.DrillLogFileName))
		_, err2 = io.WriteString(stdout, b.String())
	}
	return errors.Join(derr, err2)
}
