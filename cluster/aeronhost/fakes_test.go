package aeronhost

import (
	"encoding/binary"
	"unsafe"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/idlestrategy"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	"github.com/lirm/aeron-go/aeron/logbuffer/term"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/lirm/aeron-go/cluster/codecs"
)

// countingIdler counts idles.
type countingIdler struct{ n int }

func (c *countingIdler) Idle(int) { c.n++ }

// fakeCluster is aeron-go's Cluster with scripted answers.
type fakeCluster struct {
	pos, time     int64
	role          acluster.Role
	unit          codecs.ClusterTimeUnitEnum
	idler         countingIdler
	timerRefusals int // ScheduleTimer/CancelTimer answer false this many times first
	scheduled     map[int64]int64
	cancelled     []int64
}

var _ acluster.Cluster = (*fakeCluster)(nil)

func newFakeCluster() *fakeCluster {
	return &fakeCluster{unit: codecs.ClusterTimeUnit.NANOS, role: acluster.Follower, scheduled: map[int64]int64{}}
}

func (f *fakeCluster) LogPosition() int64                       { return f.pos }
func (f *fakeCluster) MemberId() int32                          { return 0 }
func (f *fakeCluster) Role() acluster.Role                      { return f.role }
func (f *fakeCluster) Time() int64                              { return f.time }
func (f *fakeCluster) TimeUnit() codecs.ClusterTimeUnitEnum     { return f.unit }
func (f *fakeCluster) IdleStrategy() idlestrategy.Idler         { return &f.idler }
func (f *fakeCluster) Offer(*atomic.Buffer, int32, int32) int64 { return aeron.NotConnected }
func (f *fakeCluster) ScheduleTimer(id, deadline int64) bool {
	if f.timerRefusals > 0 {
		f.timerRefusals--
		return false
	}
	f.scheduled[id] = deadline
	return true
}
func (f *fakeCluster) CancelTimer(id int64) bool {
	if f.timerRefusals > 0 {
		f.timerRefusals--
		return false
	}
	delete(f.scheduled, id)
	f.cancelled = append(f.cancelled, id)
	return true
}

// fakeSession is aeron-go's ClientSession recording its egress.
type fakeSession struct {
	id        int64
	stream    int32
	channel   string
	principal []byte
	results   []int64 // scripted Offer results, then success
	stuck     bool    // back-pressured for ever (after the scripted results)
	offers    int
	egress    [][]byte
}

var _ acluster.ClientSession = (*fakeSession)(nil)

func (s *fakeSession) Id() int64                { return s.id }
func (s *fakeSession) ResponseStreamId() int32  { return s.stream }
func (s *fakeSession) ResponseChannel() string  { return s.channel }
func (s *fakeSession) EncodedPrincipal() []byte { return s.principal }
func (s *fakeSession) Close()                   {}
func (s *fakeSession) Offer(b *atomic.Buffer, off, n int32, _ term.ReservedValueSupplier) int64 {
	s.offers++
	if len(s.results) > 0 {
		r := s.results[0]
		s.results = s.results[1:]
		if r < 0 {
			return r
		}
	} else if s.stuck {
		return aeron.BackPressured
	}
	s.egress = append(s.egress, b.GetBytesArray(off, n))
	return int64(len(s.egress)) * 64
}

// Aeron data frame header fields.
const (
	hdrLen        = 32
	offFrameLen   = 0
	offType       = 6
	offTermID     = 20
	typePad       = 0
	typeData      = 1
	bitsToShift   = 24 // a 16 MiB term
	fakeTermBytes = 1 << bitsToShift
)

func align32(n int) int { return (n + 31) &^ 31 }

// fakePub is the claim side of an aeron-go publication over one Go term
// buffer; results are scripted answers returned before each real one.
type fakePub struct {
	term    []byte
	tail    int
	results []int64
	calls   int
}

func newFakePub() *fakePub { return &fakePub{term: make([]byte, 4<<20)} }

func (p *fakePub) scripted() (int64, bool) {
	p.calls++
	if len(p.results) == 0 {
		return 0, false
	}
	r := p.results[0]
	p.results = p.results[1:]
	return r, true
}

func (p *fakePub) TryClaim(n int32, c *logbuffer.Claim) int64 {
	if r, ok := p.scripted(); ok {
		return r
	}
	frame := hdrLen + int(n)
	if p.tail+align32(frame) > len(p.term) {
		return aeron.MaxPositionExceeded
	}
	off := p.tail
	binary.LittleEndian.PutUint16(p.term[off+offType:], typeData)
	c.Wrap(atomic.MakeBuffer(p.term), int32(off), int32(frame))
	p.tail += align32(frame)
	return int64(p.tail)
}

