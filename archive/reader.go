package archive

import (
	"errors"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// RecordingReader reads the frames of a recording in [from, to) straight
// from its segment files, read-only: it needs no open Archive, so it
// writes no mark file and can read the directory of a stopped node, or a
// copy. It is the archive's one reader of recorded frames: Archive.Replay
// is built on it, and so are the node's log scan, its snapshot loaders and
// the command-line tools.
//
// Each frame is checked where it is read: its place (term offset, term id,
// stream id), its type (DATA or PAD), a length that keeps it inside its
// term, and, when the recording carries checksums (ChecksumMode), its
// FrameChecksum. A problem stops the reader with an error (Err) that
// satisfies errors.Is(err, ErrCorrupt) and names the recording, the
// position, the segment file and the offset in it. Padding frames are
// skipped unless IncludePadding was called.
//
// It reads at most 1 MiB of a segment at once (never across a term) and
// allocates its buffer once. The recording must not change under the reader in [from, to): a
// stopped recording, or the part of an active one already recorded.
type RecordingReader struct {
	fs       vfs.FS
	dir      string
	d        RecordingDescriptor
	pos, to  int64
	whole    bool // to is the stop position: a frame running past it is damage
	pad      bool // deliver padding frames
	buf      []byte
	bufPos   int64 // position of buf[0]
	bufEnd   int64
	err      error
	file     vfs.File
	fileBase int64
	sums     ChecksumMode
	frame    []byte // the frame at pos, found by peek and not yet consumed
	frameLen int64  // its aligned length; 0: none
	reads    int    // reads from the files so far
}

// readChunk is the most a reader reads from a segment at once. It is at
// least the longest data frame, so a data frame always fits.
const readChunk = 1 << 20

// OpenRecordingReader returns a reader of recording d, whose segment files
// are in dir, over [from, to); to < 0 means d's stop position. from must
// be a frame boundary at or after the start position (the error satisfies
// errors.Is(err, ErrInvalidPosition) otherwise). Frames are delivered while
// they end at or before to; when to is the stop position, a frame running
// past it is damage (ErrCorrupt); when to is below it and falls inside a
// frame, the reader ends before that frame (Position tells where).
func OpenRecordingReader(fsys vfs.FS, dir string, d RecordingDescriptor, from, to int64) (*RecordingReader, error) {
	if to < 0 {
		to = d.StopPosition
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return nil, fmt.Errorf("archive: recording %d: %w", d.RecordingID, err)
	}
	if from < d.StartPosition || to < from || from&(FrameAlignment-1) != 0 {
		return nil, fmt.Errorf("archive: read of recording %d: %w: range [%d, %d) outside [%d, %d]", d.RecordingID, ErrInvalidPosition, from, to, d.StartPosition, d.StopPosition)
	}
	r, err := newRecordingReader(fsys, dir, d, from, to)
	if err != nil {
		return nil, err
	}
	r.whole = d.StopPosition != NullPosition && to == d.StopPosition
	if err := r.checkBoundary(from); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// newRecordingReader returns a reader from from to to, unchecked.
func newRecordingReader(fsys vfs.FS, dir string, d RecordingDescriptor, from, to int64) (*RecordingReader, error) {
	sums, err := RecordingChecksums(fsys, dir, d)
	if err != nil {
		return nil, err
	}
	return &RecordingReader{fs: fsys, dir: dir, d: d, pos: from, to: to, fileBase: -1, sums: sums}, nil
}

// IncludePadding makes Next deliver padding frames too (Type FrameTypePad,
// an empty payload), for tools that show a recording's frame structure.
func (r *RecordingReader) IncludePadding() { r.pad = true }

// Close closes the open segment file.
func (r *RecordingReader) Close() error {
	if r.file != nil {
		err := r.file.Close()
		r.file, r.fileBase = nil, -1
		return err
	}
	return nil
}

// Err is the first error the reader met.
func (r *RecordingReader) Err() error { return r.err }

// Position is the position after the last frame read.
func (r *RecordingReader) Position() int64 { return r.pos }

// segment returns the segment file name and base of pos.
func (r *RecordingReader) segment(pos int64) (string, int64) {
	base := SegmentFileBasePosition(r.d.StartPosition, pos, r.d.TermBufferLength, r.d.SegmentFileLength)
	return SegmentFileName(r.d.RecordingID, base), base
}

// fill reads from at, up to at+readChunk, the end of at's term and to.
func (r *RecordingReader) fill(at int64) error {
	name, base := r.segment(at)
	if base != r.fileBase {
		r.Close()
		f, err := r.fs.Open(r.fs.Join(r.dir, name))
		if err != nil {
			return err
		}
		r.file, r.fileBase = f, base
	}
	termLen := int64(r.d.TermBufferLength)
	end := min(r.to, at-(at&(termLen-1))+termLen, at+readChunk)
	n := int(end - at)
	if r.buf == nil {
		r.buf = make([]byte, min(readChunk, termLen)) // a read never crosses a term
	}
	r.buf = r.buf[:n]
	if m, err := r.file.ReadAt(r.buf, at-base); m < n {
		if err == nil || errors.Is(err, io.EOF) {
			return fmt.Errorf("segment %s ends before position %d (stop position %d): %w", name, end, r.d.StopPosition, ErrCorrupt)
		}
		return err
	}
	r.bufPos, r.bufEnd = at, end
	r.reads++
	return nil
}

// checkFrame checks the header of the frame at pos and returns its
// aligned length.
func (r *RecordingReader) checkFrame(h FrameHeader, pos int64) (int64, error) {
	termLength := int64(r.d.TermBufferLength)
	termOffset := pos & (termLength - 1)
	termID := logbuf.ComputeTermID(pos, uint8(log2(termLength)), r.d.InitialTermID)
	switch {
	case h.FrameLength < FrameHeaderLength:
		return 0, fmt.Errorf("frame length %d (a hole or a torn frame before the recorded position)", h.FrameLength)
	case h.TermOffset != int32(termOffset) || h.TermID != termID || h.StreamID != r.d.StreamID:
		return 0, fmt.Errorf("header has term offset %d, term id %d, stream %d; want %d, %d, %d",
			h.TermOffset, h.TermID, h.StreamID, termOffset, termID, r.d.StreamID)
	case h.Type != FrameTypePad && h.Type != FrameTypeData:
		return 0, fmt.Errorf("frame type %d", h.Type)
	case h.Type == FrameTypeData && h.FrameLength > MaxFrameLength:
		return 0, fmt.Errorf("data frame length %d is above the maximum %d", h.FrameLength, MaxFrameLength)
	}
	aligned := AlignedFrameLength(h.FrameLength)
	if termOffset+aligned > termLength {
		return 0, fmt.Errorf("frame of %d bytes crosses the term end", h.FrameLength)
	}
	return aligned, nil
}

// corrupt records a damaged frame at pos.
func (r *RecordingReader) corrupt(pos int64, reason string) {
	name, base := r.segment(pos)
	r.err = fmt.Errorf("archive: read of recording %d: %w: frame at position %d (%s offset %d): %s",
		r.d.RecordingID, ErrCorrupt, pos, name, pos-base, reason)
}

// peek finds the frame at pos (r.frame, r.frameLen) without consuming it,
// and reports whether there is one. It skips padding unless r.pad. It
// reads from the files only when the frame is not in the buffer, and then
// only if mayRead.
func (r *RecordingReader) peek(mayRead bool) bool {
	if r.frameLen > 0 {
		return true
	}
	for r.err == nil && r.pos < r.to {
		if r.pos < r.bufPos || r.pos+FrameHeaderLength > r.bufEnd {
			if r.pos+FrameHeaderLength > r.to {
				return r.endInside()
			}
			if !mayRead {
				return false
			}
			if err := r.fill(r.pos); err != nil {
				r.err = fmt.Errorf("archive: read of recording %d at %d: %w", r.d.RecordingID, r.pos, err)
				return false
			}
			mayRead = false
		}
		b := r.buf[r.pos-r.bufPos:]
		h := DecodeFrameHeader(b)
		alen, err := r.checkFrame(h, r.pos)
		if err != nil {
			r.corrupt(r.pos, err.Error())
			return false
		}
		if r.pos+alen > r.to {
			return r.endInside()
		}
		if h.Type == FrameTypePad {
			if !r.pad {
				r.pos += alen
				continue
			}
			r.frame, r.frameLen = b[:FrameHeaderLength], alen
			return true
		}
		if alen > int64(len(b)) {
			// The frame is cut by the buffer's end: read it whole.
			if !mayRead {
				return false
			}
			if err := r.fill(r.pos); err != nil {
				r.err = fmt.Errorf("archive: read of recording %d at %d: %w", r.d.RecordingID, r.pos, err)
				return false
			}
			mayRead = false
			continue
		}
		frame := b[:h.FrameLength]
		if reason := r.sums.Check(h, frame[FrameHeaderLength:]); reason != "" {
			r.corrupt(r.pos, reason)
			return false
		}
		r.frame, r.frameLen = frame, alen
		return true
	}
	return false
}

// endInside ends the read at pos, where to falls inside a frame: damage
// when to is the stop position, the end of the range otherwise.
func (r *RecordingReader) endInside() bool {
	if r.whole {
		r.corrupt(r.pos, fmt.Sprintf("runs past the stop position %d", r.to))
	} else {
		r.to = r.pos
	}
	return false
}

// consume moves past the frame peek found.
func (r *RecordingReader) consume() {
	r.pos += r.frameLen
	r.frame, r.frameLen = nil, 0
}

// Next returns the next frame's header and payload (valid until the next
// call) and the position after it, or ok false at the end or on an error
// (see Err).
func (r *RecordingReader) Next() (h FrameHeader, payload []byte, end int64, ok bool) {
	// peek reads the files at most once a call: it stops, with no error
	// and before to, when the frame after a skipped padding frame or the
	// rest of a cut frame needs a second read. Next reads until it has a
	// frame, an error or the end.
	for !r.peek(true) {
		if r.err != nil || r.pos >= r.to {
			return h, nil, 0, false
		}
	}
	h = DecodeFrameHeader(r.frame)
	payload = r.frame[FrameHeaderLength:]
	r.consume()
	return h, payload, r.pos, true
}

// checkBoundary walks the frames of position's term, from the term start
// (or the recording start), and fails unless one starts at position. It
// leaves the reader at position.
func (r *RecordingReader) checkBoundary(position int64) error {
	termMask := int64(r.d.TermBufferLength) - 1
	pos := max(r.d.StartPosition, position&^termMask)
	for pos < position {
		if pos < r.bufPos || pos+FrameHeaderLength > r.bufEnd {
			saved := r.to
			r.to = position
			err := r.fill(pos)
			r.to = saved
			if err != nil {
				return fmt.Errorf("archive: read of recording %d: %w", r.d.RecordingID, err)
			}
		}
		if pos+FrameHeaderLength > r.bufEnd {
			break
		}
		aligned, err := r.checkFrame(DecodeFrameHeader(r.buf[pos-r.bufPos:]), pos)
		if err != nil {
			return fmt.Errorf("%w: %d: recording %d at %d: %w", ErrInvalidPosition, position, r.d.RecordingID, pos, corruptf("%s", err))
		}
		pos += aligned
	}
	r.bufPos, r.bufEnd = 0, 0
	if pos != position {
		return fmt.Errorf("%w: %d is inside the frame that ends at %d", ErrInvalidPosition, position, pos)
	}
	return nil
}
