package backup

import (
	"errors"
	"fmt"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// DrillOptions configure Drill.
type DrillOptions struct {
	// FS is the file system (vfs.Default if nil).
	FS vfs.FS
	// Backup is the backup directory; WorkDir the directory the image is
	// restored into (new or empty). Drill leaves the restored node there,
	// stopped.
	Backup, WorkDir string
	// Now is the clock of the drill record (time.Now if nil).
	Now func() time.Time
}

// ErrDrillFailed wraps the reason of a failed drill.
var ErrDrillFailed = errors.New("backup: restore drill failed")

// Drill restores the backup image in opts.Backup onto opts.WorkDir (every
// file checked against the manifest's size and SHA-256), starts a node
// from it (the strict snapshot load, the replay to B), checks that its
// state hash is the manifest's, and appends the drill's record — date,
// duration, bytes restored, replay positions/s, restore bytes/s, ok or
// failed and why — to the backup's drill log. A failed drill is recorded
// too; its error wraps ErrDrillFailed. A backup without a readable,
// verified manifest is refused before anything is written (and nothing is
// recorded: there is no image to drill).
func Drill(opts DrillOptions) (*DrillRecord, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	fsys := opts.FS
	m, err := ReadManifest(fsys, opts.Backup)
	if err != nil {
		return nil, err
	}
	if _, err := emptyOrNew(fsys, opts.WorkDir, "drill directory"); err != nil {
		return nil, err
	}
	t0, wall := opts.Now(), time.Now()
	d := DrillRecord{Date: t0.UTC().Format(time.RFC3339), UnixMs: t0.UnixMilli(), WorkDir: opts.WorkDir, B: m.B, ExpectedStateHash: m.StateHash}
	why := func() string {
		began := time.Now()
		if err := fsys.MkdirAll(opts.WorkDir); err != nil {
			return err.Error()
		}
		_, total, written, err := copyTree(fsys, opts.Backup, opts.WorkDir, m.Files)
		d.RestoreSeconds = time.Since(began).Seconds()
		if err != nil {
			return fmt.Sprintf("restore: %v", err)
		}
		d.RestoreBytes, d.RestoreWrittenBytes = total, written
		if d.RestoreSeconds > 0 {
			d.RestoreBytesPerSec = float64(total) / d.RestoreSeconds
		}
		st, err := start(fsys, opts.WorkDir, m)
		if err != nil {
			return err.Error()
		}
		d.StartSeconds = st.took.Seconds()
		d.ReplayedPositions = st.recovery.ReplayedBytes
		d.ReplayedEntries = st.recovery.ReplayedEntries
		d.ReplaySeconds = st.recovery.Replay.Seconds()
		if d.ReplaySeconds > 0 {
			d.ReplayPositionsPerSec = float64(d.ReplayedPositions) / d.ReplaySeconds
		}
		d.StateHash = fmt.Sprintf("%016x", st.hash)
		if d.StateHash != m.StateHash {
			return fmt.Sprintf("the restored node's state hash at B = %d is %s, the manifest's %s", m.B, d.StateHash, m.StateHash)
		}
		return ""
	}()
	d.DurationSeconds = time.Since(wall).Seconds()
	d.OK, d.Why = why == "", why
	if err := appendDrill(fsys, opts.Backup, d); err != nil {
		if d.OK {
			return &d, fmt.Errorf("backup: the drill passed but could not be recorded: %w", err)
		}
		return &d, fmt.Errorf("%w: %s (and it could not be recorded: %w)", ErrDrillFailed, why, err)
	}
	if !d.OK {
		return &d, fmt.Errorf("%w: %s", ErrDrillFailed, why)
	}
	return &d, nil
}
