package cluster

import (
	"errors"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/snapshot"
)

// segReader reads a stopped recording's segment files directly, without
// opening the archive (which would write its mark file): the read-only
// inspection functions (ScanLog, ServiceSnapshot) use it.

// segFrame is one data frame replayed from a recording.
type segFrame struct {
	Header   logbuf.FrameHeader
	Payload  []byte // valid until the next call
	Position int64  // position after the frame
}

// segReader replays the data frames of a recording in [from, to).
type segReader struct {
	fs       vfs.FS
	dir      string
	d        archive.RecordingDescriptor
	pos, to  int64
	buf      []byte
	bufPos   int64 // position of buf[0]
	bufEnd   int64
	err      error
	file     vfs.File
	fileBase int64
	sums     archive.ChecksumMode
}

// newSegReader returns a reader of the recording d in dir.
func newSegReader(fsys vfs.FS, dir string, d archive.RecordingDescriptor, from, to int64) (*segReader, error) {
	if to < 0 {
		to = d.StopPosition
	}
	if from < d.StartPosition || to < from || from&31 != 0 {
		return nil, fmt.Errorf("cluster: replay of recording %d: range [%d, %d) outside [%d, %d]", d.RecordingID, from, to, d.StartPosition, d.StopPosition)
	}
	sums, err := archive.RecordingChecksums(fsys, dir, d)
	if err != nil {
		return nil, err
	}
	return &segReader{fs: fsys, dir: dir, d: d, pos: from, to: to, fileBase: -1, sums: sums}, nil
}

// Close closes the open segment.
func (r *segReader) Close() error {
	if r.file != nil {
		err := r.file.Close()
		r.file = nil
		return err
	}
	return nil
}

// Err is the first error the reader met.
func (r *segReader) Err() error { return r.err }

// Position is where the reader stands.
func (r *segReader) Position() int64 { return r.pos }

// fill loads the rest of pos's term (up to to) into buf.
func (r *segReader) fill() error {
	d := &r.d
	termLen := int64(d.TermBufferLength)
	base := archive.SegmentFileBasePosition(d.StartPosition, r.pos, d.TermBufferLength, d.SegmentFileLength)
	if base != r.fileBase {
		r.Close()
		f, err := r.fs.Open(r.fs.Join(r.dir, archive.SegmentFileName(d.RecordingID, base)))
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
				archive.SegmentFileName(d.RecordingID, base), end, d.StopPosition, archive.ErrCorrupt)
		}
		return err
	}
	r.bufPos, r.bufEnd = r.pos, end
	return nil
}

// Next returns the next data frame, or false at the end (check Err).
func (r *segReader) Next(fr *segFrame) bool {
	for r.err == nil && r.pos < r.to {
		if r.pos >= r.bufEnd || r.pos < r.bufPos {
			if err := r.fill(); err != nil {
				r.err = fmt.Errorf("cluster: replay of recording %d at %d: %w", r.d.RecordingID, r.pos, err)
				return false
			}
		}
		b := r.buf[r.pos-r.bufPos:]
		if len(b) < logbuf.HeaderLength {
			r.err = fmt.Errorf("cluster: replay of recording %d: short frame at %d", r.d.RecordingID, r.pos)
			return false
		}
		h := logbuf.ReadFrameHeader(b)
		termLen := int64(r.d.TermBufferLength)
		if h.FrameLength < logbuf.HeaderLength || int64(h.TermOffset) != r.pos&(termLen-1) || h.StreamID != r.d.StreamID {
			r.err = fmt.Errorf("cluster: replay of recording %d: %w: bad frame at position %d (length %d, term offset %d)",
				r.d.RecordingID, archive.ErrCorrupt, r.pos, h.FrameLength, h.TermOffset)
			return false
		}
		alen := int64(logbuf.Align(int(h.FrameLength), logbuf.FrameAlignment))
		if h.Type == logbuf.TypePad {
			r.pos += alen
			continue
		}
		if alen > int64(len(b)) {
			r.err = fmt.Errorf("cluster: replay of recording %d: %w: frame at %d runs past %d", r.d.RecordingID, archive.ErrCorrupt, r.pos, r.to)
			return false
		}
		if reason := r.sums.Check(h, b[logbuf.HeaderLength:h.FrameLength]); reason != "" {
			r.err = fmt.Errorf("cluster: replay of recording %d: %w: frame at position %d (%s offset %d): %s",
				r.d.RecordingID, archive.ErrCorrupt, r.pos, archive.SegmentFileName(r.d.RecordingID, r.fileBase), r.pos-r.fileBase, reason)
			return false
		}
		fr.Header = h
		fr.Payload = b[logbuf.HeaderLength:h.FrameLength]
		r.pos += alen
		fr.Position = r.pos
		return true
	}
	return false
}

// Poll implements snapshot.FragmentSource.
func (r *segReader) Poll(handler snapshot.FragmentHandler, limit int) int {
	var fr segFrame
	n := 0
	for n < limit && r.Next(&fr) {
		handler(fr.Payload, 0, len(fr.Payload), fr.Position)
		n++
	}
	return n
}
