package logbuf

import (
	"math"
	"testing"
)

func TestAbortBecomesPadding(t *testing.T) {
	l := mustNew(t, 64<<10, 1408, 0)
	p := l.Publication()
	img := l.Image()
	offer(t, p, 10, 0)
	c, _, err := p.TryClaim(500)
	if err != nil {
		t.Fatal(err)
	}
	fill(c.Buffer(), 99)
	c.Abort()
	h := ReadFrameHeader(l.Term(0)[c.FrameOffset():])
	if h.Type != TypePad || h.FrameLength != 532 {
		t.Fatalf("aborted frame %+v", h)
	}
	offer(t, p, 20, 1)
	frags := collect(img, 10)
	if len(frags) != 2 || !check(frags[0].payload, 0) || !check(frags[1].payload, 1) {
		t.Fatalf("read %d fragments", len(frags))
	}
	if img.Position() != p.Position() {
		t.Fatalf("image %d publication %d", img.Position(), p.Position())
	}
}

func TestUncommittedNotRead(t *testing.T) {
	l := mustNew(t, 64<<10, 1408, 0)
	p := l.Publication()
	img := l.Image()
	a, _, _ := p.TryClaim(100)
	b, _, _ := p.TryClaim(200)
	fill(a.Buffer(), 0)
	fill(b.Buffer(), 1)
	b.Commit()
	for _, poll := range []func() int{
		func() int { return img.Poll(func([]byte, int, int, Header) { t.Fatal("read uncommitted") }, 10) },
		func() int {
			return img.ControlledPoll(func([]byte, int, int, Header) Action { t.Fatal("read uncommitted"); return Continue }, 10)
		},
		func() int { return img.Drain(10) },
	} {
		if n := poll(); n != 0 || img.Position() != 0 {
			t.Fatalf("read %d, position %d", n, img.Position())
		}
	}
	a.Commit()
	frags := collect(img, 10)
	if len(frags) != 2 || !check(frags[0].payload, 0) || !check(frags[1].payload, 1) {
		t.Fatalf("read %d", len(frags))
	}
	// A claim at the very start of a new term is not read either.
	p2 := unlimited(p)
	for 64<<10-p2.Position() >= 1408 {
		offer(t, p2, 1000, 0)
	}
	img.Drain(math.MaxInt)
	c, _, _ := p2.TryClaim(1376) // pads and rotates
	c2, _, _ := p2.TryClaim(1376)
	if n := img.Drain(10); n != 0 {
		t.Fatalf("drained %d uncommitted", n)
	}
	if img.Position() != 64<<10 {
		t.Fatalf("image did not pass the padding: %d", img.Position())
	}
	c2.Commit()
	if n := img.Drain(10); n != 0 {
		t.Fatalf("drained %d", n)
	}
	c.Commit()
	if n := img.Drain(10); n != 2 || img.Position() != p2.Position() {
		t.Fatalf("drained %d to %d", n, img.Position())
	}
}

func TestPollFragmentLimit(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 0)
	p := unlimited(l.Publication())
	img := l.Image()
	const total = 110 // 1.8 terms: term 0 is zeroed only once term 2 is entered
	for i := range total {
		offer(t, p, 1000, uint64(i))
	}
	var read uint64
	for _, limit := range []int{0, 1, 2, 7, 64} {
		n := img.Poll(func(buf []byte, off, length int, hdr Header) {
			if !check(buf[off:off+length], read) {
				t.Fatalf("payload %d", read)
			}
			read++
		}, limit)
		if n != limit {
			t.Fatalf("limit %d: read %d", limit, n)
		}
	}
	if n := img.Drain(1000); n != total-int(read) || img.Position() != p.Position() {
		t.Fatalf("drained %d to %d", n, img.Position())
	}
	if n := img.Poll(func([]byte, int, int, Header) {}, 10); n != 0 {
		t.Fatal(n)
	}
}

