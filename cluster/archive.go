package cluster

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/internal/vfs"
)

// The node records through package archive (archive.Archive): the log
// recording, extended across restarts, and one recording per snapshot.
//
// The node's duty cycle records the log; a pauseless snapshot is encoded and
// recorded on the snapshot goroutine. archive.Archive is safe for concurrent
// use by different recordings: its catalog mutex is held only around
// catalog updates (starting and stopping the snapshot recordings), and each
// recording's block writes and syncs run outside it, so the log's group
// commits never wait for a snapshot block's write or sync. Each
// nodeRecording has its own mutex (one goroutine drives it at a time; the
// duty cycle only tries it).
//
// Durability beyond the archive's file sync level: a snapshot must be
// durable before recording.log names it, the log must be durable up to a
// snapshot's position before the entry is written, and a stop position in
// the catalog must never name bytes a crash can lose. At sync level 0 the
// archive syncs nothing, so for those three the node syncs the recording's
// segment files itself (nodeRecording.sync) before going on.
type nodeArchive struct {
	a     *archive.Archive
	fs    vfs.FS
	dir   string
	level archive.SyncLevel
	// catalogRepaired: repairCatalog changed the catalog before it opened.
	catalogRepaired bool
}

// recorded tells whether the node's recording.log holds entries: a
// catalog that names no recording may then be what a crash left only when
// nothing refers to a recording.
func openArchive(fsys vfs.FS, dir string, opts Options, nowMs func() int64, recorded bool) (*nodeArchive, error) {
	// The node owns its archive: an archive mark file left behind by a
	// crashed node belongs to no live archive, so it is marked stopped
	// (activity -1, as a clean stop leaves it) before the archive opens
	// and checks it.
	// A torn mark file is recreated by Open.
	if err := archive.MarkStopped(fsys, dir); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	a, err := archive.Open(fsys, dir, archive.Options{
		SegmentLength:    opts.SegmentLength,
		FileIoMaxLength:  opts.FileIoMaxLength,
		FileSyncLevel:    opts.FileSyncLevel,
		CatalogSyncLevel: max(1, opts.FileSyncLevel),
		Clock:            nowMs,
		// Smaller than Aeron's 1 MiB defaults (same layouts): a node's
		// catalog holds a log and its snapshots, and grows as needed.
		CatalogCapacity:       64 * 1024,
		MarkErrorBufferLength: 64 * 1024,
		// The states a crash inside the catalog's addNewRecording
		// leaves are repaired; a catalog of zeros only when
		// recording.log names no recording.
		RepairCatalog:        true,
		KeepUnwrittenCatalog: recorded,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: archive: %w", err)
	}
	return &nodeArchive{a: a, fs: fsys, dir: dir, level: opts.FileSyncLevel, catalogRepaired: a.CatalogRepaired()}, nil
}

// Descriptor implements recordinglog.Recordings.
func (na *nodeArchive) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	return na.a.Descriptor(id)
}

// Close closes the archive; no recording may be in use.
func (na *nodeArchive) Close() error { return na.a.Close() }

// nodeRecording is a recording of one of the node's log buffers.
type nodeRecording struct {
	mu     sync.Mutex // one goroutine drives the recording at a time
	na     *nodeArchive
	rec    *archive.Recording
	log    *logbuf.Log
	img    *logbuf.Image // the recorder's reader of log
	desc   archive.RecordingDescriptor
	synced int64 // position up to which the files are known synced
	// syncEach: at sync level 0, sync what each record call wrote (the
	// snapshot recordings, which must be durable before recording.log
	// names them anyway: many small syncs as they are written instead
	// of a segment's worth of dirty pages flushed at once, which stalls
	// the log's writes on the same disk for tens of ms).
	syncEach bool
	// Background syncs of the log at level 0 (see record): bg tracks the
	// one in flight, bgSynced is the position it made durable (0: none
	// yet), bgErr its failure.
	bg       sync.WaitGroup
	bgBusy   atomic.Bool
	bgSynced atomic.Int64
	bgErr    atomic.Pointer[error]
	// blocks and syncs count the archive's block writes (one sync each
	// at sync level >= 1): the group commits of the log.
	blocks, syncs int64
}

func (na *nodeArchive) newRecording(rec *archive.Recording, log *logbuf.Log, img *logbuf.Image) (*nodeRecording, error) {
	d, err := na.a.Descriptor(rec.ID())
	if err != nil {
		return nil, err
	}
	return &nodeRecording{na: na, rec: rec, log: log, img: img, desc: d, synced: img.Position()}, nil
}

