package cluster

import (
	"errors"
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
// recorded whole (recording.log, the catalog, segments up to 1 MiB); of a
// larger segment it is the bytes the repair cut (from the torn frame to the
// last non-zero byte, handed over by the archive before it cut them: its
// Options.KeepCut), as <name>.crash-repair-<epoch ms>.cut-at-<offset>.

// backupSuffix marks a crash repair's backup file.
const backupSuffix = ".crash-repair-"

// keepRepairs logs the crash repairs of this start and writes their
// backups from the state Open recorded before it wrote anything.
func (n *Node) keepRepairs() {
	type repair struct {
		path, what string
		cut        *segmentCut // the bytes cut, for a segment not recorded whole
	}
	var rs []repair
	r := n.recovery
	if rl := r.RecordingLog; rl != nil {
		rs = append(rs, repair{path: n.fs.Join(n.cdir, recordinglog.FileName),
			what: fmt.Sprintf("cut %d bytes at offset %d: %s", rl.Dropped, rl.Offset, rl.Reason)})
	}
	if r.CatalogRepaired {
		rs = append(rs, repair{path: n.fs.Join(n.adir, archive.CatalogFileName), what: "dropped an entry a crash left half-added, or advanced nextRecordingId"})
	}
	for _, rr := range r.Archive {
		if rr.Truncated {
			rp := repair{path: n.fs.Join(n.adir, rr.LastSegment),
				what: fmt.Sprintf("recording %d: torn tail cut at file offset %d", rr.RecordingID, rr.TruncatedAt)}
			for i := range n.cuts {
				if c := &n.cuts[i]; c.segment == rr.LastSegment && c.offset == rr.TruncatedAt {
					rp.cut = c
				}
			}
			rs = append(rs, rp)
		}
	}
	for _, rp := range rs {
		backup := "not kept (the file is larger than Open records whole)"
		p, data := rp.path+backupSuffix+strconv.FormatInt(n.markMs, 10), []byte(nil)
		st := n.guard.files[rp.path]
		keep := st != nil && (st.data != nil || st.size == 0)
		if keep {
			data = st.data
		} else if rp.cut != nil {
			keep, data = true, rp.cut.data
			p += ".cut-at-" + strconv.FormatInt(rp.cut.offset, 10)
		}
		if keep {
			if err := writeBackup(n.fs, p, data); err != nil {
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

// restoreCuts writes back the bytes this start's crash repairs cut from
// segments (a failed start puts its repairs back too), before the files
// recorded by length only are checked.
func (n *Node) restoreCuts() error {
	var errs []error
	for _, c := range n.cuts {
		p := n.fs.Join(n.adir, c.segment)
		if err := rewrite(n.fs, p, func(f vfs.File) error {
			_, err := f.WriteAt(c.data, c.offset)
			return err
		}); err != nil {
			errs = append(errs, fmt.Errorf("%s: put back %d bytes at %d: %w", p, len(c.data), c.offset, err))
		}
	}
	return errors.Join(errs...)
}
