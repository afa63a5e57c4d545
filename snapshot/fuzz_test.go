package snapshot

import (
	"encoding/binary"
	"testing"

	"github.com/matchlog/matchlog/internal/stream"
)

// joinFrags and splitFrags turn a fragment list into one byte string and
// back: each fragment is a little-endian uint16 length and its bytes.
func joinFrags(frags [][]byte) []byte {
	var out []byte
	for _, f := range frags {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(f)))
		out = append(out, f...)
	}
	return out
}

func splitFrags(b []byte) [][]byte {
	var frags [][]byte
	for len(b) >= 2 {
		n := int(binary.LittleEndian.Uint16(b))
		b = b[2:]
		n = min(n, len(b))
		frags = append(frags, b[:n:n])
		b = b[n:]
	}
	return frags
}

// FuzzLoad feeds arbitrary fragment streams to the loader: it must return
// an error or an engine that checks out and snapshots to the same state
// hash it was loaded with, never panic.
func FuzzLoad(f *testing.F) {
	// Small seeds (MTU 256: 4 orders or 3 triggers a batch) keep the
	// fuzzer's minimization quick.
	frags := capture(f, buildEngine(f, bookSpec{instruments: 2, sources: 2, orders: 5, triggers: 4}), 64<<10, 256)
	whole := joinFrags(frags)
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add(joinFrags(frags[1:]))
	f.Add(joinFrags(capture(f, buildEngine(f, bookSpec{}), 64<<10, 256)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, _, err := Load(stream.NewFrameSource(splitFrags(data)), testLoad)
		if err != nil {
			if e != nil {
				t.Fatal("engine returned with an error")
			}
			return
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		again, err := loadFrags(capture(t, e, 64<<10, 1408))
		if err != nil {
			t.Fatal(err)
		}
		sameEngine(t, e, again)
	})
}
