package logbuf

import (
	"errors"
	"math"
	"testing"
)

func TestClaimWritesHeader(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 1000)
	p := l.Publication()
	img := l.Image()
	var want int64
	for i, n := range []int{0, 1, 31, 32, 33, 100, 1376} {
		c, pos, err := p.TryClaim(n)
		if err != nil {
			t.Fatal(err)
		}
		off := int(want)
		if c.FrameOffset() != off || c.Length() != n || len(c.Buffer()) != n {
			t.Fatalf("claim %d: offset %d length %d", n, c.FrameOffset(), c.Length())
		}
		h := ReadFrameHeader(l.Term(0)[off:])
		if h.FrameLength != -int32(n+32) {
			t.Fatalf("uncommitted frame length %d", h.FrameLength)
		}
		fill(c.Buffer(), uint64(i))
		c.SetReservedValue(int64(i) * 7)
		c.Commit()
		want += int64(Align(n+32, 32))
		if pos != want || p.Position() != want || pos%FrameAlignment != 0 {
			t.Fatalf("position %d, want %d", pos, want)
		}
		h = ReadFrameHeader(l.Term(0)[off:])
		wantHdr := FrameHeader{FrameLength: int32(n + 32), Flags: 0xC0, Type: TypeData,
			TermOffset: int32(off), SessionID: 42, StreamID: 1001, TermID: 1000, ReservedValue: int64(i) * 7}
		if h != wantHdr {
			t.Fatalf("header %+v, want %+v", h, wantHdr)
		}
		if l.RawTail(0) != PackTail(1000, int32(want)) {
			t.Fatalf("tail %x", l.RawTail(0))
		}
	}
	frags := collect(img, 100)
	if len(frags) != 7 {
		t.Fatalf("read %d fragments", len(frags))
	}
	for i, f := range frags {
		if !check(f.payload, uint64(i)) || f.hdr.ReservedValue != int64(i)*7 {
			t.Fatalf("fragment %d: %+v", i, f.hdr)
		}
	}
	if img.Position() != want {
		t.Fatalf("image position %d", img.Position())
	}
}

func TestClaimTooLong(t *testing.T) {
	l := mustNew(t, 64<<10, 1408, 0)
	p := l.Publication()
	if _, _, err := p.TryClaim(1377); !errors.Is(err, ErrClaimTooLong) {
		t.Fatalf("err %v", err)
	}
	if _, err := p.Offer(make([]byte, 1377)); !errors.Is(err, ErrClaimTooLong) {
		t.Fatalf("err %v", err)
	}
	if _, _, err := p.TryClaim(-1); !errors.Is(err, ErrClaimTooLong) {
		t.Fatalf("err %v", err)
	}
	if _, _, err := p.TryClaim(1376); err != nil {
		t.Fatal(err)
	}
}