func TestControlledPoll(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 0)
	p := unlimited(l.Publication())
	img := l.Image()
	const total = 110 // 1.8 terms
	var ends []int64
	for i := range total {
		ends = append(ends, offer(t, p, 1000, uint64(i)))
	}
	next := uint64(0)
	expect := func(buf []byte, off, length int, hdr Header) {
		t.Helper()
		if !check(buf[off:off+length], next) || hdr.Position() != ends[next] {
			t.Fatalf("fragment %d at %d", next, hdr.Position())
		}
	}
	// Abort on the first fragment: nothing consumed, redelivered next time.
	n := img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
		expect(buf, off, length, hdr)
		return Abort
	}, 10)
	if n != 0 || img.Position() != 0 {
		t.Fatalf("abort: %d at %d", n, img.Position())
	}
	// Continue two, then abort the third.
	calls := 0
	n = img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
		expect(buf, off, length, hdr)
		calls++
		if calls == 3 {
			return Abort
		}
		next++
		return Continue
	}, 10)
	if n != 2 || img.Position() != ends[1] {
		t.Fatalf("continue/abort: %d at %d", n, img.Position())
	}
	// Break after one.
	n = img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
		expect(buf, off, length, hdr)
		next++
		return Break
	}, 10)
	if n != 1 || img.Position() != ends[2] {
		t.Fatalf("break: %d at %d", n, img.Position())
	}
	// Commit publishes the position during the poll.
	n = img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
		expect(buf, off, length, hdr)
		if img.Position() != ends[next-1] {
			t.Fatalf("commit: position %d during fragment %d", img.Position(), next)
		}
		next++
		return Commit
	}, 5)
	if n != 5 || img.Position() != ends[7] {
		t.Fatalf("commit: %d at %d", n, img.Position())
	}
	// The rest, across a rotation and its padding.
	for next < total {
		if img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
			expect(buf, off, length, hdr)
			next++
			return Continue
		}, 33) == 0 {
			t.Fatalf("stuck at %d", next)
		}
	}
	if img.Position() != p.Position() {
		t.Fatalf("image %d publication %d", img.Position(), p.Position())
	}
}

// TestReusedPartitionIsClean checks that the reader, standing at the start
// of a partition the writer is about to reuse, sees no frames from the term
// that partition held before.
func TestReusedPartitionIsClean(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 0)
	p := l.Publication()
	img := l.Image()
	var seq, read uint64
	for p.Position() < 3*T-1408 { // terms 0, 1 and most of 2
		p.SetPositionLimit(img.Position() + T/2)
		c, pos, err := p.TryClaim(1376)
		if err != nil {
			t.Fatal(err)
		}
		if pos == BackPressured {
			img.Poll(func(buf []byte, off, length int, _ Header) {
				if !check(buf[off:off+length], read) {
					t.Fatalf("payload %d", read)
				}
				read++
			}, math.MaxInt)
			continue
		}
		fill(c.Buffer(), seq)
		c.Commit()
		seq++
	}
	img.Drain(math.MaxInt)
	// Term 2 ends with padding; rotation into term 3 (partition 0).
	p.SetPositionLimit(img.Position() + T/2)
	c, _, err := p.TryClaim(1376)
	if err != nil {
		t.Fatal(err)
	}
	// Drain passes the padding and stands at position 3T, partition 0,
	// which still held term 0 until it was zeroed when term 2 was entered.
	if n := img.Drain(math.MaxInt); n != 0 || img.Position() != 3*T {
		t.Fatalf("drained %d to %d", n, img.Position())
	}
	for i, b := range l.Term(0)[Align(1376+32, 32):] {
		if b != 0 {
			t.Fatalf("partition 0 byte %d not zeroed", i)
		}
	}
	c.Commit()
	if n := img.Drain(math.MaxInt); n != 1 {
		t.Fatalf("drained %d", n)
	}
}
