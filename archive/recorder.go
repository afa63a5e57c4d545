package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Source is what a recording reads: an image of a log buffer and the log
// itself. The log gives what Aeron's Image carries (term length, MTU,
// initial term id, session and stream ids) for the catalog descriptor; the
// recorder reads the frames through the image alone, with Image.BlockPoll
// (Aeron's blockPoll), which hands it each block and advances the image's
// position past it once it is written (and synced), so a publisher that
// sets its position limit from Image.Position never overwrites unrecorded
// bytes.
type Source struct {
	Log   *logbuf.Log
	Image *logbuf.Image // must read Log; its position is the join position
	// Channel is stored as the descriptor's stripped and original channel
	// ("aeron:ipc" when empty).
	Channel string
	// OriginalChannel, if set, is stored as the original channel instead.
	OriginalChannel string
	// SourceIdentity is stored as the descriptor's source identity.
	SourceIdentity string
	// Now, if set, gives the timestamp (epoch ms) of each block for the
	// sidecar index instead of the archive's clock, e.g. the sequencer's
	// time of the newest message.
	Now func() int64
	// SparseSegments gives the recording's segment files their length as
	// sparse files (blocks allocated as they are written, as Aeron's
	// archive does) instead of preallocating them: for recordings much
	// shorter than a segment, such as snapshots, which would otherwise
	// take a whole segment of disk each.
	SparseSegments bool
	// SyncEachRecord, at FileSyncLevel 0: each [Recording.Record] call
	// makes what it wrote durable before it returns (File.SyncAll of the
	// segments it wrote into, and the directory when it entered a new
	// segment), instead of the archive's SyncOnRollOver and
	// BackgroundSyncEvery: many small syncs as the recording is written
	// rather than a segment's worth of dirty pages flushed at once, which
	// stalls the writes of other recordings on the same disk (a snapshot
	// recorded beside a log).
	SyncEachRecord bool
}

// Recording is an active recording: a recorder that copies the frames of an
// image, byte for byte, into the recording's segment files, as Aeron's
// RecordingSession and RecordingWriter do.
//
// Each Poll is one Image.BlockPoll of at most FileIoMaxLength bytes, as
// Aeron's RecordingSession: a block is the frames from the recorded
// position, never across a term boundary; a padding frame is a block of its
// own of which only the 32-byte header is written (its body stays the
// preallocated zeros). The handler writes the block, syncs the file per
// FileSyncLevel and tells the sidecar index the block's timestamp; then
// BlockPoll advances the image past the block in one step. When a segment
// fills, the next one is entered at once, so a recording stopped exactly on
// a segment boundary has an empty, full-length following segment, as
// Aeron's. The next segment is made ready ahead of time, off the duty
// cycle: once the current segment is half full, a goroutine of the
// recording creates the following one under a temporary name
// (<id>-<base>.rec.prep, see [PreparedSuffix]), preallocates it and, at
// file sync level >= 1, syncs it, and closes the finished segment; the
// roll-over only renames the prepared file into place (and syncs the
// directory at level >= 1). A prepared file is never a segment: Stop
// removes it (before the stop position is written) and Open removes one a
// crash left behind, so the stop-position recovery, Verify and the orphan
// rules only ever see Aeron's segments. A failure of the preparation is
// the recording's error from the next Poll on.
//
// While the recording is active its catalog stopPosition stays -1, as in
// Aeron; the recorded position is kept in memory (Position,
// Archive.RecordedPosition) and in the sidecar index. Stop writes the final
// stop position.
//
// A failed write or sync is sticky: Poll and Record return it from then on,
// and Stop settles the stop position from what the files hold.
type Recording struct {
	a   *Archive
	id  int64
	img *logbuf.Image
	now func() int64

	startPosition atomic.Int64
	position      int64        // owned by the recording's goroutine
	pos           atomic.Int64 // position, for other goroutines
	segLen        int32
	termLen       int32
	blockLimit    int

	seg       vfs.File
	segBase   int64
	segOffset int64

	idxMu   sync.Mutex // guards idx against SegmentTimes
	idx     *indexFile
	blockFn logbuf.BlockHandler
	prep    *segmentPrep // the next segment, being prepared off the duty cycle
	done    vfs.File     // the finished segment, closed by the next preparation

	sparse bool // Source.SparseSegments

	// blocks counts the blocks written (owned by the recording's
	// goroutine).
	blocks int64
	// The level-0 policy (durable.go).
	syncEach bool         // Source.SyncEachRecord
	durable  atomic.Int64 // position known durable at level 0
	bg       sync.WaitGroup
	bgBusy   atomic.Bool
	bgSynced atomic.Int64 // what the background sync made durable (0: none yet)
	// syncErr is the first failed level-0 sync (roll-over, each record,
	// background or SyncTo). It is sticky: see failSync.
	syncErr atomic.Pointer[error]

	stopped bool
	err     error
}

