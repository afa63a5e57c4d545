package archive

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Durability at file sync level 0
//
// At FileSyncLevel 0 the recorder syncs no block: the page cache decides
// when data reaches the disk. A recording's durable position is the
// position up to which its segment files are known synced; at level >= 1 it
// is the recorded position. Three options make a level-0 recording durable
// at the points an owner needs, all applied by Record after its blocks:
//
//   - Options.SyncOnRollOver: once the recording has moved into a segment
//     beyond the one holding the durable position, every segment from there
//     to the current one is synced, and the directory, so a crash loses at
//     most the tail of the last segment and never leaves a hole in an
//     earlier one;
//   - Options.BackgroundSyncEvery: within a segment, every that many bytes
//     a sync of them starts on a goroutine of the recording (no directory
//     sync), so the roll-over sync has little left to flush; what it synced
//     counts from the next Record on, and its failure is returned by every
//     Record after it;
//   - Source.SyncEachRecord (instead of the two): each Record syncs what it
//     wrote, and the directory when it entered a new segment.
//
// [Recording.SyncTo] makes a recording durable up to a position whatever
// the options, on any goroutine; [Recording.DurablePosition] reads the
// durable position.
//
// A failed level-0 sync is sticky, whichever of the four made it: after a
// failed fsync the kernel may have dropped the dirty pages or marked them
// clean, so a later sync that succeeds proves nothing about the bytes
// before it. The durable position stays where it was; every later Poll,
// Record and SyncTo returns the first failure; Stop leaves the catalog's
// stop position at -1 (the next Open settles the recording from what the
// files then hold, as after a crash) instead of writing the position the
// recorder reached in memory. The level-0 syncs are File.SyncAll of each segment
// file, opened by name, so they may run beside the recorder's own writes.

// DurablePosition is the position up to which the recording's files are
// known synced: the recorded position at FileSyncLevel >= 1, at level 0 the
// position the level-0 policy or SyncTo last made durable. It may be read on
// any goroutine.
func (r *Recording) DurablePosition() int64 {
	if r.a.opts.FileSyncLevel > SyncNone {
		return r.Position()
	}
	return r.durable.Load()
}

// SyncTo makes the recording durable up to pos, which it must have recorded:
// at FileSyncLevel 0 it syncs (File.SyncAll) every segment file from the one
// holding the durable position to the one holding pos, then the directory;
// at level >= 1 every block was synced already and it does nothing. While
// the recorded position is below pos it syncs nothing (record further
// first). It returns the durable position afterwards. It may run on any
// goroutine, beside the recorder's writes; a failed sync is returned, and
// the durable position stays where it was.
func (r *Recording) SyncTo(pos int64) (int64, error) {
	if r.a.opts.FileSyncLevel > SyncNone {
		return r.Position(), nil
	}
	from := r.durable.Load()
	if p := r.syncErr.Load(); p != nil {
		return from, *p
	}
	if pos <= from || r.Position() < pos {
		return from, nil
	}
	if err := r.syncFiles(from, pos, true); err != nil {
		return from, r.failSync(from, pos, err)
	}
	r.noteDurable(pos)
	return r.durable.Load(), nil
}

// failSync records the first failed level-0 sync of [from, pos) and
// returns it (or the earlier one): it is sticky (see above).
func (r *Recording) failSync(from, pos int64, err error) error {
	e := fmt.Errorf("archive: recording %d: sync of positions [%d, %d) failed, so nothing after the durable position %d can be trusted to be on disk and nothing is synced again: stop the node and restart it, which recovers from what the files hold: %w",
		r.id, from, pos, r.durable.Load(), err)
	r.syncErr.CompareAndSwap(nil, &e)
	return *r.syncErr.Load()
}

// noteDurable raises the durable position to pos.
func (r *Recording) noteDurable(pos int64) {
	for {
		v := r.durable.Load()
		if pos <= v || r.durable.CompareAndSwap(v, pos) {
			return
		}
	}
}

// level0 is the level-0 policy after Record's blocks (see above). It runs
// on the recording's goroutine.
func (r *Recording) level0() error {
	pos := r.position
	if r.syncEach {
		synced := r.durable.Load()
		if pos <= synced {
			return nil
		}
		newSeg := synced == r.startPosition.Load() || r.segmentBase(pos) > r.segmentBase(synced)
		if err := r.syncFiles(synced, pos, newSeg); err != nil {
			return r.failSync(synced, pos, err)
		}
		r.noteDurable(pos)
		return nil
	}
	opts := &r.a.opts
	if !opts.SyncOnRollOver && opts.BackgroundSyncEvery <= 0 {
		return nil
	}
	if p := r.syncErr.Load(); p != nil {
		return *p
	}
	if v := r.bgSynced.Load(); v > 0 {
		r.noteDurable(v)
	}
	synced := r.durable.Load()
	if opts.SyncOnRollOver && r.segmentBase(pos) > r.segmentBase(synced) {
		if err := r.syncFiles(synced, pos, true); err != nil {
			return r.failSync(synced, pos, err)
		}
		r.noteDurable(pos)
		return nil
	}
	if every := opts.BackgroundSyncEvery; every > 0 && pos-synced >= every && r.bgBusy.CompareAndSwap(false, true) {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			defer r.bgBusy.Store(false)
			if err := r.syncFiles(synced, pos, false); err != nil {
				_ = r.failSync(synced, pos, err)
				return
			}
			r.bgSynced.Store(pos)
		}()
	}
	return nil
}

// segmentBase is the base position of the segment holding pos.
func (r *Recording) segmentBase(pos int64) int64 {
	start := r.startPosition.Load()
	return SegmentFileBasePosition(start, pos, r.termLen, r.segLen)
}

// syncFiles syncs the segment files holding [from, pos] and, with dir, the
// directory. It opens the files by name, so it may run beside the
// recorder's writes.
func (r *Recording) syncFiles(from, pos int64, dir bool) error {
	a := r.a
	fsys := a.fs
	to := r.segmentBase(pos)
	for base := r.segmentBase(from); base <= to; base += int64(r.segLen) {
		f, err := fsys.OpenRW(fsys.Join(a.dir, SegmentFileName(r.id, base)))
		if errors.Is(err, vfs.ErrNotExist) && base == to && base == pos {
			continue // the next segment is entered only once the previous one is full
		}
		if err != nil {
			return fmt.Errorf("archive: sync recording %d: %w", r.id, err)
		}
		err = f.SyncAll()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("archive: sync recording %d: %s: %w", r.id, f.Name(), err)
		}
	}
	if !dir {
		return nil
	}
	if err := fsys.SyncDir(a.dir); err != nil {
		return fmt.Errorf("archive: sync %s: %w", a.dir, err)
	}
	return nil
}