// StartRecording starts recording log from its tail. sparse gives its
// segments their length without preallocating them (snapshots: a
// recording much shorter than a segment takes only what it writes).
func (na *nodeArchive) StartRecording(log *logbuf.Log, channel string, sparse bool) (*nodeRecording, error) {
	img := log.ImageAt(log.TailPosition())
	rec, err := na.a.StartRecording(archive.Source{Log: log, Image: img, Channel: channel, SourceIdentity: "aeron:ipc", SparseSegments: sparse})
	if err != nil {
		return nil, err
	}
	return na.newRecording(rec, log, img)
}

// ExtendRecording continues recording id from log's tail.
func (na *nodeArchive) ExtendRecording(id int64, log *logbuf.Log, channel string) (*nodeRecording, error) {
	img := log.ImageAt(log.TailPosition())
	rec, err := na.a.ExtendRecording(id, archive.Source{Log: log, Image: img, Channel: channel, SourceIdentity: "aeron:ipc"})
	if err != nil {
		return nil, err
	}
	return na.newRecording(rec, log, img)
}

func (r *nodeRecording) ID() int64 { return r.rec.ID() }

// Position is the recorded position: written, and synced at sync level
// >= 1 (the archive's Recording.Position). Egress is released up to it.
func (r *nodeRecording) Position() int64 { return r.img.Position() }

// SyncedPosition is the position up to which the data is synced whatever
// the level.
func (r *nodeRecording) SyncedPosition() int64 {
	if r.na.level > 0 {
		return r.Position()
	}
	return r.synced
}

// record writes the committed frames up to limit. With try, it does
// nothing when another goroutine is driving the recording.
func (r *nodeRecording) record(limit int64, try bool) error {
	if try {
		if !r.mu.TryLock() {
			return nil
		}
	} else {
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	for r.rec.Position() < limit {
		n, err := r.rec.Poll()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		r.blocks++
		if r.na.level > 0 {
			r.syncs++
		}
	}
	if r.na.level == 0 && r.syncEach {
		pos := r.rec.Position()
		if pos <= r.synced {
			return nil
		}
		d := &r.desc
		newSeg := r.synced == d.StartPosition ||
			archive.SegmentFileBasePosition(d.StartPosition, pos, d.TermBufferLength, d.SegmentFileLength) >
				archive.SegmentFileBasePosition(d.StartPosition, r.synced, d.TermBufferLength, d.SegmentFileLength)
		if err := r.syncFiles(r.synced, pos, newSeg); err != nil {
			return err
		}
		r.synced = pos
		return nil
	}
	if r.na.level == 0 {
		// Level 0 syncs nothing per block, but a segment is made durable
		// once the recording has moved past it, so that a crash can only
		// lose the tail of the last segment (which the archive's recovery
		// cuts off) and never leave a hole in an earlier one.
		//
		// That sync runs here, in the duty cycle; so that it never has a
		// whole segment of dirty pages to flush (tens of ms for 128 MiB),
		// every bgSyncEvery bytes of the current segment are synced in the
		// background meanwhile.
		if p := r.bgErr.Load(); p != nil {
			return *p
		}
		if v := r.bgSynced.Load(); v > r.synced {
			r.synced = v
		}
		d := &r.desc
		pos := r.rec.Position()
		if archive.SegmentFileBasePosition(d.StartPosition, pos, d.TermBufferLength, d.SegmentFileLength) >
			archive.SegmentFileBasePosition(d.StartPosition, r.synced, d.TermBufferLength, d.SegmentFileLength) {
			return r.syncLocked()
		}
		if pos-r.synced >= bgSyncEvery && r.bgBusy.CompareAndSwap(false, true) {
			from := r.synced
			r.bg.Add(1)
			go func() {
				defer r.bg.Done()
				defer r.bgBusy.Store(false)
				if err := r.syncFiles(from, pos, false); err != nil {
					r.bgErr.Store(&err)
					return
				}
				r.bgSynced.Store(pos)
			}()
		}
	}
	return nil
}

// bgSyncEvery is how much of a level-0 recording's current segment may be
// written before a background sync of it starts.
const bgSyncEvery = 2 << 20

// sync makes the recording's files durable up to the recorded position,
// whatever the level: every segment written since the last sync, and the
// directory.
func (r *nodeRecording) sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncLocked()
}

func (r *nodeRecording) syncLocked() error {
	pos := r.rec.Position()
	if r.na.level > 0 {
		// The archive synced every block, and the directory whenever it
		// created a segment.
		r.synced = pos
		return nil
	}
	if err := r.syncFiles(r.synced, pos, true); err != nil {
		return err
	}
	r.synced = pos
	return nil
}

// syncSegmentsTo makes the recording durable up to pos (at least) at sync
// level 0 without taking the recording's mutex, so it may run on another
// goroutine while the owner goes on recording: it syncs the segment files
// from the one holding from (a position known synced) to the one holding
// pos, and the directory. It returns the position now known synced, or 0
// when it did nothing (level >= 1, or pos not yet recorded); the owner
// notes it with noteSynced.
func (r *nodeRecording) syncSegmentsTo(from, pos int64) (int64, error) {
	if r.na.level > 0 || r.rec.Position() < pos {
		return 0, nil
	}
	if err := r.syncFiles(from, pos, true); err != nil {
		return 0, err
	}
	return pos, nil
}

