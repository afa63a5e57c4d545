package archive

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// ErrRecordingInUse is returned by PurgeRecording for a recording that is
// being recorded (it also satisfies ErrRecordingActive) or replayed.
var ErrRecordingInUse = errors.New("archive: the recording is being recorded or replayed")

// PurgeRecording deletes recording id whole, as Aeron's purgeRecording
// (ArchiveConductor: hasRecording, isValidPurge, isDeleteAllowed, then
// changeState(DELETED) and the deletion of every segment file), with the
// two-phase delete of DeleteDetached: the recording must be stopped (a
// stop position in the catalog), not being recorded or replayed, and have
// no file waiting to be unlinked; its catalog entry becomes DELETED
// (written and synced first, so that no crash brings back a VALID entry
// whose files are gone), then every segment file of it is renamed to
// <name>.deleted and scheduled for unlinking after Options.DeleteDelay
// ([Archive.DeleteStep]), and its sidecar index is removed at once (it holds
// no recorded data). The entry stays in the catalog, DELETED, as
// Aeron leaves it (its space is reclaimed by a compaction).
//
// A recording that is already DELETED (a purge interrupted between the
// state change and the renames) has its remaining segment files renamed;
// an INVALID one is refused (that state is an operator's mark, undone by
// mark-valid, not a deletion). It returns the number of files renamed.
func (a *Archive) PurgeRecording(id int64) (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, err := a.cat.Entry(id)
	if err != nil {
		return 0, err
	}
	switch e.State {
	case StateValid:
		if _, active := a.recordings[id]; active {
			return 0, fmt.Errorf("%w (%w): recording %d: purge refused", ErrRecordingInUse, ErrRecordingActive, id)
		}
		if e.Descriptor.StopPosition == NullPosition {
			return 0, fmt.Errorf("archive: recording %d has no stop position; reopen the archive to settle it before a purge", id)
		}
		for _, rp := range a.replays {
			if rp.id == id && !rp.closed {
				return 0, fmt.Errorf("%w: recording %d is being replayed (from %d): purge refused", ErrRecordingInUse, id, rp.from)
			}
		}
		if a.deletes.inFlight[id] > 0 {
			return 0, fmt.Errorf("%w: recording %d has %d files waiting", ErrDeleteInProgress, id, a.deletes.inFlight[id])
		}
		if err := a.cat.ChangeState(id, StateDeleted); err != nil {
			return 0, fmt.Errorf("archive: purge recording %d: %w", id, err)
		}
		// ChangeState syncs at the catalog's sync level; the state must be
		// durable before any file goes, whatever that level.
		if err := a.cat.Sync(); err != nil {
			return 0, fmt.Errorf("archive: purge recording %d: %w", id, err)
		}
	case StateDeleted:
	default:
		return 0, fmt.Errorf("archive: recording %d is %s: only a VALID (or already DELETED) recording is purged", id, e.State)
	}
	segs, _, err := segmentIndex(a.fs, a.dir)
	if err != nil {
		return 0, err
	}
	due := a.opts.Clock() + a.opts.DeleteDelay.Milliseconds()
	n := 0
	for _, f := range segs[id] {
		from := a.fs.Join(a.dir, f.Name)
		if err = a.fs.Rename(from, from+DeletedSuffix); err != nil {
			err = fmt.Errorf("archive: purge recording %d: rename %s: %w", id, f.Name, err)
			break
		}
		a.deletes.add(PendingDelete{RecordingID: id, Name: f.Name + DeletedSuffix, Size: f.Size, Due: due})
		n++
	}
	if n > 0 && a.opts.FileSyncLevel > 0 {
		if serr := a.fs.SyncDir(a.dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("archive: sync %s: %w", a.dir, serr))
		}
	}
	if err == nil {
		if rerr := a.fs.Remove(a.fs.Join(a.dir, IndexFileName(id))); rerr != nil && !errors.Is(rerr, vfs.ErrNotExist) {
			err = fmt.Errorf("archive: purge recording %d: remove its index: %w", id, rerr)
		}
	}
	return n, err
}
