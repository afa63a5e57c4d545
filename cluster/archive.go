package cluster

import (
	"errors"
	"fmt"
	"io"
	"sync"

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
// archive syncs no block, so for those three the node has the archive make
// the recording durable (archive.Recording.SyncTo, nodeRecording.sync)
// before going on.
type nodeArchive struct {
	a     *archive.Archive
	level archive.SyncLevel
	// catalogRepaired: repairCatalog changed the catalog before it opened.
	catalogRepaired bool
}

// segmentCut is what a crash repair cut from a segment: the bytes from
// offset (trailing zeros left out).
type segmentCut struct {
	segment string
	offset  int64
	data    []byte
}

// recorded tells whether the node's recording.log holds entries: a
// catalog that names no recording may then be what a crash left only when
// nothing refers to a recording. cut gets the bytes a crash repair cuts
// from a torn segment tail, before they are cut.
func openArchive(fsys vfs.FS, dir string, opts Options, nowMs func() int64, recorded bool, scans *archive.ScanMemo, cut func(segmentCut)) (*nodeArchive, error) {
	// The node owns its archive: an archive mark file left behind by a
	// crashed node belongs to no live archive, so it is marked stopped
	// (activity -1, as a clean stop leaves it) before the archive opens
	// and checks it.
	// A torn mark file is recreated by Open.
	if err := archive.MarkStopped(fsys, dir); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	na := &nodeArchive{}
	a, err := archive.Open(fsys, dir, archive.Options{
		KeepCut: func(segment string, offset int64, data []byte) error {
			cut(segmentCut{segment, offset, data})
			return nil
		},
		// The plan check's scans of the last segments of recordings a
		// crash left active: the recovery settles them without reading
		// them again.
		ScanMemo:         scans,
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
		// The level-0 policy for the log and the stop-the-world
		// snapshots (pauseless snapshot recordings sync each record
		// call instead: StartRecording's syncEach). A segment is made
		// durable once the recording has moved past it, so that a crash
		// can only lose the tail of the last segment (which the
		// archive's recovery cuts off) and never leave a hole in an
		// earlier one. That sync runs in the duty cycle; so that it
		// never has a whole segment of dirty pages to flush (tens of ms
		// for 128 MiB), every bgSyncEvery bytes of the current segment
		// are synced in the background meanwhile.
		SyncOnRollOver:      true,
		BackgroundSyncEvery: bgSyncEvery,
		// Automatic retention's two-phase delete (0: the archive's
		// default, 60 s).
		DeleteDelay: opts.Retention.DeleteDelay,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: archive: %w", err)
	}
	na.a, na.level, na.catalogRepaired = a, opts.FileSyncLevel, a.CatalogRepaired()
	return na, nil
}

// bgSyncEvery is how much of a level-0 recording's current segment may be
// written before a background sync of it starts
// (archive.Options.BackgroundSyncEvery).
const bgSyncEvery = 2 << 20

// Descriptor implements recordinglog.Recordings.
func (na *nodeArchive) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	return na.a.Descriptor(id)
}

// Close closes the archive; no recording may be in use.
func (na *nodeArchive) Close() error { return na.a.Close() }

// nodeRecording is a recording of one of the node's log buffers.
type nodeRecording struct {
	mu   sync.Mutex // one goroutine drives the recording at a time
	na   *nodeArchive
	rec  *archive.Recording
	log  *logbuf.Log
	img  *logbuf.Image // the recorder's reader of log
	desc archive.RecordingDescriptor
	// blocks and syncs count the archive's block writes (one sync each
	// at sync level >= 1): the group commits of the log.
	blocks, syncs int64
}

func (na *nodeArchive) newRecording(rec *archive.Recording, log *logbuf.Log, img *logbuf.Image) (*nodeRecording, error) {
	d, err := na.a.Descriptor(rec.ID())
	if err != nil {
		return nil, err
	}
	return &nodeRecording{na: na, rec: rec, log: log, img: img, desc: d}, nil
}

// StartRecording starts recording log from its tail. sparse gives its
// segments their length without preallocating them (snapshots: a
// recording much shorter than a segment takes only what it writes).
// syncEach: at sync level 0, sync what each record call wrote
// (archive.Source.SyncEachRecord: the pauseless snapshot recordings, which
// must be durable before recording.log names them anyway, synced as they
// are written instead of a segment's worth of dirty pages flushed at once,
// which stalls the log's writes on the same disk for tens of ms).
func (na *nodeArchive) StartRecording(log *logbuf.Log, channel, original string, sparse, syncEach bool) (*nodeRecording, error) {
	img := log.ImageAt(log.TailPosition())
	rec, err := na.a.StartRecording(archive.Source{Log: log, Image: img, Channel: channel, OriginalChannel: original,
		SourceIdentity: "aeron:ipc", SparseSegments: sparse, SyncEachRecord: syncEach})
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

// DurablePosition is the position up to which the data is synced whatever
// the level (the archive's Recording.DurablePosition).
func (r *nodeRecording) DurablePosition() int64 { return r.rec.DurablePosition() }

// record writes the committed frames up to limit, and at sync level 0 the
// archive applies the node's level-0 policy (openArchive). With try, it
// does nothing when another goroutine is driving the recording.
func (r *nodeRecording) record(limit int64, try bool) error {
	if try {
		if !r.mu.TryLock() {
			return nil
		}
	} else {
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	before := r.rec.Blocks()
	_, err := r.rec.Record(limit)
	n := r.rec.Blocks() - before
	r.blocks += n
	if r.na.level > 0 {
		r.syncs += n
	}
	return err
}

// sync makes the recording's files durable up to the recorded position,
// whatever the level: every segment written since the durable position,
// and the directory.
func (r *nodeRecording) sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncLocked()
}

func (r *nodeRecording) syncLocked() error {
	_, err := r.rec.SyncTo(r.rec.Position())
	return err
}

// syncTo makes the recording durable up to pos (at least) without taking
// the recording's mutex, so it may run on another goroutine while the
// owner goes on recording (archive.Recording.SyncTo). It does nothing at
// level >= 1 or while pos is not yet recorded.
func (r *nodeRecording) syncTo(pos int64) error {
	_, err := r.rec.SyncTo(pos)
	return err
}

// stop ends the recording: everything committed up to limit is recorded,
// synced (at level 0 too), and the stop position goes into the catalog.
func (r *nodeRecording) stop(limit int64) error {
	if err := r.record(limit, false); err != nil {
		r.abandon()
		return err
	}
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
