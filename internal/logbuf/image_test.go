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

// TestStaleBytesNeverRead writes frames over partitions full of frames a
// reader would take: each time the reader has caught up, every 32-byte slot
// of every partition except the one at the tail gets a data frame header of
// positive length and a payload of 0x5a. Then frames of varied lengths go
// through TryClaim, TryClaimOverwrite and Offer, some aborted, some ending
// the term exactly, through a dozen rotations. The reader must get exactly
// the committed frames with zero reserved values and zero alignment gaps
// (an archive stores the gaps), and TryClaim's payloads must read as zeros
// where the writer did not write: nothing a partition
// held before the writer came to it is ever read.
func TestStaleBytesNeverRead(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 5)
	p := l.Publication()
	img := l.Image()
	type sent struct {
		n      int
		zeroed bool // TryClaim: only the first half written
	}
	var want []sent
	var read int
	poll := func() {
		img.Poll(func(buf []byte, off, length int, hdr Header) {
			if read >= len(want) {
				t.Fatalf("read a frame of %d bytes at %d past the %d committed", length, hdr.Position(), len(want))
			}
			w, b := want[read], buf[off:off+length]
			if length != w.n || hdr.Type() != TypeData || hdr.ReservedValue() != 0 {
				t.Fatalf("frame %d: length %d type %d reserved %d, want length %d", read, length, hdr.Type(), hdr.ReservedValue(), w.n)
			}
			if end := hdr.Offset() + int(hdr.FrameLength()); !allZero(buf[end : hdr.Offset()+Align(int(hdr.FrameLength()), FrameAlignment)]) {
				t.Fatalf("frame %d: alignment gap %x", read, buf[end:hdr.Offset()+Align(int(hdr.FrameLength()), FrameAlignment)])
			}
			if w.zeroed && (!check(b[:w.n/2], uint64(read)) || !allZero(b[w.n/2:])) || !w.zeroed && !check(b, uint64(read)) {
				t.Fatalf("frame %d (%d bytes, zeroed %v): payload %x", read, w.n, w.zeroed, b)
			}
			read++
		}, math.MaxInt)
	}
	rng := uint64(99)
	exact := 0
	for round := 0; round < 40; round++ {
		poll()
		if img.Position() != p.Position() {
			t.Fatalf("round %d: reader at %d, writer at %d", round, img.Position(), p.Position())
		}
		scribble(l, p.Position())
		for k := 0; k < 30; k++ {
			p.SetPositionLimit(img.Position() + T/2)
			rng = rng*6364136223846793005 + 1442695040888963407
			n := int(rng>>33) % 1377
			if room := T - ComputeTermOffset(p.Position(), T); k%7 == 6 && room >= HeaderLength && room <= 1408 {
				n = room - HeaderLength // the frame ends the term
				exact++
			}
			seq := uint64(len(want))
			var pos int64
			var err error
			var c Claim
			switch mode := (rng >> 20) % 3; mode {
			case 0:
				c, pos, err = p.TryClaim(n)
				if err == nil && pos >= 0 {
					if !allZero(c.Buffer()) {
						t.Fatalf("TryClaim's payload of %d bytes at %d is not zeroed", n, pos)
					}
					fill(c.Buffer()[:n/2], seq)
				}
			case 1:
				c, pos, err = p.TryClaimOverwrite(n)
				if err == nil && pos >= 0 {
					fill(c.Buffer(), seq)
				}
			default:
				b := make([]byte, n)
				fill(b, seq)
				if pos, err = p.Offer(b); err == nil && pos >= 0 {
					want = append(want, sent{n: n})
					continue
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if pos == BackPressured {
				poll()
				k--
				continue
			}
			if (rng>>40)%11 == 0 {
				c.Abort()
				continue
			}
			c.Commit()
			want = append(want, sent{n: n, zeroed: (rng>>20)%3 == 0})
		}
	}
	poll()
	if read != len(want) || img.Position() != p.Position() {
		t.Fatalf("read %d of %d frames; reader at %d, writer at %d", read, len(want), img.Position(), p.Position())
	}
	if terms := p.Position() / T; terms < 10 || exact < 3 {
		t.Fatalf("only %d terms and %d frames ending a term", terms, exact)
	}
}

// scribble writes a data frame header of length 64 at every 32-byte slot of
// every partition except the one at position tail, and 0x5a over the rest.
func scribble(l *Log, tail int64) {
	skipTerm, skipOff := IndexByPosition(tail, l.PositionBitsToShift()), ComputeTermOffset(tail, l.TermLength())
	for i := range PartitionCount {
		term := l.Term(i)
		for off := 0; off < len(term); off += HeaderLength {
			if i == skipTerm && off == skipOff {
				continue
			}
			slot := term[off : off+HeaderLength]
			for j := range slot {
				slot[j] = 0x5a
			}
			FrameHeader{FrameLength: 64, Version: CurrentVersion, Flags: FlagUnfragmented, Type: TypeData,
				TermOffset: int32(off), SessionID: l.SessionID(), StreamID: l.StreamID(), TermID: 1, ReservedValue: 0x5a5a5a5a5a5a5a5a}.Put(slot)
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
