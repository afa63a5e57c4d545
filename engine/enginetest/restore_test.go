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

// rehash fixes the header and End counts and the End hash of an edited
// tape, so that only the restorer's own checks can refuse it.
func (tp Tape) rehash() Tape {
	tp = tp.Clone()
	var h engine.Hasher
	var hd, end *Record
	for i := range tp {
		switch tp[i].Kind {
		case RecHeader:
			hd = &tp[i]
		case RecEnd:
			end = &tp[i]
		}
	}
	var n [4]uint64
	for i := range tp {
		switch tp[i].Kind {
		case RecSource:
			n[0]++
		case RecMark:
			n[1]++
		case RecResting:
			n[2]++
		case RecTrigger:
			n[3]++
		}
	}
	hd.Header.Sources, hd.Header.Instruments, hd.Header.Orders, hd.Header.Triggers = n[0], n[1], n[2], n[3]
	end.Sources, end.Instruments, end.Orders, end.Triggers = n[0], n[1], n[2], n[3]
	for i := range tp {
		if tp[i].Kind != RecEnd {
			_ = tp[i].Play(&h)
		}
	}
	end.EndStateHash = h.Sum
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

		// Bad values with consistent counts and hash: the restorer's
		// own checks must refuse them.
		{"rehashed: duplicate resting order", append(good[:rest1:rest1], append(Tape{good[rest0]}, good[rest1:]...)...).rehash()},
		{"rehashed: resting and trigger share an id", good.edit(trig0, func(r *Record) { r.OrderID = good[rest0].OrderID }).rehash()},
		{"rehashed: resting on an undefined instrument", good.edit(rest0, func(r *Record) { r.Instrument = 77777 }).rehash()},
		{"rehashed: resting sequence at next sequence", good.edit(rest0, func(r *Record) { r.Seq = good[0].Header.NextSeq }).rehash()},
		{"rehashed: resting quantity 0", good.edit(rest0, func(r *Record) { r.Qty = 0 }).rehash()},
		{"rehashed: resting side 0", good.edit(rest0, func(r *Record) { r.Side = 0 }).rehash()},
		{"rehashed: resting order id 0", good.edit(rest0, func(r *Record) { r.OrderID = 0 }).rehash()},
		{"rehashed: resting stp 9", good.edit(rest0, func(r *Record) { r.STP = 9 }).rehash()},
		{"rehashed: crossed book", crossBook(good).rehash()},
		{"rehashed: trigger type limit", good.edit(trig0, func(r *Record) { r.Type = engine.Limit }).rehash()},
		{"rehashed: trigger ref 0", good.edit(trig0, func(r *Record) { r.Ref = 0 }).rehash()},
		{"rehashed: mark tick 0", good.edit(mark0, func(r *Record) { r.Tick = 0 }).rehash()},
		{"rehashed: header version 2", good.edit(0, func(r *Record) { r.Header.Version = 2 }).rehash()},
		{"rehashed: next sequence 0", good.edit(0, func(r *Record) { r.Header.NextSeq = 0 }).rehash()},
		{"rehashed: source repeated", append(good[:src1:src1], append(Tape{good[src0]}, good[src1:]...)...).rehash()},
		{"rehashed: mark repeated", append(good[:mark1:mark1], append(Tape{good[mark0]}, good[mark1:]...)...).rehash()},
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
	t.Run("good, rehashed", func(t *testing.T) {
		e := engine.New()
		r := e.Restorer()
		if err := good.rehash().Replay(r); err != nil || r.Err() != nil || e.StateHash() != hash {
			t.Fatalf("%v / %v", err, r.Err())
		}
	})
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

// crossBook moves the first resting ask of the first book with both sides
// down to its best bid's price.
func crossBook(good Tape) Tape {
	tp := good.Clone()
	for i := range tp {
		if tp[i].Kind != RecResting || tp[i].Side != engine.Sell {
			continue
		}
		for j := range tp {
			if tp[j].Kind == RecResting && tp[j].Side == engine.Buy && tp[j].Instrument == tp[i].Instrument {
				tp[i].Price = tp[j].Price
				return tp
			}
		}
	}
	panic("no book with both sides")
}

// TestRestoreHugeNextSeq: a stream whose header carries a next sequence
// near the top of its range is either refused by the restorer, or the
// restored engine then behaves exactly like the model with that next
// sequence.
func TestRestoreHugeNextSeq(t *testing.T) {
	for _, next := range []uint64{1<<56 - 100, 1 << 63, ^uint64(0) - 5000} {
		tp := Tape{{Kind: RecHeader, Header: engine.Header{Version: engine.RecordVersion, NextSeq: next}}}
		var h engine.Hasher
		_ = tp[0].Play(&h)
		tp = append(tp, Record{Kind: RecEnd, EndStateHash: h.Sum})
		e := engine.New()
		r := e.Restorer()
		if err := tp.Replay(r); err != nil || r.Err() != nil {
			t.Logf("next sequence %d: refused: %v", next, r.Err())
			continue
		}
		p := newPair(t, 5, GenConfig{})
		p.e = e
		p.m.nextSeq = next
		p.run(3000)
		p.sameState("after a restore with a huge next sequence", p.e)
	}
}
