package archive

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// FrameHandler receives one replayed data frame: its stream position (where
// its header starts) and its bytes, header and payload (frame length bytes,
// without alignment padding), exactly as they were published. frame is
// valid only during the call. An error stops the replay at this frame,
// which is delivered again by the next Poll.
type FrameHandler func(position int64, frame []byte) error

// replayChunk is the most a replay reads from a segment at once. It is at
// least the longest frame, so a frame always fits.
const replayChunk = 1 << 20

// Replay reads a recording's frames back from its segment files, from a
// frame-aligned position to a limit, across segment boundaries. Padding
// frames are skipped, as an image's poll skips them. It is driven by Poll;
// the Archive keeps track of it (Archive.Replays) until Close.
type Replay struct {
	a      *Archive
	id     int64
	d      RecordingDescriptor
	from   int64
	pos    int64
	limit  int64 // NullPosition: follow the active recording
	buf    []byte
	f      vfs.File
	fBase  int64
	closed bool
	sums   ChecksumMode
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
	sums, err := RecordingChecksums(a.fs, a.dir, d)
	if err != nil {
		return nil, err
	}
	rp := &Replay{a: a, id: id, d: d, from: position, pos: position, limit: limit, fBase: -1,
		buf: make([]byte, replayChunk), sums: sums}
	if err := rp.checkBoundary(position); err != nil {
		rp.closeFile()
		return nil, err
	}
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
			return rp.pos, errors.Join(err, rp.Close())
		}
		if n == 0 && rp.pos == rp.current() {
			break
		}
	}
	return rp.pos, rp.Close()
}

// Replays lists the open replays, the ranges being read.
func (a *Archive) Replays() []ReplayInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ReplayInfo, 0, len(a.replays))
	for _, rp := range a.replays {
		out = append(out, ReplayInfo{RecordingID: rp.id, From: rp.from, Position: rp.pos, Limit: rp.limit})
	}
	return out
}

// Position is the next position the replay delivers.
func (rp *Replay) Position() int64 { return rp.pos }

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
			return rp.pos
		}
	}
	return rp.limit
}

// Poll delivers the whole frames of at most one chunk (1 MiB, never across
// a segment boundary) and returns how many data frames it delivered. It
// returns io.EOF once the limit is reached, and 0 with a nil error when it
// has to wait for an active recording.
func (rp *Replay) Poll(handler FrameHandler) (int, error) {
	if rp.closed {
		return 0, errors.New("archive: replay closed")
	}
	cur := rp.current()
	if rp.limit != NullPosition && rp.pos >= rp.limit {
		return 0, io.EOF
	}
	if rp.pos >= cur {
		return 0, nil
	}
	base, err := rp.open(rp.pos)
	if err != nil {
		return 0, err
	}
	segEnd := base + int64(rp.d.SegmentFileLength)
	readEnd := min(cur, segEnd, rp.pos+replayChunk)
	n := readEnd - rp.pos
	buf := rp.buf[:n]
	if err := readFull(rp.f, buf, rp.pos-base); err != nil {
		return 0, err
	}
	frames := 0
	var off int64
	for off+FrameHeaderLength <= n {
		pos := rp.pos
		frameLength, aligned, isPad, err := rp.frameAt(buf[off:], pos)
		if err != nil {
			return frames, err
		}
		if pos+aligned > cur {
			if rp.limit != NullPosition && cur == rp.limit {
				// The limit falls inside this frame: the replay ends here.
				rp.limit = pos
				return frames, nil
			}
			break
		}
		if !isPad {
			if off+aligned > n {
				break // read it whole next time
			}
			frame := buf[off : off+int64(frameLength)]
			if reason := rp.sums.Check(DecodeFrameHeader(frame), frame[FrameHeaderLength:]); reason != "" {
				return frames, corruptf("recording %d at position %d (%s offset %d): %s",
					rp.id, pos, SegmentFileName(rp.id, base), pos-base, reason)
			}
			if err := handler(pos, buf[off:off+int64(frameLength)]); err != nil {
				return frames, err
			}
			frames++
		}
		rp.pos = pos + aligned
		off += aligned
	}
	return frames, nil
}

// frameAt checks the header at the start of b, which must belong at stream
// position pos.
func (rp *Replay) frameAt(b []byte, pos int64) (int32, int64, bool, error) {
	h := DecodeFrameHeader(b)
	termLength := int64(rp.d.TermBufferLength)
	termOffset := pos & (termLength - 1)
	termID := logbuf.ComputeTermID(pos, uint8(log2(termLength)), rp.d.InitialTermID)
	switch {
	case h.FrameLength < FrameHeaderLength:
		return 0, 0, false, corruptf("archive: recording %d at %d: frame length %d (a hole or a torn frame before the recorded position)", rp.id, pos, h.FrameLength)
	case h.TermOffset != int32(termOffset) || h.TermID != termID || h.StreamID != rp.d.StreamID:
		return 0, 0, false, corruptf("archive: recording %d at %d: header has term offset %d, term id %d, stream %d; want %d, %d, %d",
			rp.id, pos, h.TermOffset, h.TermID, h.StreamID, termOffset, termID, rp.d.StreamID)
	case h.Type != FrameTypePad && h.Type != FrameTypeData:
		return 0, 0, false, corruptf("archive: recording %d at %d: frame type %d", rp.id, pos, h.Type)
	}
	aligned := AlignedFrameLength(h.FrameLength)
	if termOffset+aligned > termLength {
		return 0, 0, false, corruptf("archive: recording %d at %d: frame of %d bytes crosses the term end", rp.id, pos, h.FrameLength)
	}
	return h.FrameLength, aligned, h.Type == FrameTypePad, nil
}

// checkBoundary walks the frames of position's term, from the term start
// (or the recording start), and fails unless one starts at position.
func (rp *Replay) checkBoundary(position int64) error {
	termMask := int64(rp.d.TermBufferLength) - 1
	pos := max(rp.d.StartPosition, position&^termMask)
	for pos < position {
		base, err := rp.open(pos)
		if err != nil {
			return err
		}
		chunkEnd := min(pos+replayChunk, position)
		buf := rp.buf[:chunkEnd-pos]
		if err := readFull(rp.f, buf, pos-base); err != nil {
			return err
		}
		start := pos
		for pos < chunkEnd {
			_, aligned, _, err := rp.frameAt(buf[pos-start:], pos)
			if err != nil {
				return fmt.Errorf("%w: %d: %w", ErrInvalidPosition, position, err)
			}
			pos += aligned
		}
	}
	if pos != position {
		return fmt.Errorf("%w: %d is inside the frame that ends at %d", ErrInvalidPosition, position, pos)
	}
	return nil
}

// open opens the segment holding pos and returns its base.
func (rp *Replay) open(pos int64) (int64, error) {
	base := SegmentFileBasePosition(rp.d.StartPosition, pos, rp.d.TermBufferLength, rp.d.SegmentFileLength)
	if rp.f != nil && rp.fBase == base {
		return base, nil
	}
	rp.closeFile()
	f, err := rp.a.fs.Open(rp.a.fs.Join(rp.a.dir, SegmentFileName(rp.id, base)))
	if err != nil {
		return 0, fmt.Errorf("archive: replay recording %d: %w", rp.id, err)
	}
	rp.f, rp.fBase = f, base
	return base, nil
}

func (rp *Replay) closeFile() error {
	if rp.f == nil {
		return nil
	}
	err := rp.f.Close()
	rp.f, rp.fBase = nil, -1
	return err
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
	return rp.closeFile()
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

func log2(v int64) int {
	n := 0
	for v > 1 {
		v >>= 1
		n++
	}
	return n
}