// TestPaddingAtTermEnd fills a term up to a gap of every size near the end,
// then claims messages of every size around the gap: a message that fits
// stays in the term, one that does not turns the gap into one padding frame
// and moves to offset 0 of the next term.
func TestPaddingAtTermEnd(t *testing.T) {
	const T = 64 << 10
	const mtu = 1408
	for gap := 0; gap <= 3*mtu; gap += 32 {
		for _, n := range []int{0, 1, gap - 64, gap - 33, gap - 32, gap - 31, gap - 1, gap, gap + 1, mtu - 32} {
			if n < 0 || n > mtu-32 {
				continue
			}
			l := mustNew(t, T, mtu, 5)
			p := unlimited(l.Publication())
			img := l.Image()
			// Fill to T-gap with max-size frames, then one filler frame.
			seq := uint64(0)
			for int(p.Position())+mtu <= T-gap {
				offer(t, p, mtu-32, seq)
				seq++
			}
			if rest := T - gap - int(p.Position()); rest > 0 {
				offer(t, p, rest-32, seq)
				seq++
			}
			if int(p.Position()) != T-gap {
				t.Fatalf("gap %d: filled to %d", gap, p.Position())
			}
			before := seq
			pos := offer(t, p, n, seq)
			seq++
			aligned := Align(n+32, 32)
			fits := aligned <= gap
			if fits {
				if pos != int64(T-gap+aligned) {
					t.Fatalf("gap %d n %d: pos %d", gap, n, pos)
				}
			} else {
				if pos != int64(T+aligned) {
					t.Fatalf("gap %d n %d: pos %d, want %d", gap, n, pos, T+aligned)
				}
				if gap > 0 {
					pad := ReadFrameHeader(l.Term(0)[T-gap:])
					want := FrameHeader{FrameLength: int32(gap), Flags: 0xC0, Type: TypePad,
						TermOffset: int32(T - gap), SessionID: 42, StreamID: 1001, TermID: 5}
					if pad != want {
						t.Fatalf("gap %d n %d: pad %+v", gap, n, pad)
					}
				}
				h := ReadFrameHeader(l.Term(1))
				if h.TermID != 6 || h.TermOffset != 0 || h.FrameLength != int32(n+32) {
					t.Fatalf("gap %d n %d: next term header %+v", gap, n, h)
				}
				if l.ActiveTermCount() != 1 || l.RawTail(1) != PackTail(6, int32(aligned)) {
					t.Fatalf("gap %d n %d: count %d tail1 %x", gap, n, l.ActiveTermCount(), l.RawTail(1))
				}
				if raw := l.RawTail(0); TermIDFromTail(raw) != 5 || TermOffsetFromTail(raw, T) != T {
					t.Fatalf("gap %d n %d: tail0 %x", gap, n, raw)
				}
			}
			frags := collect(img, math.MaxInt)
			if uint64(len(frags)) != seq {
				t.Fatalf("gap %d n %d: read %d of %d", gap, n, len(frags), seq)
			}
			for i, f := range frags {
				if !check(f.payload, uint64(i)) {
					t.Fatalf("gap %d n %d: payload %d", gap, n, i)
				}
			}
			if last := frags[before]; last.position != pos || len(last.payload) != n {
				t.Fatalf("gap %d n %d: last at %d len %d", gap, n, last.position, len(last.payload))
			}
			if img.Position() != pos {
				t.Fatalf("image at %d, want %d", img.Position(), pos)
			}
		}
	}
}

func TestBackPressure(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 0)
	p := l.Publication()
	if p.PositionLimit() != int64(T/2) {
		t.Fatalf("default limit %d", p.PositionLimit())
	}
	p.SetPositionLimit(1000)
	var n int
	for {
		c, pos, err := p.TryClaim(100)
		if err != nil {
			t.Fatal(err)
		}
		if pos == BackPressured {
			break
		}
		c.Commit()
		n++
	}
	// Claims start below 1000: 0,160,...,960; the last ends past the limit.
	if n != 7 || p.Position() != 7*160 {
		t.Fatalf("claimed %d, position %d", n, p.Position())
	}
	if pos, err := p.Offer([]byte("x")); pos != BackPressured || err != nil {
		t.Fatalf("offer: %d %v", pos, err)
	}
	if p.Position() != 7*160 || l.RawTail(0) != PackTail(0, 7*160) {
		t.Fatal("back-pressured claim moved the tail")
	}
	p.SetPositionLimit(2000)
	if pos, err := p.Offer([]byte("x")); pos != 7*160+64 || err != nil {
		t.Fatalf("offer: %d %v", pos, err)
	}
}

