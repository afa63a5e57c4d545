package logbuf

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestPositionRoundTrip(t *testing.T) {
	for _, termLength := range []int{MinTermLength, 1 << 20, 16 << 20, MaxTermLength} {
		shift := PositionBitsToShift(termLength)
		if 1<<shift != termLength {
			t.Fatalf("shift %d for %d", shift, termLength)
		}
		for _, initial := range []int32{0, 7, -5, math.MaxInt32 - 1, math.MaxInt32, math.MinInt32} {
			for _, termCount := range []int64{0, 1, 2, 3, 4, 1000, math.MaxInt32 - 1} {
				for _, off := range []int{0, 32, termLength / 2, termLength - 32} {
					termID := initial + int32(termCount) // wraps
					pos := ComputePosition(termID, off, shift, initial)
					if want := termCount*int64(termLength) + int64(off); pos != want {
						t.Fatalf("T=%d init=%d count=%d off=%d: position %d, want %d", termLength, initial, termCount, off, pos, want)
					}
					if got := ComputeTermID(pos, shift, initial); got != termID {
						t.Fatalf("termID %d, want %d", got, termID)
					}
					if got := ComputeTermOffset(pos, termLength); got != off {
						t.Fatalf("termOffset %d, want %d", got, off)
					}
					if got := IndexByPosition(pos, shift); got != int(termCount%3) {
						t.Fatalf("index %d", got)
					}
					if got := IndexByTerm(initial, termID); got != int(termCount%3) {
						t.Fatalf("index by term %d", got)
					}
					if got := ComputeTermBeginPosition(termID, shift, initial); got != termCount*int64(termLength) {
						t.Fatalf("term begin %d", got)
					}
				}
			}
		}
	}
}

func TestTermIDWrapsAroundMaxInt32(t *testing.T) {
	const initial = math.MaxInt32 - 1
	shift := PositionBitsToShift(MinTermLength)
	// Term count 2 is term id MinInt32.
	pos := ComputePosition(math.MinInt32, 64, shift, initial)
	if want := int64(2*MinTermLength + 64); pos != want {
		t.Fatalf("position %d, want %d", pos, want)
	}
	if id := ComputeTermID(pos, shift, initial); id != math.MinInt32 {
		t.Fatalf("term id %d", id)
	}
}

func TestPackTail(t *testing.T) {
	for _, id := range []int32{0, -1, math.MaxInt32, math.MinInt32, 12345} {
		for _, off := range []int32{0, 32, MinTermLength, MinTermLength + 4096} {
			raw := PackTail(id, off)
			if TermIDFromTail(raw) != id {
				t.Fatalf("term id %d from %x", TermIDFromTail(raw), raw)
			}
			if got := TermOffsetFromTail(raw, MinTermLength); got != min(int(off), MinTermLength) {
				t.Fatalf("offset %d", got)
			}
		}
	}
}

func TestAlign(t *testing.T) {
	for v, want := range map[int]int{0: 0, 1: 32, 31: 32, 32: 32, 33: 64, 1408: 1408, 1409: 1440} {
		if got := Align(v, FrameAlignment); got != want {
			t.Errorf("Align(%d) = %d, want %d", v, got, want)
		}
	}
}

func TestTermLengthLimits(t *testing.T) {
	for _, ok := range []int{64 << 10, 128 << 10, 16 << 20, 1 << 30} {
		if err := CheckTermLength(ok); err != nil {
			t.Errorf("%d: %v", ok, err)
		}
	}
	for _, bad := range []int{0, 32 << 10, 65535, 65537, 96 << 10, 2 << 30} {
		if err := CheckTermLength(bad); err == nil {
			t.Errorf("%d accepted", bad)
		}
	}
}

func TestMTULimits(t *testing.T) {
	for _, ok := range []int{64, 1408, 65504} {
		if err := CheckMTU(ok); err != nil {
			t.Errorf("%d: %v", ok, err)
		}
		l, err := New(1<<20, ok, 0, 1, 2)
		if err != nil {
			t.Fatalf("New with MTU %d: %v", ok, err)
		}
		if l.MaxPayloadLength() != ok-32 {
			t.Errorf("max payload %d", l.MaxPayloadLength())
		}
	}
	for _, bad := range []int{0, 32, 48, 1400, 65505, 65536, -32} {
		if err := CheckMTU(bad); err == nil {
			t.Errorf("%d accepted", bad)
		}
		if _, err := New(1<<20, bad, 0, 1, 2); err == nil {
			t.Errorf("New accepted MTU %d", bad)
		}
	}
	// MTU 65504 needs a term of at least 512 KiB (max message = T/8).
	if _, err := New(256<<10, 65504, 0, 1, 2); err == nil {
		t.Error("MTU above max message length accepted")
	}
	if _, err := New(512<<10, 65504, 0, 1, 2); err != nil {
		t.Error(err)
	}
}