// StartRecording starts recording src: it adds a catalog entry (start
// position = the image's position, stop -1) and creates the first segment,
// named after the term base of the start position, so that a recording that
// starts mid-term keeps its term offsets.
func (a *Archive) StartRecording(src Source) (*Recording, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := checkSource(src); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l := src.Log
	termLength := int32(l.TermLength())
	segLen := max(a.opts.SegmentLength, termLength)
	if err := CheckSegmentLength(segLen, termLength); err != nil {
		return nil, err
	}
	start := src.Image.Position()
	stripped, original := src.Channel, src.OriginalChannel
	if stripped == "" {
		stripped = "aeron:ipc"
	}
	if original == "" {
		original = stripped
	}
	id, err := a.cat.AddRecording(NewRecording{
		StartPosition:     start,
		StopPosition:      NullPosition,
		StartTimestamp:    a.opts.Clock(),
		StopTimestamp:     NullTimestamp,
		InitialTermID:     l.InitialTermID(),
		SegmentFileLength: segLen,
		TermBufferLength:  termLength,
		MTULength:         int32(l.MTU()),
		SessionID:         l.SessionID(),
		StreamID:          l.StreamID(),
		StrippedChannel:   stripped,
		OriginalChannel:   original,
		SourceIdentity:    src.SourceIdentity,
	})
	if err != nil {
		return nil, err
	}
	r := a.newRecording(id, src, start, segLen)
	r.durable.Store(start)
	base := SegmentFileBasePosition(start, start, termLength, segLen)
	// The index first: the directory sync of the segment's creation makes
	// both entries durable.
	r.idx, err = a.openIndex(id, base)
	var f vfs.File
	if err == nil {
		if f, err = a.createSegment(id, base, segLen, src.SparseSegments); err != nil {
			r.idx.close()
		}
	}
	if err != nil {
		// Leave a stopped, empty recording behind, settled as after a
		// crash.
		return nil, errors.Join(err, a.settleAfterFailure(id))
	}
	r.seg, r.segBase, r.segOffset = f, base, start-base
	a.recordings[id] = r
	return r, nil
}

// ExtendRecording continues the stopped recording id with src, as Aeron's
// extendRecording: src must have the recording's term length, MTU, initial
// term id and stream id, and its image must stand at the recording's stop
// position. The catalog entry gets the new session id and stop -1 again,
// and recording continues at the stop position in the same segment files.
func (a *Archive) ExtendRecording(id int64, src Source) (*Recording, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	if err := checkSource(src); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.recordings[id]; ok {
		return nil, fmt.Errorf("%w: cannot extend recording %d", ErrRecordingActive, id)
	}
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return nil, err
	}
	l := src.Log
	switch {
	case d.StopPosition == NullPosition:
		return nil, fmt.Errorf("archive: recording %d has no stop position; reopen the archive to settle it", id)
	case int32(l.TermLength()) != d.TermBufferLength || int32(l.MTU()) != d.MTULength ||
		l.InitialTermID() != d.InitialTermID || l.StreamID() != d.StreamID:
		return nil, fmt.Errorf("archive: extend recording %d: image has term length %d, MTU %d, initial term id %d, stream %d; recording has %d, %d, %d, %d",
			id, l.TermLength(), l.MTU(), l.InitialTermID(), l.StreamID(), d.TermBufferLength, d.MTULength, d.InitialTermID, d.StreamID)
	case src.Image.Position() != d.StopPosition:
		return nil, fmt.Errorf("archive: extend recording %d: image position %d is not the stop position %d", id, src.Image.Position(), d.StopPosition)
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return nil, err
	}
	base := SegmentFileBasePosition(d.StartPosition, d.StopPosition, d.TermBufferLength, d.SegmentFileLength)
	name := a.fs.Join(a.dir, SegmentFileName(id, base))
	f, err := a.fs.OpenRW(name)
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		f, err = a.createSegment(id, base, d.SegmentFileLength, src.SparseSegments)
	case err == nil:
		var size int64
		if size, err = f.Size(); err == nil && size < int64(d.SegmentFileLength) {
			err = a.prepareSegment(f, d.SegmentFileLength, src.SparseSegments)
		}
		if err != nil {
			f.Close()
			err = fmt.Errorf("archive: extend recording %d: %s: %w", id, name, err)
		}
	default:
		err = fmt.Errorf("archive: extend recording %d: %w", id, err)
	}
	if err != nil {
		return nil, err
	}
	idx, err := a.openIndex(id, startBase(d))
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := a.cat.ExtendRecording(id, 0, 0, l.SessionID()); err != nil {
		f.Close()
		idx.close()
		return nil, err
	}
	r := a.newRecording(id, src, d.StartPosition, d.SegmentFileLength)
	r.position = d.StopPosition
	r.pos.Store(d.StopPosition)
	r.durable.Store(d.StopPosition)
	r.seg, r.segBase, r.segOffset, r.idx = f, base, d.StopPosition-base, idx
	a.recordings[id] = r
	return r, nil
}

