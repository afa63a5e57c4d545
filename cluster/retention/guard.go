package retention

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// ErrPastSnapshot is wrapped by CheckDetach's refusals.
var ErrPastSnapshot = errors.New("retention: the detach would remove log a restart needs")

// CheckDetach is the check a detach or purge of a member's archive must
// pass: moving the start of recording id of the member directory dir
// (holding cluster/ and archive/) to newStart must not remove what a
// restart needs. For the log recording (the last TERM's in recording.log)
// newStart must be ≤ C, the greatest segment boundary ≤ S of the latest
// complete, proven-loadable snapshot set; with no such set every byte of
// the log is needed (a full replay from the start), so any detach is
// refused. A recording of a valid SNAPSHOT entry is never detached. A
// directory without recording.log is no member's: nil. The error wraps
// ErrPastSnapshot and names S, C, the requested position and what would
// make the detach safe. It only reads.
func CheckDetach(fsys vfs.FS, dir string, id, newStart int64) error {
	rl, err := recordinglog.Open(fsys, fsys.Join(dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true, Repair: true})
	if errors.Is(err, vfs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("retention: check the detach against %s: %w", dir, err)
	}
	services := rl.SetServiceCount()
	term, hasTerm := rl.FindLastTerm()
	for _, e := range rl.Entries() {
		if e.Type == recordinglog.TypeSnapshot && e.Valid && e.RecordingID == id {
			rl.Close()
			return fmt.Errorf("%w: recording %d is the snapshot of service %d at log position %d in %s: detaching any of it destroys the snapshot; "+
				"plan its deletion as a whole generation with `matchlog retention plan`", ErrPastSnapshot, id, e.ServiceID, e.LogPosition, rl.Path())
		}
	}
	rl.Close()
	if !hasTerm || term.RecordingID != id {
		return nil
	}
	if services < 0 {
		services = 1
	}
	f, err := Gather(fsys, Member{ID: -1, Dir: dir}, Options{Services: services, Commit: -1})
	if err != nil {
		return fmt.Errorf("retention: check the detach against %s: %w", dir, err)
	}
	p := PositionsOf(f)
	if p.S < 0 {
		return fmt.Errorf("%w: recording %d is the log of %s, which holds no complete, loadable snapshot set (S = -1, C = -1): "+
			"a restart replays the whole log from its start, so --position %d would remove log it needs. "+
			"Safe: take a snapshot first (`matchlog cluster snapshot --dir %s`), then detach to at most the boundary at or below it "+
			"(`matchlog retention plan` computes it)", ErrPastSnapshot, id, dir, newStart, dir)
	}
	if newStart > p.C {
		return fmt.Errorf("%w: recording %d is the log of %s: --position %d is past C = %d, the greatest segment boundary ≤ S = %d of the latest complete snapshot set; "+
			"a restart loads that set and replays the log from S, so the log before S must stay from C on. "+
			"Safe: --position ≤ %d, or take a newer snapshot first (`matchlog cluster snapshot --dir %s`); `matchlog retention plan` shows the cutoff that keeps two generations",
			ErrPastSnapshot, id, dir, newStart, p.C, p.S, p.C, dir)
	}
	return nil
}
