package archive

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// ErrRecordingInUse is returned by DeleteRecording for a recording that is
// being recorded or replayed.
var ErrRecordingInUse = errors.New("archive: the recording is being recorded or replayed")

// DeleteRecording deletes a whole stopped recording, as Aeron's
// purgeRecording: its catalog entry becomes DELETED (synced, whatever the
// catalog sync level) and then every one of its segment files is renamed to
// "<name>.deleted" and scheduled for unlinking after Options.DeleteDelay,
// one file per [Archive.DeleteStep], exactly as DeleteDetached's files; its
// sidecar index goes at once (it holds no recorded data). It returns the
// number of segment files renamed. A recording being recorded or replayed
// is refused (ErrRecordingInUse), and so is one whose files already wait to
// be unlinked (ErrDeleteInProgress) and one marked INVALID. After a crash,
// Open schedules the renamed files again: a file of a recording with no
// VALID catalog entry is below no start a reader could use; and a crash
// between the catalog change and the renames leaves a DELETED recording
// with files, which DeleteRecording called again renames.
func (a *Archive) DeleteRecording(id int64) (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, active := a.recordings[id]; active {
		return 0, fmt.Errorf("%w: recording %d is active", ErrRecordingInUse, id)
	}
	for _, rp := range a.replays {
		if rp.id == id && !rp.closed {
			return 0, fmt.Errorf("%w: recording %d is being replayed from %d", ErrRecordingInUse, id, rp.from)
		}
	}
	if a.deletes.inFlight[id] > 0 {
		return 0, fmt.Errorf("%w: recording %d has %d files waiting", ErrDeleteInProgress, id, a.deletes.inFlight[id])
	}
	e, err := a.cat.Entry(id)
	if err != nil {
		return 0, err
	}
	if e.State != StateValid && e.State != StateDeleted {
		return 0, fmt.Errorf("archive: delete recording %d: it is %s in the catalog; only a VALID or DELETED recording is deleted", id, e.State)
	}
	if err := a.cat.ChangeState(id, StateDeleted); err != nil {
		return 0, fmt.Errorf("archive: delete recording %d: %w", id, err)
	}
	// DELETED must be durable before a file goes: a crash must never
	// bring back a VALID recording whose files were renamed. (At catalog
	// sync level >= 1 ChangeState has synced it.)
	if a.opts.CatalogSyncLevel == 0 {
		if err := a.cat.Sync(); err != nil {
			return 0, fmt.Errorf("archive: delete recording %d: %w", id, err)
		}
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
			err = fmt.Errorf("archive: delete recording %d: rename %s: %w", id, f.Name, err)
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
			err = fmt.Errorf("archive: delete recording %d: remove its index: %w", id, rerr)
		}
	}
	return n, err
}
