package enginetest

import (
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// fuzzTape is a small but varied record stream: every record kind, several
// instruments, resting orders and armed triggers.
func fuzzTape(tb testing.TB) Tape {
	e := engine.New()
	g := NewGen(77, GenConfig{})
	var c engine.Command
	for range 3000 {
		g.Next(&c)
		g.Observe(e.Apply(&c))
	}
	var t Tape
	if err := e.SnapshotTo(&t); err != nil {
		tb.Fatal(err)
	}
	return t
}

// FuzzRestorer damages a good record stream as the fuzzer's bytes say
// (drop, duplicate or swap records; change a field) and replays it into a
// restorer. It must never panic; a stream it accepts must give an engine
// that passes Check and has the End record's hash; a stream it refuses must
// leave the engine empty.
func FuzzRestorer(f *testing.F) {
	base := fuzzTape(f)
	f.Add([]byte{})
	f.Add([]byte{0, 5, 0, 0})
	f.Add([]byte{1, 9, 0, 0, 2, 3, 4, 0})
	f.Add([]byte{3, 40, 7, 200})
	empty := engine.New().StateHash()
	f.Fuzz(func(t *testing.T, ops []byte) {
		tp := append(Tape(nil), base...)
		for i := 0; i+3 < len(ops) && len(tp) > 0; i += 4 {
			op, at, field, v := ops[i]%4, int(ops[i+1])*len(tp)/256, ops[i+2], ops[i+3]
			switch op {
			case 0: // drop
				tp = append(tp[:at], tp[at+1:]...)
			case 1: // duplicate
				tp = append(tp[:at+1], tp[at:]...)
			case 2: // swap with the next
				if at+1 < len(tp) {
					tp[at], tp[at+1] = tp[at+1], tp[at]
				}
			case 3: // change one field
				r := &tp[at]
				d := int64(int8(v))
				switch field % 12 {
				case 0:
					r.Qty += d
				case 1:
					r.Price += d
				case 2:
					r.Seq += uint64(d)
				case 3:
					r.OrderID += uint64(d)
				case 4:
					r.Instrument += uint32(d)
				case 5:
					r.Side = engine.Side(v)
				case 6:
					r.Stop += d
				case 7:
					r.Orders += uint64(d)
				case 8:
					r.EndStateHash ^= uint64(v) << (field % 64)
				case 9:
					r.Header.NextSeq += uint64(d)
				case 10:
					r.Type, r.TIF, r.Ref = engine.OrderType(v&7), engine.TimeInForce(v>>3&3), engine.TriggerRef(v>>5&3)
				case 11:
					r.Tick += d
				}
			}
		}
		e := engine.New()
		r := e.Restorer()
		var end uint64
		for i := range tp {
			if tp[i].Kind == RecEnd {
				end = tp[i].EndStateHash
			}
			if tp[i].Play(r) != nil {
				break
			}
		}
		if r.Err() != nil {
			if h := e.StateHash(); h != empty {
				t.Fatalf("refused stream (%v) left a non-empty engine", r.Err())
			}
			return
		}
		if err := e.Check(); err != nil {
			t.Fatalf("accepted stream gave a broken engine: %v", err)
		}
		if h := e.StateHash(); h != end {
			t.Fatalf("accepted stream: state hash %016x, End record says %016x", h, end)
		}
	})
}
