package logbuf

import (
	"math"
	"testing"
)

func TestHotPathsDoNotAllocate(t *testing.T) {
	const T = 1 << 20
	l := mustNew(t, T, 1408, 0)
	p := l.Publication()
	img := l.Image()
	handler := func(buf []byte, off, length int, hdr Header) { _ = hdr.Position() }
	controlled := func(buf []byte, off, length int, hdr Header) Action { return Continue }
	var payload [100]byte
	allocs := testing.AllocsPerRun(1000, func() {
		p.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
		c, pos, err := p.TryClaim(1376)
		if err != nil || pos < 0 {
			t.Fatal(pos, err)
		}
		c.Buffer()[0] = 1
		c.Commit()
		if _, err := p.Offer(payload[:]); err != nil {
			t.Fatal(err)
		}
		c, _, _ = p.TryClaim(10)
		c.Abort()
		img.Poll(handler, 1)
		img.ControlledPoll(controlled, 1)
		img.Drain(math.MaxInt)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per claim/commit/offer/poll", allocs)
	}
}
