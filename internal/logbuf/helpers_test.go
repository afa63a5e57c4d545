package logbuf

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func mustNew(t testing.TB, termLength, mtu int, initialTermID int32) *Log {
	t.Helper()
	l, err := New(termLength, mtu, initialTermID, 42, 1001)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fill writes a payload derived from seq: its first 8 bytes (if room) hold
// seq, the rest a byte pattern.
func fill(b []byte, seq uint64) {
	for i := range b {
		b[i] = byte(seq*31 + uint64(i))
	}
	if len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, seq)
	}
}

// check reports whether b is the payload fill(b, seq) would write.
func check(b []byte, seq uint64) bool {
	if len(b) >= 8 && binary.LittleEndian.Uint64(b) != seq {
		return false
	}
	for i := 8; i < len(b); i++ {
		if b[i] != byte(seq*31+uint64(i)) {
			return false
		}
	}
	if len(b) < 8 {
		for i := range b {
			if b[i] != byte(seq*31+uint64(i)) {
				return false
			}
		}
	}
	return true
}

// offer claims, fills and commits one message with no limit in the way.
func offer(t testing.TB, p *ExclusivePublication, length int, seq uint64) int64 {
	t.Helper()
	c, pos, err := p.TryClaim(length)
	if err != nil || pos < 0 {
		t.Fatalf("claim %d: pos %d err %v", length, pos, err)
	}
	fill(c.Buffer(), seq)
	c.Commit()
	return pos
}

func unlimited(p *ExclusivePublication) *ExclusivePublication {
	p.SetPositionLimit(math.MaxInt64)
	return p
}

type fragment struct {
	payload  []byte
	hdr      FrameHeader
	position int64
}

func collect(img *Image, limit int) []fragment {
	var out []fragment
	img.Poll(func(buf []byte, offset, length int, hdr Header) {
		viaAccessors := FrameHeader{FrameLength: hdr.FrameLength(), Version: hdr.Version(), Flags: hdr.Flags(),
			Type: hdr.Type(), TermOffset: hdr.TermOffset(), SessionID: hdr.SessionID(), StreamID: hdr.StreamID(),
			TermID: hdr.TermID(), ReservedValue: hdr.ReservedValue()}
		if viaAccessors != ReadFrameHeader(buf[hdr.Offset():]) || int(hdr.TermOffset()) != hdr.Offset() ||
			offset != hdr.Offset()+HeaderLength || length != int(hdr.FrameLength())-HeaderLength ||
			hdr.InitialTermID() != img.initialTermID {
			panic("Header accessors disagree with the frame")
		}
		out = append(out, fragment{
			payload:  append([]byte(nil), buf[offset:offset+length]...),
			hdr:      ReadFrameHeader(buf[hdr.Offset():]),
			position: hdr.Position(),
		})
	}, limit)
	return out
}

var errTimeout = errors.New("logbuf test: timed out")
