package enginetest

import (
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// FuzzDifferential decodes arbitrary bytes into commands (see
// [ByteDecoder]) and runs the engine and the model side by side: same
// events for every command, the engine's structure check after each, the
// same state hash at the end, and a snapshot round trip.
func FuzzDifferential(f *testing.F) {
	// The decoder defines three instruments first; then a few orders.
	defs := []byte{0x00, 0, 0, 0x40, 0, 1, 0x80, 0, 2} // redefinitions
	f.Add([]byte{})
	f.Add(defs)
	f.Add(append(append([]byte{}, defs...),
		0x01, 0x01, 0, 1, 0x04, 5, 2, // sell limit
		0x02, 0x81, 0, 2, 0x08, 3, 3, // buy limit crossing
		0x07, 0x01, 0, // cancel
		0x09, 0x02, 0, 7, 4, // modify
		0x0d, 9, 0, // mark
		0x05, 0x81, 0, 3, 0x41, 6, 1, 4, // stop
		0x0c, 0x03, 0, // mass cancel
	))
	f.Add(append(append([]byte{}, defs...), 0x31, 0x31, 0x31, 0x0f, 0xff, 0xfe, 0xfd, 0xfa, 0x22, 0x13))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, m := engine.New(), NewModel()
		d := NewByteDecoder(data)
		var c engine.Command
		for i := 0; i < 4000 && d.Next(&c); i++ {
			ev := e.Apply(&c)
			mv := m.Apply(&c)
			if firstDiff(ev, mv) >= 0 {
				t.Fatalf("command %d: %s\nengine:\n%smodel:\n%s", i, FormatCommand(&c), FormatEvents(ev, "  "), FormatEvents(mv, "  "))
			}
			if err := e.Check(); err != nil {
				t.Fatalf("command %d: %s: check: %v", i, FormatCommand(&c), err)
			}
		}
		if eh, mh := e.StateHash(), m.StateHash(); eh != mh {
			t.Fatalf("state hash %016x, model %016x\n%s", eh, mh, DiffLines(Records(e.SnapshotTo), Records(m.SnapshotTo), "engine", "model"))
		}
		r2 := engine.New()
		rs := r2.Restorer()
		if err := e.SnapshotTo(rs); err != nil || rs.Err() != nil {
			t.Fatalf("round trip: %v / %v", err, rs.Err())
		}
		if r2.StateHash() != m.StateHash() {
			t.Fatal("round trip: state hash differs")
		}
	})
}