func TestMaxMessageLength(t *testing.T) {
	for termLength, want := range map[int]int{
		64 << 10:  8 << 10,
		1 << 20:   128 << 10,
		128 << 20: 16 << 20,
		256 << 20: 16 << 20,
		1 << 30:   16 << 20,
	} {
		if got := ComputeMaxMessageLength(termLength); got != want {
			t.Errorf("T=%d: %d, want %d", termLength, got, want)
		}
	}
}

func TestFrameHeaderRoundTrip(t *testing.T) {
	h := FrameHeader{FrameLength: 100, Version: 0, Flags: FlagUnfragmented, Type: TypeData,
		TermOffset: 64, SessionID: -7, StreamID: 1001, TermID: math.MinInt32, ReservedValue: -3}
	var b [HeaderLength]byte
	h.Put(b[:])
	if got := ReadFrameHeader(b[:]); got != h {
		t.Fatalf("%+v != %+v", got, h)
	}
	if binary.LittleEndian.Uint32(b[16:]) != 1001 || b[5] != 0xC0 || b[6] != 1 {
		t.Fatalf("layout %x", b)
	}
}

func TestMetaDataLayout(t *testing.T) {
	const T = 64 << 10
	l, err := New(T, 1408, 77, 5, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Bytes()) != 3*T+4096 {
		t.Fatalf("log length %d", len(l.Bytes()))
	}
	m := l.MetaData()
	le := binary.LittleEndian
	for off, want := range map[int]uint32{264: 77, 268: 32, 272: 1408, 276: T, 280: 4096, 24: 0} {
		if got := le.Uint32(m[off:]); got != want {
			t.Errorf("metadata @%d = %d, want %d", off, got, want)
		}
	}
	wantTails := []int64{PackTail(77, 0), PackTail(77-2, 0), PackTail(77-1, 0)}
	for i, want := range wantTails {
		if got := int64(le.Uint64(m[8*i:])); got != want {
			t.Errorf("tail %d = %x, want %x", i, got, want)
		}
	}
	dh := ReadFrameHeader(m[320:])
	if dh != (FrameHeader{Flags: 0xC0, Type: TypeData, SessionID: 5, StreamID: 9, TermID: 77}) {
		t.Errorf("default header %+v", dh)
	}
	if l.EndOfStreamPosition() != math.MaxInt64 {
		t.Errorf("eos %d", l.EndOfStreamPosition())
	}
}

func TestNewAtMetaData(t *testing.T) {
	const T = 64 << 10
	start := int64(4*T + 96) // term count 4, partition 1
	l, err := NewAt(T, 1408, 10, 5, 9, start)
	if err != nil {
		t.Fatal(err)
	}
	if l.ActiveTermCount() != 4 {
		t.Fatalf("active term count %d", l.ActiveTermCount())
	}
	want := []int64{PackTail(13, 0), PackTail(14, 96), PackTail(12, 0)}
	for i := range want {
		if l.RawTail(i) != want[i] {
			t.Errorf("tail %d = %x, want %x", i, l.RawTail(i), want[i])
		}
	}
	if l.TailPosition() != start {
		t.Fatalf("tail position %d", l.TailPosition())
	}
	for _, bad := range []int64{-32, 33, int64(T) << 31} {
		if _, err := NewAt(T, 1408, 0, 0, 0, bad); err == nil {
			t.Errorf("start %d accepted", bad)
		}
	}
}

// TestClaimsAtMTULimits claims the max payload at the smallest, default and
// largest MTU through a rotation and reads every message back.
func TestClaimsAtMTULimits(t *testing.T) {
	const T = 1 << 20
	for _, mtu := range []int{64, 1408, 65504} {
		l := mustNew(t, T, mtu, 0)
		p := unlimited(l.Publication())
		if _, _, err := p.TryClaim(mtu - 31); err == nil {
			t.Fatalf("MTU %d: claim of %d accepted", mtu, mtu-31)
		}
		var seq uint64
		for p.Position() < T+T/2 {
			offer(t, p, mtu-32, seq)
			seq++
		}
		var read uint64
		img := l.ImageAt(0)
		for img.Poll(func(buf []byte, off, length int, hdr Header) {
			if length != mtu-32 || !check(buf[off:off+length], read) {
				t.Fatalf("MTU %d: fragment %d", mtu, read)
			}
			read++
		}, 1000) > 0 {
		}
		if read != seq {
			t.Fatalf("MTU %d: read %d of %d", mtu, read, seq)
		}
	}
}
