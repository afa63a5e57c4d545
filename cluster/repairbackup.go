package cluster

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Crash repairs and their backups.
//
// Open changes a file it found only for the crash repairs the design
// names: a torn tail of the recording being written cut from its last
// segment (archive.Open), a partial last entry cut from recording.log
// (recordinglog's Repair), a half-added catalog entry dropped
// (catalogrepair.go), and a mark file cut at its creation rewritten. Each
// is logged (Options.Logger, level WARN, "crash repair") with the file and
// what was cut, and the file as Open found it is kept next to it as
// <name>.crash-repair-<epoch ms> until the next successful snapshot, which
// removes every such backup. The backup is the whole file for files Open
// recorded whole (recording.log, the catalog, segments up to 1 MiB); the
// cut part of a larger segment is not kept, and the log record says so.

// backupSuffix marks a crash repair's backup file.
const backupSuffix = ".crash-repair-"

// keepRepairs logs the crash repairs of this start and writes their
// backups from the state Open recorded before it wrote anything.
func (n *Node) keepRepairs() {
	type repair struct{ path, what string }
	var rs []repair
	r := n.recovery
	if rl := r.RecordingLog; rl != nil {
		rs = append(rs, repair{n.fs.Join(n.cdir, recordinglog.FileName),
			fmt.Sprintf("cut %d bytes at offset %d: %s", rl.Dropped, rl.Offset, rl.Reason)})
	}
	if r.CatalogRepaired {
		rs = append(rs, repair{n.fs.Join(n.adir, archive.CatalogFileName), "dropped an entry a crash left half-added, or advanced nextRecordingId"})
	}
	for _, rr := range r.Archive {
		if rr.Truncated {
			rs = append(rs, repair{n.fs.Join(n.adir, rr.LastSegment),
				fmt.Sprintf("recording %d: torn tail cut at file offset %d", rr.RecordingID, rr.TruncatedAt)})
		}
	}
	for _, rp := range rs {
		backup := "not kept (the file is larger than Open records whole)"
		if st := n.guard.files[rp.path]; st != nil && (st.data != nil || st.size == 0) {
			p := rp.path + backupSuffix + strconv.FormatInt(n.markMs, 10)
			if err := writeBackup(n.fs, p, st.data); err != nil {
				backup = "not kept: " + err.Error()
			} else {
				backup = p
				n.backups = append(n.backups, p)
			}
		}
		n.opts.Logger.Warn("crash repair", slog.String("file", rp.path), slog.String("repair", rp.what), slog.String("backup", backup))
	}
	// Backups of earlier starts (in the directory as Open found it) wait
	// for the next snapshot too.
	for p := range n.guard.files {
		if strings.Contains(p, backupSuffix) && !containsString(n.backups, p) {
			n.backups = append(n.backups, p)
		}
	}
}

// dropBackups removes the crash repairs' backups once a snapshot made
// them unnecessary.
func (n *Node) dropBackups() {
	for _, p := range n.backups {
		if err := n.fs.Remove(p); err != nil {
			n.opts.Logger.Warn("crash repair backup not removed", slog.String("file", p), slog.String("error", err.Error()))
		}
	}
	n.backups = nil
}

func writeBackup(fsys vfs.FS, p string, b []byte) error {
	f, err := fsys.Create(p)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