func (p *fakePub) Offer(b *atomic.Buffer, off, n int32, _ term.ReservedValueSupplier) int64 {
	if r, ok := p.scripted(); ok {
		return r
	}
	frame := hdrLen + int(n)
	if p.tail+align32(frame) > len(p.term) {
		return aeron.MaxPositionExceeded
	}
	o := p.tail
	copy(p.term[o+hdrLen:], b.GetBytesArray(off, n))
	binary.LittleEndian.PutUint16(p.term[o+offType:], typeData)
	binary.LittleEndian.PutUint32(p.term[o+offFrameLen:], uint32(frame))
	p.tail += align32(frame)
	return int64(p.tail)
}

// frames returns the committed data payloads, in order (aborted claims are
// padding and skipped).
func (p *fakePub) frames() [][]byte {
	var out [][]byte
	for off := 0; off < p.tail; {
		fl := int(binary.LittleEndian.Uint32(p.term[off+offFrameLen:]))
		if fl == 0 {
			break // an uncommitted claim
		}
		if binary.LittleEndian.Uint16(p.term[off+offType:]) == typeData {
			out = append(out, append([]byte(nil), p.term[off+hdrLen:off+fl]...))
		}
		off += align32(fl)
	}
	return out
}

// fakeImage is an aeron.Image over frames laid out in one term, from
// position base, as a replay of a recording would deliver them.
type fakeImage struct {
	term       []byte
	offs       []int
	next       int
	emptyPolls int // Poll finds nothing this many times first
	polls      int
	closed     bool
	hdr        logbuffer.Header
}

var _ aeron.Image = (*fakeImage)(nil)

// newFakeImage lays payloads out as frames starting at term offset start.
func newFakeImage(start int, payloads [][]byte) *fakeImage {
	size := start
	for _, p := range payloads {
		size += align32(hdrLen + len(p))
	}
	img := &fakeImage{term: make([]byte, size+hdrLen)}
	off := start
	for _, p := range payloads {
		binary.LittleEndian.PutUint32(img.term[off+offFrameLen:], uint32(hdrLen+len(p)))
		binary.LittleEndian.PutUint16(img.term[off+offType:], typeData)
		binary.LittleEndian.PutUint32(img.term[off+offTermID:], 0)
		copy(img.term[off+hdrLen:], p)
		img.offs = append(img.offs, off)
		off += align32(hdrLen + len(p))
	}
	img.hdr.Wrap(unsafe.Pointer(&img.term[0]), int32(len(img.term)))
	img.hdr.SetInitialTermID(0).SetPositionBitsToShift(bitsToShift)
	return img
}

func (m *fakeImage) Poll(h term.FragmentHandler, limit int) int {
	m.polls++
	if m.emptyPolls > 0 {
		m.emptyPolls--
		return 0
	}
	buf := atomic.MakeBuffer(m.term)
	n := 0
	for n < limit && m.next < len(m.offs) {
		off := m.offs[m.next]
		m.next++
		fl := int32(binary.LittleEndian.Uint32(m.term[off+offFrameLen:]))
		m.hdr.SetOffset(int32(off))
		h(buf, int32(off)+hdrLen, fl-hdrLen, &m.hdr)
		n++
	}
	return n
}

func (m *fakeImage) Position() int64 {
	if m.next == 0 {
		if len(m.offs) > 0 {
			return int64(m.offs[0])
		}
		return 0
	}
	off := m.offs[m.next-1]
	return int64(off + align32(int(binary.LittleEndian.Uint32(m.term[off:]))))
}

func (m *fakeImage) IsClosed() bool                                         { return m.closed }
func (m *fakeImage) IsEndOfStream() bool                                    { return false }
func (m *fakeImage) SessionID() int32                                       { return 1 }
func (m *fakeImage) CorrelationID() int64                                   { return 1 }
func (m *fakeImage) SubscriptionRegistrationID() int64                      { return 1 }
func (m *fakeImage) TermBufferLength() int32                                { return fakeTermBytes }
func (m *fakeImage) ActiveTransportCount() int32                            { return 1 }
func (m *fakeImage) Close() error                                           { m.closed = true; return nil }
func (m *fakeImage) ControlledPoll(term.ControlledFragmentHandler, int) int { return 0 }
func (m *fakeImage) BoundedPoll(h term.FragmentHandler, _ int64, limit int) int {
	return m.Poll(h, limit)
}
