package cluster

import (
	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/internal/vfs"
)

// segReader reads a stopped recording's segment files directly, without
// opening the archive (which would write its mark file): the read-only
// inspection functions (ScanLog, ServiceSnapshot) use it. It is
// archive.RecordingReader, which checks every frame, as a
// snapshot.FragmentSource.

// segFrame is one data frame replayed from a recording.
type segFrame struct {
	Header   logbuf.FrameHeader
	Payload  []byte // valid until the next call
	Position int64  // position after the frame
}

// segReader replays the data frames of a recording in [from, to).
type segReader struct {
	*archive.RecordingReader
}

// newSegReader returns a reader of the recording d in dir.
func newSegReader(fsys vfs.FS, dir string, d archive.RecordingDescriptor, from, to int64) (*segReader, error) {
	r, err := archive.OpenRecordingReader(fsys, dir, d, from, to)
	if err != nil {
		return nil, err
	}
	return &segReader{r}, nil
}

// Next returns the next data frame, or false at the end (check Err).
func (r *segReader) Next(fr *segFrame) bool {
	h, payload, end, ok := r.RecordingReader.Next()
	if ok {
		fr.Header, fr.Payload, fr.Position = h, payload, end
	}
	return ok
}

// Poll implements stream.FragmentSource.
func (r *segReader) Poll(handler stream.FragmentHandler, limit int) int {
	var fr segFrame
	n := 0
	for n < limit && r.Next(&fr) {
		handler(fr.Payload, 0, len(fr.Payload), fr.Position)
		n++
	}
	return n
}
