package archive

import (
	"errors"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/internal/vfs"
)

// RecordingReader reads the DATA frames of a stopped recording in [from,
// to) straight from its segment files, read-only: unlike Archive.Replay it
// needs no open Archive, so it writes no mark file and can read the
// directory of a stopped node, or a copy. Each frame is checked as Replay
// checks it: its place (term offset, stream id), its length, and, when the
// recording carries checksums (ChecksumMode), its FrameChecksum. A problem
// stops the reader with an error (Err) that satisfies
// errors.Is(err, ErrCorrupt) and names the recording, the position, the
// segment file and the offset in it. Padding frames are skipped.
type RecordingReader struct {
	fs       vfs.FS
	dir      string
	d        RecordingDescriptor
	pos, to  int64
	buf      []byte
	bufPos   int64 // position of buf[0]
	bufEnd   int64
	err      error
	file     vfs.File
	fileBase int64
	sums     ChecksumMode
}

// OpenRecordingReader returns a reader of recording d, whose segment files
// are in dir, over [from, to); to < 0 means d's stop position. from must
// be a frame boundary at or after the start position.
func OpenRecordingReader(fsys vfs.FS, dir string, d RecordingDescriptor, from, to int64) (*RecordingReader, error) {
	if to < 0 {
		to = d.StopPosition
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return nil, fmt.Errorf("archive: recording %d: %w", d.RecordingID, err)
	}
	if from < d.StartPosition || to < from || from&(FrameAlignment-1) != 0 {
		return nil, fmt.Errorf("archive: read of recording %d: range [%d, %d) outside [%d, %d]", d.RecordingID, from, to, d.StartPosition, d.StopPosition)
	}
	sums, err := RecordingChecksums(fsys, dir, d)
	if err != nil {
		return nil, err
	}
	return &RecordingReader{fs: fsys, dir: dir, d: d, pos: from, to: to, fileBase: -1, sums: sums}, nil
}

// Close closes the open segment file.
func (r *RecordingReader) Close() error {
	if r.file != nil {
		err := r.file.Close()
		r.file = nil
		return err
	}
	return nil
}

// Err is the first error the reader met.
func (r *RecordingReader) Err() error { return r.err }

// Position is the position after the last frame read.
func (r *RecordingReader) Position() int64 { return r.pos }

// fill loads the rest of pos's term (up to to) into buf.
func (r *RecordingReader) fill() error {
	d := &r.d
	termLen := int64(d.TermBufferLength)
	base := SegmentFileBasePosition(d.StartPosition, r.pos, d.TermBufferLength, d.SegmentFileLength)
	if base != r.fileBase {
		r.Close()
		f, err := r.fs.Open(r.fs.Join(r.dir, SegmentFileName(d.RecordingID, base)))
		if err != nil {
			return err
		}
		r.file, r.fileBase = f, base
	}
	end := min(r.to, r.pos-(r.pos&(termLen-1))+termLen)
	n := int(end - r.pos)
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := r.file.ReadAt(r.buf, r.pos-base); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("segment %s ends before position %d (stop position %d): %w",
				SegmentFileName(d.RecordingID, base), end, d.StopPosition, ErrCorrupt)
		}
		return err
	}
	r.bufPos, r.bufEnd = r.pos, end
	return nil
}

// Next returns the next DATA frame's header and payload (valid until the
// next call) and the position after it, or ok false at the end or on an
// error (see Err).
func (r *RecordingReader) Next() (h FrameHeader, payload []byte, end int64, ok bool) {
	for r.err == nil && r.pos < r.to {
		if r.pos >= r.bufEnd || r.pos < r.bufPos {
			if err := r.fill(); err != nil {
				r.err = fmt.Errorf("archive: read of recording %d at %d: %w", r.d.RecordingID, r.pos, err)
				return h, nil, 0, false
			}
		}
		b := r.buf[r.pos-r.bufPos:]
		if len(b) < FrameHeaderLength {
			r.err = fmt.Errorf("archive: read of recording %d: %w: short frame at %d", r.d.RecordingID, ErrCorrupt, r.pos)
			return h, nil, 0, false
		}
		h = DecodeFrameHeader(b)
		termLen := int64(r.d.TermBufferLength)
		if h.FrameLength < FrameHeaderLength || int64(h.TermOffset) != r.pos&(termLen-1) || h.StreamID != r.d.StreamID {
			r.err = fmt.Errorf("archive: read of recording %d: %w: bad frame at position %d (length %d, term offset %d)",
				r.d.RecordingID, ErrCorrupt, r.pos, h.FrameLength, h.TermOffset)
			return h, nil, 0, false
		}
		alen := AlignedFrameLength(h.FrameLength)
		if h.Type == FrameTypePad {
			r.pos += alen
			continue
		}
		if alen > int64(len(b)) {
			r.err = fmt.Errorf("archive: read of recording %d: %w: frame at %d runs past %d", r.d.RecordingID, ErrCorrupt, r.pos, r.to)
			return h, nil, 0, false
		}
		payload = b[FrameHeaderLength:h.FrameLength]
		if reason := r.sums.Check(h, payload); reason != "" {
			r.err = fmt.Errorf("archive: read of recording %d: %w: frame at position %d (%s offset %d): %s",
				r.d.RecordingID, ErrCorrupt, r.pos, SegmentFileName(r.d.RecordingID, r.fileBase), r.pos-r.fileBase, reason)
			return h, nil, 0, false
		}
		r.pos += alen
		return h, payload, r.pos, true
	}
	return h, nil, 0, false
}
