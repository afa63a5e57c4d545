package aeronhost

import (
	"fmt"
	"time"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// imageSource adapts the snapshot replay image aeron-go hands to OnStart
// to stream.FragmentSource.
//
// The image is a live replay from the archive: a poll may find nothing
// yet although the recording goes on. Our services read a snapshot as a
// complete recording (an empty poll ends it), so Poll waits, idling, until
// at least one fragment arrives, the image is closed or at end of stream,
// the host is stopping, or nothing has arrived for timeout.
//
// It also watches for SnapshotMarker messages in the service's section to
// learn the snapshot's leadership term, which aeron-go does not pass on.
type imageSource struct {
	img     aeron.Image
	idle    func() error
	timeout time.Duration
	now     func() time.Time

	h       stream.FragmentHandler
	fn      func(*atomic.Buffer, int32, int32, *logbuffer.Header)
	err     error // first fragment that could not be read
	termID  int64 // leadership term of the first BEGIN marker seen
	sawMark bool
}

func newImageSource(img aeron.Image, idle func() error, timeout time.Duration) *imageSource {
	s := &imageSource{img: img, idle: idle, timeout: timeout, now: time.Now}
	s.fn = s.onFragment
	return s
}

// Poll implements stream.FragmentSource.
func (s *imageSource) Poll(h stream.FragmentHandler, limit int) int {
	if s.err != nil || limit <= 0 {
		return 0
	}
	s.h = h
	defer func() { s.h = nil }()
	var start time.Time
	for {
		n := s.img.Poll(s.fn, limit)
		if n > 0 || s.err != nil || s.img.IsClosed() || s.img.IsEndOfStream() {
			return n
		}
		if start.IsZero() {
			start = s.now()
		} else if s.now().Sub(start) >= s.timeout {
			return 0
		}
		if err := s.idle(); err != nil {
			return 0
		}
	}
}

func (s *imageSource) onFragment(buf *atomic.Buffer, off, n int32, hdr *logbuffer.Header) {
	if s.err != nil {
		return
	}
	b, ok := bytesOf(buf, off, n)
	if !ok {
		s.err = fmt.Errorf("aeronhost: snapshot fragment at offset %d length %d is outside its buffer", off, n)
		return
	}
	pos := s.img.Position()
	if hdr != nil {
		pos = hdr.Position()
	}
	if !s.sawMark {
		var d aeronclustersbe.SnapshotMarkerDecoder
		if d.WrapWithHeader(b, 0) == nil && d.Mark() == aeronclustersbe.SnapshotMarkBEGIN {
			s.termID, s.sawMark = d.LeadershipTermId(), true
		}
	}
	s.h(b, 0, len(b), pos)
}