func checkSource(src Source) error {
	if src.Log == nil || src.Image == nil {
		return errors.New("archive: source needs a log and an image")
	}
	return nil
}

func (a *Archive) newRecording(id int64, src Source, start int64, segLen int32) *Recording {
	l := src.Log
	r := &Recording{
		a:          a,
		id:         id,
		sparse:     src.SparseSegments,
		img:        src.Image,
		now:        src.Now,
		position:   start,
		segLen:     segLen,
		termLen:    int32(l.TermLength()),
		blockLimit: min(a.opts.FileIoMaxLength, l.TermLength()),
	}
	r.startPosition.Store(start)
	r.pos.Store(start)
	r.syncEach = src.SyncEachRecord
	if r.now == nil {
		r.now = a.opts.Clock
	}
	r.blockFn = r.onBlock
	return r
}

// ID is the recording id.
func (r *Recording) ID() int64 { return r.id }

// StartPosition is the recording's start position.
func (r *Recording) StartPosition() int64 { return r.startPosition.Load() }

// Position is the recorded position: every byte before it has been written
// (and synced, at file sync level >= 1). It may be read on any goroutine.
func (r *Recording) Position() int64 { return r.pos.Load() }

// Err is the failure that stopped the recorder, if any.
func (r *Recording) Err() error { return r.err }

