// The cross-check against lirm/aeron-go: its term reader, a Go port of
// Aeron's, must read the frames our publication writes.

package logbuf

import (
	"testing"

	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	"github.com/lirm/aeron-go/aeron/logbuffer/term"
)

// TestAeronGoReaderReadsOurTerms wraps our term bytes in aeron-go's
// atomic.Buffer and reads them with its term.Read: it must see the same
// frames, payloads, headers and positions our Image does, padding and
// aborted frames skipped, across a rotation.
func TestAeronGoReaderReadsOurTerms(t *testing.T) {
	const T = 64 << 10
	l := mustNew(t, T, 1408, 555)
	p := unlimited(l.Publication())
	img := l.Image()
	var seq uint64
	for p.Position() < T+T/2 { // into term 1: one padding frame at the end of term 0
		n := int(seq*37) % 1377
		c, _, err := p.TryClaim(n)
		if err != nil {
			t.Fatal(err)
		}
		fill(c.Buffer(), seq)
		if seq%11 == 5 {
			c.Abort()
		} else {
			c.SetReservedValue(int64(seq))
			c.Commit()
		}
		seq++
	}
	ours := collect(img, 1<<20)

	type got struct {
		payload  []byte
		hdr      FrameHeader
		position int64
	}
	var theirs []got
	var header logbuffer.Header
	header.SetInitialTermID(555).SetPositionBitsToShift(int32(l.PositionBitsToShift()))
	handler := func(buf *atomic.Buffer, offset, length int32, h *logbuffer.Header) {
		theirs = append(theirs, got{
			payload: buf.GetBytesArray(offset, length),
			hdr: FrameHeader{FrameLength: h.FrameLength(), Flags: h.Flags(), Type: TypeData,
				TermOffset: h.Offset(), SessionID: h.SessionId(), StreamID: h.StreamId(),
				TermID: h.TermId(), ReservedValue: h.GetReservedValue()},
			position: h.Position(),
		})
	}
	for i := 0; i < 2; i++ {
		buf := atomic.MakeBuffer(l.Term(i))
		end, _ := term.Read(buf, 0, handler, 1<<20, &header)
		if i == 0 && end != T {
			t.Fatalf("term 0 read to %d", end)
		}
		if i == 1 && int64(T+end) != p.Position() {
			t.Fatalf("term 1 read to %d, publication at %d", end, p.Position())
		}
	}
	if len(theirs) != len(ours) || len(ours) == 0 {
		t.Fatalf("aeron-go read %d frames, we read %d", len(theirs), len(ours))
	}
	for i := range ours {
		a, b := ours[i], theirs[i]
		if string(a.payload) != string(b.payload) || a.hdr != b.hdr || a.position != b.position {
			t.Fatalf("frame %d: ours %+v@%d, aeron-go %+v@%d", i, a.hdr, a.position, b.hdr, b.position)
		}
	}
}

// TestAeronGoFrameConstants checks our wire constants against aeron-go's.
func TestAeronGoFrameConstants(t *testing.T) {
	d := logbuffer.DataFrameHeader
	for _, c := range []struct {
		ours, theirs int
		name         string
	}{
		{HeaderLength, int(d.Length), "length"},
		{FrameLengthFieldOffset, int(d.FrameLengthFieldOffset), "frame length"},
		{VersionFieldOffset, int(d.VersionFieldOffset), "version"},
		{FlagsFieldOffset, int(d.FlagsFieldOffset), "flags"},
		{TypeFieldOffset, int(d.TypeFieldOffset), "type"},
		{TermOffsetFieldOffset, int(d.TermOffsetFieldOffset), "term offset"},
		{SessionIDFieldOffset, int(d.SessionIDFieldOffset), "session id"},
		{StreamIDFieldOffset, int(d.StreamIDFieldOffset), "stream id"},
		{TermIDFieldOffset, int(d.TermIDFieldOffset), "term id"},
		{ReservedValueOffset, int(d.ReservedValueFieldOffset), "reserved"},
		{int(TypePad), int(d.TypePad), "PAD"},
		{int(TypeData), int(d.TypeData), "DATA"},
		{FrameAlignment, int(logbuffer.FrameAlignment), "alignment"},
	} {
		if c.ours != c.theirs {
			t.Errorf("%s: ours %d, aeron-go %d", c.name, c.ours, c.theirs)
		}
	}
}