func TestClosed(t *testing.T) {
	l := mustNew(t, 64<<10, 1408, 0)
	p := l.Publication()
	offer(t, p, 10, 0)
	c, _, err := p.TryClaim(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !p.IsClosed() || l.EndOfStreamPosition() != 128 {
		t.Fatalf("closed %v eos %d", p.IsClosed(), l.EndOfStreamPosition())
	}
	c.Commit() // an outstanding claim may still be committed
	if _, _, err := p.TryClaim(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
	if _, err := p.Offer(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("err %v", err)
	}
	if n := l.Image().Poll(func([]byte, int, int, Header) {}, 10); n != 0 {
		t.Fatal(n)
	}
	if n := l.ImageAt(0).Poll(func([]byte, int, int, Header) {}, 10); n != 2 {
		t.Fatal(n)
	}
}

func TestMaxPositionExceeded(t *testing.T) {
	const T = 64 << 10
	last := (int64(T) << 31) - T // start of the last addressable term
	l, err := NewAt(T, 1408, math.MaxInt32-3, 1, 2, last+T-128)
	if err != nil {
		t.Fatal(err)
	}
	p := unlimited(l.Publication())
	img := l.Image()
	if pos := offer(t, p, 0, 1); pos != last+T-96 {
		t.Fatalf("pos %d", pos)
	}
	if pos := offer(t, p, 64, 2); pos != last+T {
		t.Fatalf("pos %d", pos)
	}
	if _, _, err := p.TryClaim(0); !errors.Is(err, ErrMaxPositionExceeded) {
		t.Fatalf("err %v", err)
	}
	frags := collect(img, 10)
	if len(frags) != 2 || frags[1].position != last+T {
		t.Fatalf("%d frags", len(frags))
	}
	// Term ids wrapped: count 2^31-1 from MaxInt32-3.
	initial, count := int32(math.MaxInt32-3), int32(math.MaxInt32)
	if id := frags[0].hdr.TermID; id != initial+count || id != -5 {
		t.Fatalf("term id %d", id)
	}
}

// TestRotationManyTerms writes random-size messages through 40 terms with
// the reader polling as it goes, and checks every payload, position and the
// metadata as terms rotate.
func TestRotationManyTerms(t *testing.T) {
	const T = 64 << 10
	for _, initial := range []int32{0, math.MaxInt32 - 20, -9} {
		l := mustNew(t, T, 1408, initial)
		p := l.Publication()
		img := l.Image()
		var seq, read uint64
		rng := uint64(initial) | 1
		var lastPos int64
		for p.Position() < 40*T {
			rng = rng*6364136223846793005 + 1442695040888963407
			n := int(rng>>33) % 1377
			p.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
			c, pos, err := p.TryClaim(n)
			if err != nil {
				t.Fatal(err)
			}
			if pos == BackPressured {
				got := img.Poll(func(buf []byte, off, length int, hdr Header) {
					if !check(buf[off:off+length], read) {
						t.Fatalf("payload %d", read)
					}
					if hdr.Position() <= lastPos || hdr.SessionID() != 42 || hdr.StreamID() != 1001 {
						t.Fatalf("frame %d position %d after %d", read, hdr.Position(), lastPos)
					}
					lastPos = hdr.Position()
					read++
				}, 7)
				if got == 0 {
					t.Fatal("back-pressured with nothing to read")
				}
				continue
			}
			fill(c.Buffer(), seq)
			c.Commit()
			seq++
			termCount := (pos - 1) / T
			if got := int64(l.ActiveTermCount()); got != termCount {
				t.Fatalf("active term count %d, want %d", got, termCount)
			}
			if raw := l.RawTail(int(termCount % 3)); TermIDFromTail(raw) != initial+int32(termCount) {
				t.Fatalf("tail term id %d", TermIDFromTail(raw))
			}
		}
		for read < seq {
			if img.Poll(func(buf []byte, off, length int, hdr Header) {
				if !check(buf[off:off+length], read) {
					t.Fatalf("payload %d", read)
				}
				read++
			}, 100) == 0 {
				t.Fatalf("stuck at %d of %d", read, seq)
			}
		}
		if img.Position() != p.Position() {
			t.Fatalf("image %d publication %d", img.Position(), p.Position())
		}
	}
}