// Poll writes at most one block of available frames and returns its length
// in stream bytes (0 when nothing is available). It also refreshes the mark
// file's activity timestamp once a second when the Archive runs no ticker.
// It does not allocate.
func (r *Recording) Poll() (int, error) {
	if r.err == nil {
		if p := r.syncErr.Load(); p != nil {
			r.err = *p
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	if r.stopped {
		return 0, ErrRecordingStopped
	}
	n, err := r.writeBlock()
	if err == nil {
		err = r.prepErr()
	}
	if err != nil {
		r.err = fmt.Errorf("archive: recording %d at position %d: %w", r.id, r.position, err)
		return 0, r.err
	}
	if n > 0 {
		r.blocks++
	}
	if r.a.tickStop == nil {
		if err := r.a.maybeUpdateActivity(r.a.opts.Clock()); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Record polls until the recorded position reaches limit or no more frames
// are available, and returns the recorded position. At FileSyncLevel 0 it
// then applies the level-0 policy (Options.SyncOnRollOver and
// BackgroundSyncEvery, or Source.SyncEachRecord; see [Recording.SyncTo]);
// Poll alone syncs nothing at level 0.
func (r *Recording) Record(limit int64) (int64, error) {
	for r.position < limit {
		n, err := r.Poll()
		if err != nil {
			return r.position, err
		}
		if n == 0 {
			break
		}
	}
	if r.a.opts.FileSyncLevel == SyncNone {
		if err := r.level0(); err != nil {
			return r.position, err
		}
	}
	return r.position, nil
}

// Blocks is how many blocks the recording has written since it was
// started or extended (one sync each at FileSyncLevel >= 1). Read it on the
// recording's goroutine.
func (r *Recording) Blocks() int64 { return r.blocks }

// writeBlock is Aeron's RecordingSession.record: one Image.BlockPoll of at
// most blockLimit bytes, with onBlock (RecordingWriter.onBlock) as the
// handler; BlockPoll advances the image past the block in one step once
// the block is written (and synced), then a full segment is rolled over.
func (r *Recording) writeBlock() (int, error) {
	length, err := r.img.BlockPoll(r.blockFn, r.blockLimit)
	if err != nil || length == 0 {
		return 0, err
	}
	r.pos.Store(r.position)
	if r.segOffset >= int64(r.segLen) {
		if err := r.rollOver(); err != nil {
			return 0, err
		}
	} else if r.prep == nil && r.segOffset >= int64(r.segLen/2) {
		r.startPrepare()
	}
	return length, nil
}

// onBlock is Aeron's RecordingWriter.onBlock: it writes the block (only the
// 32-byte header of a padding frame, whose body stays the preallocated
// zeros), syncs it per the file sync level and tells the sidecar index the
// block's timestamp.
func (r *Recording) onBlock(term []byte, offset, length int, position int64) error {
	dataLength := length
	if binary.LittleEndian.Uint16(term[offset+logbuf.TypeFieldOffset:]) == logbuf.TypePad {
		dataLength = FrameHeaderLength
	}
	if _, err := r.seg.WriteAt(term[offset:offset+dataLength], r.segOffset); err != nil {
		return fmt.Errorf("write %s: %w", r.seg.Name(), err)
	}
	if err := r.a.syncFile(r.seg); err != nil {
		return fmt.Errorf("sync %s: %w", r.seg.Name(), err)
	}
	r.segOffset += int64(length)
	r.position = position + int64(length)
	now := r.now()
	r.idxMu.Lock()
	err := r.idx.note(r.segBase, r.position, now, false)
	r.idxMu.Unlock()
	return err
}

// rollOver enters the next segment: the preparer has already created and
// preallocated it (and synced it at file sync level >= 1) under its
// temporary name, so the duty cycle only renames it into place (and, at
// file sync level >= 1, syncs the directory, so the data written into it
// is reachable after a crash) and starts preparing the one after; the
// finished segment is closed by the preparer. Every block of the finished
// segment was already synced per the file sync level.
func (r *Recording) rollOver() error {
	r.idxMu.Lock()
	err := r.idx.flush()
	r.idxMu.Unlock()
	if err != nil {
		return err
	}
	if r.a.opts.FileSyncLevel > 0 {
		if err := r.idx.f.Sync(); err != nil {
			return fmt.Errorf("sync index: %w", err)
		}
	}
	if r.prep == nil {
		r.startPrepare() // a block longer than half a segment
	}
	p := r.prep
	r.prep = nil
	<-p.done
	if p.err != nil {
		return p.err
	}
	a := r.a
	name := a.fs.Join(a.dir, SegmentFileName(r.id, p.base))
	if _, err := a.fs.Stat(name); err == nil {
		closeFile(p.f)
		return fmt.Errorf("segment file already exists: %s", name)
	}
	if err := a.fs.Rename(a.fs.Join(a.dir, p.name), name); err != nil {
		closeFile(p.f)
		return fmt.Errorf("rename prepared segment: %w", err)
	}
	if a.opts.FileSyncLevel > 0 {
		if err := a.fs.SyncDir(a.dir); err != nil {
			closeFile(p.f)
			return fmt.Errorf("sync %s: %w", a.dir, err)
		}
	}
	r.done = r.seg
	r.seg, r.segBase, r.segOffset = renamedFile{p.f, name}, p.base, 0
	return nil
}

// PreparedSuffix ends the name of a segment file the recorder prepares
// ahead of time: <recordingId>-<segmentBasePosition>.rec.prep. Such a file
// is renamed to its segment name when the recording enters it; it is never
// a segment of the catalog (Aeron's tools and Verify ignore it), so a crash
// or Stop leaves no segment beyond the stop position other than Aeron's
// empty following segment. Open and Stop remove leftovers.
const PreparedSuffix = SegmentSuffix + ".prep"

// segmentPrep is one background preparation of the next segment.
type segmentPrep struct {
	done chan struct{}
	base int64
	name string // the temporary name, relative to the archive directory
	f    vfs.File
	err  error
}

// startPrepare starts preparing the segment after the current one on a
// goroutine of its own: create it under its temporary name (replacing a
// leftover), preallocate it to full length and, at file sync level >= 1,
// sync it. It closes the finished segment first. The recorder starts it
// once the current segment is half full, so a short recording (a
// snapshot's) prepares nothing, and the second half of a segment leaves
// the preparation ample time.
func (r *Recording) startPrepare() {
	a := r.a
	old := r.done
	r.done = nil
	p := &segmentPrep{done: make(chan struct{}), base: r.segBase + int64(r.segLen)}
	p.name = SegmentFileName(r.id, p.base) + ".prep"
	r.prep = p
	go func() {
		defer close(p.done)
		if err := closeFile(old); err != nil {
			p.err = err
			return
		}
		path := a.fs.Join(a.dir, p.name)
		if err := a.fs.Remove(path); err != nil && !errors.Is(err, vfs.ErrNotExist) {
			p.err = fmt.Errorf("archive: remove %s: %w", p.name, err)
			return
		}
		f, err := a.fs.Create(path)
		if err != nil {
			p.err = fmt.Errorf("archive: prepare segment: %w", err)
			return
		}
		if err := a.prepareSegment(f, r.segLen, r.sparse); err != nil {
			f.Close()
			p.err = err
			return
		}
		p.f = f
	}()
}

// renamedFile is a prepared segment file after its rename: Name gives the
// segment's name.
type renamedFile struct {
	vfs.File
	name string
}

func (f renamedFile) Name() string { return f.name }

// prepErr is the error of a finished background preparation, without
// waiting for one in progress.
func (r *Recording) prepErr() error {
	p := r.prep
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// discardPrepared waits for the preparation in progress, closes and removes
// its file, and returns its error.
func (r *Recording) discardPrepared() error {
	p := r.prep
	if p == nil {
		return nil
	}
	r.prep = nil
	<-p.done
	if p.err != nil {
		return p.err
	}
	err := closeFile(p.f)
	if rerr := r.a.fs.Remove(r.a.fs.Join(r.a.dir, p.name)); rerr != nil && !errors.Is(rerr, vfs.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("archive: remove %s: %w", p.name, rerr))
	}
	return err
}

// Stop ends the recording: the sidecar index gets its final record, the
// segment is closed and the catalog gets the stop position (the recorded
// position) and stop timestamp, in Aeron's order. Frames the image holds
// beyond the recorded position are not recorded; call Record first. After a
// failure Stop settles the stop position from the files and returns the
// failure.
func (r *Recording) Stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	r.bg.Wait() // the level-0 background sync, if one runs
	a := r.a
	a.mu.Lock() // lock order: the catalog mutex, then a recording's idxMu
	defer a.mu.Unlock()
	r.idxMu.Lock()
	defer r.idxMu.Unlock()
	delete(a.recordings, r.id)
	if perr := errors.Join(r.discardPrepared(), closeFile(r.done)); perr != nil && r.err == nil {
		r.err = fmt.Errorf("archive: recording %d: %w", r.id, perr)
	}
	r.done = nil
	if p := r.syncErr.Load(); p != nil {
		// After a failed sync what the disk holds is unknown: the stop
		// position stays -1, and the next Open settles the recording
		// from what the files then hold, as after a crash.
		if r.err == nil {
			r.err = *p
		}
		cerr := errors.Join(closeFile(r.seg), r.idx.close())
		r.seg = nil
		return errors.Join(r.err, cerr)
	}
	if r.err != nil {
		cerr := errors.Join(closeFile(r.seg), r.idx.close())
		r.seg = nil
		return errors.Join(r.err, cerr, a.settleAfterFailure(r.id))
	}
	var errs []error
	if err := r.idx.flush(); err != nil {
		errs = append(errs, err)
	} else if a.opts.FileSyncLevel > 0 {
		if err := r.idx.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("archive: sync index: %w", err))
		}
	}
	errs = append(errs, closeFile(r.seg), r.idx.close())
	r.seg = nil
	if err := errors.Join(errs...); err != nil {
		r.err = fmt.Errorf("archive: stop recording %d: %w", r.id, err)
		return errors.Join(r.err, a.settleAfterFailure(r.id))
	}
	if err := a.cat.RecordingStopped(r.id, r.position, a.opts.Clock()); err != nil {
		r.err = err
		return err
	}
	return nil
}

// settleAfterFailure settles a recording whose recorder failed, as if it had
// crashed. If that fails too, its stop position stays -1 and the next Open
// settles it.
func (a *Archive) settleAfterFailure(id int64) error {
	for i, e := range a.cat.Entries() {
		if e.State == StateValid && e.Descriptor.RecordingID == id {
			_, err := a.settle(i, e)
			return err
		}
	}
	return nil
}

func closeFile(f vfs.File) error {
	if f == nil {
		return nil
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("archive: close %s: %w", f.Name(), err)
	}
	return nil
}
