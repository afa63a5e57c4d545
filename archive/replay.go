package archive

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/matchlog/matchlog/internal/vfs"
)

// FrameHandler receives one replayed data frame: its stream position (where
// its header starts) and its bytes, header and payload (frame length bytes,
// without alignment padding), exactly as they were published. frame is
// valid only during the call. An error stops the replay at this frame,
// which is delivered again by the next Poll.
type FrameHandler func(position int64, frame []byte) error

// Replay reads a recording's frames back from its segment files, from a
// frame-aligned position to a limit, across segment boundaries, with a
// RecordingReader (which checks every frame). Padding frames are skipped,
// as an image's poll skips them. It is driven by Poll; the Archive keeps
// track of it (Archive.Replays) until Close.
type Replay struct {
	a      *Archive
	id     int64
	from   int64
	limit  int64 // NullPosition: follow the active recording
	rd     *RecordingReader
	closed bool
}

// ReplayInfo describes an open replay.
type ReplayInfo struct {
	RecordingID int64
	From        int64 // position the replay started at
	Position    int64 // next position to deliver
	Limit       int64 // NullPosition while it follows an active recording
}

// StartReplay opens a replay of recording id from position up to limit.
// position must be a frame boundary in [start, stop], or in [start,
// recorded position] for an active recording; otherwise the error
// satisfies errors.Is(err, ErrInvalidPosition). limit NullPosition means
// the stop position, or, for an active recording, to follow it: the replay
// then delivers frames as they are recorded and ends when the recording has
// stopped and everything is delivered. Otherwise limit must not be below
// position nor, for a stopped recording, past its stop; frames are
// delivered while they end at or before limit.
func (a *Archive) StartReplay(id, position, limit int64) (*Replay, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return nil, err
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return nil, err
	}
	rec, active := a.recordings[id]
	end := d.StopPosition
	if active {
		end = rec.pos.Load()
	} else if end == NullPosition {
		return nil, fmt.Errorf("archive: recording %d has no stop position; reopen the archive to settle it", id)
	}
	switch {
	case position < d.StartPosition || position > end:
		return nil, fmt.Errorf("%w: %d is outside [%d, %d] of recording %d", ErrInvalidPosition, position, d.StartPosition, end, id)
	case position&(FrameAlignment-1) != 0:
		return nil, fmt.Errorf("%w: %d is not a multiple of %d", ErrInvalidPosition, position, FrameAlignment)
	case limit != NullPosition && limit < position:
		return nil, fmt.Errorf("%w: limit %d is before position %d", ErrInvalidPosition, limit, position)
	case limit != NullPosition && !active && limit > end:
		return nil, fmt.Errorf("%w: limit %d is after the stop position %d of recording %d", ErrInvalidPosition, limit, end, id)
	}
	if limit == NullPosition && !active {
		limit = end
	}
	rd, err := newRecordingReader(a.fs, a.dir, d, position, position)
	if err != nil {
		return nil, err
	}
	if err := rd.checkBoundary(position); err != nil {
		rd.Close()
		return nil, err
	}
	rp := &Replay{a: a, id: id, from: position, limit: limit, rd: rd}
	a.replays = append(a.replays, rp)
	return rp, nil
}

// Replay replays recording id from position to limit into handler and
// returns the position reached. limit NullPosition means the stop position,
// or the recorded position at the time of the call for an active recording.
func (a *Archive) Replay(id, position, limit int64, handler FrameHandler) (int64, error) {
	if limit == NullPosition {
		if r := a.Recording(id); r != nil {
			limit = r.pos.Load()
		}
	}
	rp, err := a.StartReplay(id, position, limit)
	if err != nil {
		return position, err
	}
	for {
		n, err := rp.Poll(handler)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rp.rd.pos, errors.Join(err, rp.Close())
		}
		if n == 0 && rp.rd.pos == rp.current() {
			break
		}
	}
	return rp.rd.pos, rp.Close()
}

// Replays lists the open replays, the ranges being read.
func (a *Archive) Replays() []ReplayInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ReplayInfo, 0, len(a.replays))
	for _, rp := range a.replays {
		out = append(out, ReplayInfo{RecordingID: rp.id, From: rp.from, Position: rp.rd.pos, Limit: rp.limit})
	}
	return out
}

// Position is the next position the replay delivers.
func (rp *Replay) Position() int64 { return rp.rd.pos }

// current is the position the replay may read up to now.
func (rp *Replay) current() int64 {
	rp.a.mu.Lock()
	defer rp.a.mu.Unlock()
	if rec, ok := rp.a.recordings[rp.id]; ok {
		if rp.limit == NullPosition {
			return rec.pos.Load()
		}
		return min(rp.limit, rec.pos.Load())
	}
	if rp.limit == NullPosition {
		// The followed recording has stopped: its stop is the limit.
		if d, err := rp.a.cat.Descriptor(rp.id); err == nil && d.StopPosition != NullPosition {
			rp.limit = d.StopPosition
		} else {
			return rp.rd.pos
		}
	}
	return rp.limit
}

// Poll delivers the whole frames of at most one read (1 MiB, never across
// a term boundary) and returns how many data frames it delivered. It
// returns io.EOF once the limit is reached, and 0 with a nil error when it
// has to wait for an active recording.
func (rp *Replay) Poll(handler FrameHandler) (int, error) {
	if rp.closed {
		return 0, errors.New("archive: replay closed")
	}
	rd := rp.rd
	cur := rp.current()
	if rp.limit != NullPosition && rd.pos >= rp.limit {
		return 0, io.EOF
	}
	if rd.pos >= cur {
		return 0, nil
	}
	rd.to = cur
	frames := 0
	reads := rd.reads
	for rd.peek(rd.reads == reads) {
		if err := handler(rd.pos, rd.frame); err != nil {
			return frames, err // the frame is delivered again by the next Poll
		}
		rd.consume()
		frames++
	}
	if rd.err != nil {
		return frames, rd.err
	}
	if rd.to < cur && rp.limit != NullPosition && cur == rp.limit {
		// The limit falls inside this frame: the replay ends here.
		rp.limit = rd.pos
	}
	return frames, nil
}

// Close ends the replay and releases its file.
func (rp *Replay) Close() error {
	if rp.closed {
		return nil
	}
	rp.closed = true
	rp.a.mu.Lock()
	defer rp.a.mu.Unlock()
	rp.a.replays = slices.DeleteFunc(rp.a.replays, func(x *Replay) bool { return x == rp })
	return rp.rd.Close()
}

func log2(v int64) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}

func readFull(f vfs.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("archive: read %s at %d: %w", f.Name(), off, err)
	}
	return nil
}