// noteSynced records that the files are synced up to pos.
func (r *nodeRecording) noteSynced(pos int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.na.level == 0 && pos > r.synced {
		r.synced = pos
	}
}

// syncFiles syncs the segment files holding [from, pos] and, with dir, the
// directory. It reads only the recording's immutable descriptor.
func (r *nodeRecording) syncFiles(from, pos int64, dir bool) error {
	d := &r.desc
	fsys := r.na.fs
	to := archive.SegmentFileBasePosition(d.StartPosition, pos, d.TermBufferLength, d.SegmentFileLength)
	from = archive.SegmentFileBasePosition(d.StartPosition, from, d.TermBufferLength, d.SegmentFileLength)
	for base := from; base <= to; base += int64(d.SegmentFileLength) {
		f, err := fsys.OpenRW(fsys.Join(r.na.dir, archive.SegmentFileName(d.RecordingID, base)))
		if errors.Is(err, vfs.ErrNotExist) && base == to && base == pos {
			continue // the next segment is created only when the previous one fills
		}
		if err != nil {
			return err
		}
		err = f.SyncAll()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if !dir {
		return nil
	}
	return fsys.SyncDir(r.na.dir)
}

// stop ends the recording: everything committed up to limit is recorded,
// synced (at level 0 too), and the stop position goes into the catalog.
func (r *nodeRecording) stop(limit int64) error {
	if err := r.record(limit, false); err != nil {
		r.abandon()
		return err
	}
	r.bg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.syncLocked(); err != nil {
		r.rec.Stop()
		return err
	}
	return r.rec.Stop()
}

// abandon stops a failed recording; the archive settles its stop position
// from the files.
func (r *nodeRecording) abandon() {
	r.bg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Stop()
}

// errStopPoll stops a replay poll after the handler's limit.
var errStopPoll = errors.New("cluster: poll limit")

// replaySource replays a recording as a stream.FragmentSource. It must
// be used on the goroutine that owns the archive (the node's, at start).
type replaySource struct {
	na   *nodeArchive
	rp   *archive.Replay
	id   int64
	err  error
	done bool
}

// replay opens a replay of recording id over [from, to) (to -1: its stop).
func (na *nodeArchive) replay(id, from, to int64) (*replaySource, error) {
	if to < 0 {
		to = archive.NullPosition
	}
	rp, err := na.a.StartReplay(id, from, to)
	if err != nil {
		return nil, fmt.Errorf("cluster: replay of recording %d: %w", id, err)
	}
	return &replaySource{na: na, rp: rp, id: id}, nil
}

// each calls fn for every data frame's payload and the position after it.
func (s *replaySource) each(fn func(payload []byte, pos int64) error) error {
	var ferr error
	for !s.done && s.err == nil {
		before := s.rp.Position()
		_, err := s.rp.Poll(func(pos int64, frame []byte) error {
			if err := fn(frame[logbuf.HeaderLength:], pos+int64(logbuf.Align(len(frame), logbuf.FrameAlignment))); err != nil {
				ferr = err
				return err
			}
			return nil
		})
		switch {
		case ferr != nil:
			return ferr
		case errors.Is(err, io.EOF):
			s.done = true
		case err != nil:
			s.err = fmt.Errorf("cluster: replay of recording %d at %d: %w", s.id, s.rp.Position(), err)
		case s.rp.Position() == before:
			s.done = true
		}
	}
	return s.err
}

// Poll implements stream.FragmentSource.
func (s *replaySource) Poll(h stream.FragmentHandler, limit int) int {
	n := 0
	for n < limit && !s.done && s.err == nil {
		before := s.rp.Position()
		_, err := s.rp.Poll(func(pos int64, frame []byte) error {
			if n >= limit {
				return errStopPoll
			}
			payload := frame[logbuf.HeaderLength:]
			h(payload, 0, len(payload), pos+int64(logbuf.Align(len(frame), logbuf.FrameAlignment)))
			n++
			return nil
		})
		switch {
		case errors.Is(err, errStopPoll):
			return n
		case errors.Is(err, io.EOF):
			s.done = true
		case err != nil:
			s.err = fmt.Errorf("cluster: replay of recording %d at %d: %w", s.id, s.rp.Position(), err)
		case s.rp.Position() == before:
			s.done = true
		}
	}
	return n
}

// Err is the replay's error, if any.
func (s *replaySource) Err() error { return s.err }

// Close ends the replay.
func (s *replaySource) Close() error { return s.rp.Close() }
