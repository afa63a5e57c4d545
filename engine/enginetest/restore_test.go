package enginetest

import (
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// goodTape returns the record stream of a state that has every record kind
// several times, and that state's hash.
func goodTape(t *testing.T) (Tape, uint64) {
	p := newPair(t, 55, GenConfig{Instruments: 5, Sources: 4})
	for {
		p.run(500)
		_, armed := p.m.Orders()
		if armed >= 3 && p.n >= 3000 {
			break
		}
	}
	var tp Tape
	if err := p.e.SnapshotTo(&tp); err != nil {
		t.Fatal(err)
	}
	count := map[RecordKind]int{}
	for _, r := range tp {
		count[r.Kind]++
	}
	for k := RecHeader; k <= RecEnd; k++ {
		if count[k] == 0 || (k != RecHeader && k != RecEnd && count[k] < 2) {
			t.Fatalf("tape has %d records of kind %d", count[k], k)
		}
	}
	return tp, p.e.StateHash()
}

// index returns the index of the first record of kind k (plus skip).
func (tp Tape) index(k RecordKind, skip int) int {
	for i, r := range tp {
		if r.Kind == k {
			if skip == 0 {
				return i
			}
			skip--
		}
	}
	panic("no such record")
}

func (tp Tape) without(i int) Tape { return append(tp[:i:i], tp[i+1:]...) }

func (tp Tape) swap(i, j int) Tape {
	tp = tp.Clone()
	tp[i], tp[j] = tp[j], tp[i]
	return tp
}

func (tp Tape) edit(i int, f func(*Record)) Tape {
	tp = tp.Clone()
	f(&tp[i])
	return tp
}

// TestRestorerStrict: a damaged record stream is refused (Err non-nil), and
// the engine stays empty and can still be restored from a good stream.
func TestRestorerStrict(t *testing.T) {
	good, hash := goodTape(t)
	emptyHash := engine.New().StateHash()
	end := len(good) - 1
	rest0, rest1 := good.index(RecResting, 0), good.index(RecResting, 1)
	trig0 := good.index(RecTrigger, 0)
	src0, src1 := good.index(RecSource, 0), good.index(RecSource, 1)
	mark0, mark1 := good.index(RecMark, 0), good.index(RecMark, 1)
	// Two resting orders of one level, and of two different books.
	sameLevel, otherBook := -1, -1
	for i := rest0 + 1; i < len(good) && good[i].Kind == RecResting; i++ {
		a, b := good[i-1], good[i]
		if sameLevel < 0 && a.Instrument == b.Instrument && a.Side == b.Side && a.Price == b.Price {
			sameLevel = i
		}
		if otherBook < 0 && a.Instrument != b.Instrument {
			otherBook = i
		}
	}
	if sameLevel < 0 || otherBook < 0 {
		t.Fatal("tape lacks a crowded level or a second book")
	}
	cases := []struct {
		name string
		tape Tape
	}{
		{"missing header", good.without(0)},
		{"second header", append(Tape{good[0]}, good...)},
		{"wrong version", good.edit(0, func(r *Record) { r.Header.Version++ })},
		{"empty stream", Tape{}},
		{"header only", good[:1]},
		{"truncated before end", good[:end]},
		{"truncated in orders", good[:rest1]},
		{"truncated in triggers", good[:trig0+1]},
		{"sources swapped", good.swap(src0, src1)},
		{"marks swapped", good.swap(mark0, mark1)},
		{"resting swapped within a level", good.swap(sameLevel-1, sameLevel)},
		{"resting swapped across books", good.swap(otherBook-1, otherBook)},
		{"resting swapped across levels", good.swap(rest0, good.index(RecResting, int(good[end].Orders)-1))},
		{"mark before source", good.swap(src1, mark0)},
		{"trigger before resting", good.swap(rest1, trig0)},
		{"triggers swapped", good.swap(trig0, trig0+1)},
		{"record after end", append(good.Clone(), good[rest0])},
		{"header orders count", good.edit(0, func(r *Record) { r.Header.Orders++ })},
		{"header triggers count", good.edit(0, func(r *Record) { r.Header.Triggers-- })},
		{"header sources count", good.edit(0, func(r *Record) { r.Header.Sources++ })},
		{"header instruments count", good.edit(0, func(r *Record) { r.Header.Instruments-- })},
		{"end orders count", good.edit(end, func(r *Record) { r.Orders-- })},
		{"end triggers count", good.edit(end, func(r *Record) { r.Triggers++ })},
		{"end sources count", good.edit(end, func(r *Record) { r.Sources++ })},
		{"end instruments count", good.edit(end, func(r *Record) { r.Instruments++ })},
		{"missing resting order", good.without(rest1)},
		{"missing trigger", good.without(trig0)},
		{"wrong hash", good.edit(end, func(r *Record) { r.EndStateHash ^= 1 })},
		{"next seq changed", good.edit(0, func(r *Record) { r.Header.NextSeq++ })},
		{"resting qty changed", good.edit(rest0, func(r *Record) { r.Qty++ })},
		{"source mark changed", good.edit(src0, func(r *Record) { r.SourceSeq++ })},
		{"last trade changed", good.edit(mark0, func(r *Record) { r.LastTrade += r.Tick })},
		{"trigger stop changed", good.edit(trig0, func(r *Record) { r.Stop++ })},
		{"duplicate resting order", append(good[:rest1:rest1], append(Tape{good[rest0]}, good[rest1:]...)...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.New()
			r := e.Restorer()
			for i := range tc.tape {
				// Keep feeding after an error: a restorer must stay failed.
				_ = tc.tape[i].Play(r)
			}
			if r.Err() == nil {
				t.Fatal("restorer accepted a damaged stream")
			}
			if tc.name == "record after end" {
				return // the damage comes after a good End: only Err must say so
			}
			if h := e.StateHash(); h != emptyHash {
				t.Fatalf("engine not empty after a failed restore: state hash %016x", h)
			}
			var recs Tape
			if err := e.SnapshotTo(&recs); err != nil || len(recs) != 2 {
				t.Fatalf("engine not empty after a failed restore: %d records, %v", len(recs), err)
			}
			// The engine is still empty: a good stream restores it.
			r2 := e.Restorer()
			if err := good.Replay(r2); err != nil || r2.Err() != nil {
				t.Fatalf("good stream after a failed one: %v / %v", err, r2.Err())
			}
			if e.StateHash() != hash {
				t.Fatal("good stream after a failed one: wrong state")
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		e := engine.New()
		r := e.Restorer()
		if err := good.Replay(r); err != nil || r.Err() != nil {
			t.Fatalf("%v / %v", err, r.Err())
		}
		if e.StateHash() != hash {
			t.Fatal("wrong state hash")
		}
		// A second restore into a non-empty engine is refused and changes
		// nothing.
		r2 := e.Restorer()
		_ = good.Replay(r2)
		if r2.Err() == nil || e.StateHash() != hash {
			t.Fatalf("restore into a non-empty engine: %v", r2.Err())
		}
	})
}
