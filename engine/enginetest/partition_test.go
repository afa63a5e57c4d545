package enginetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// restingTape returns the resting-order records of a record stream.
func restingTape(snapshot func(engine.Sink) error) (Tape, error) {
	var all Tape
	if err := snapshot(&all); err != nil {
		return nil, err
	}
	var out Tape
	for _, r := range all {
		if r.Kind == RecResting {
			out = append(out, r)
		}
	}
	return out, nil
}

// runTape is a [Tape] that takes resting orders a run at a time
// ([engine.RunSink]), checking each run's shape: not empty, and in time
// priority (sequences ascending).
type runTape struct {
	Tape
	runs int
	bad  string
}

func (r *runTape) OnRestingRun(run engine.RestingRun) error {
	r.runs++
	if run.Len() < 1 && r.bad == "" {
		r.bad = fmt.Sprintf("run %d is empty", r.runs)
	}
	var last uint64
	for i := range run.Len() {
		id, acct, qty, seq, stp, post := run.At(i)
		if i > 0 && seq <= last && r.bad == "" {
			r.bad = fmt.Sprintf("run %d: sequence %d after %d", r.runs, seq, last)
		}
		last = seq
		r.Tape = append(r.Tape, Record{Kind: RecResting, Instrument: run.Instrument, Side: run.Side, OrderID: id, Account: acct,
			Price: run.Price, Qty: qty, Seq: seq, STP: stp, Post: post})
	}
	return nil
}

// checkRuns checks that a run sink receives from f.SnapshotTo and from
// each of f's partitions exactly the records a sink of one record a call
// does.
func checkRuns(t *testing.T, what string, f *engine.Frozen, want Tape, parts []engine.Partition) {
	t.Helper()
	var all Tape
	if err := f.SnapshotTo(&all); err != nil {
		t.Fatalf("%s: snapshot: %v", what, err)
	}
	var rt runTape
	if err := f.SnapshotTo(&rt); err != nil {
		t.Fatalf("%s: snapshot to a run sink: %v", what, err)
	}
	if rt.bad != "" {
		t.Fatalf("%s: snapshot to a run sink: %s", what, rt.bad)
	}
	if !slices.Equal(rt.Tape, all) {
		t.Fatalf("%s: a run sink's record stream (%d records) differs from one record a call (%d)", what, len(rt.Tape), len(all))
	}
	if len(want) > 0 && rt.runs == 0 {
		t.Fatalf("%s: %d orders came in no run", what, len(want))
	}
	// SnapshotRunsTo: the same calls as SnapshotTo into the same sink.
	var typed runTape
	if err := f.SnapshotRunsTo(&typed); err != nil {
		t.Fatalf("%s: SnapshotRunsTo: %v", what, err)
	}
	if typed.bad != "" || typed.runs != rt.runs || !slices.Equal(typed.Tape, rt.Tape) {
		t.Fatalf("%s: SnapshotRunsTo gave %d records in %d runs (%s), SnapshotTo %d in %d", what,
			len(typed.Tape), typed.runs, typed.bad, len(rt.Tape), rt.runs)
	}
	var got, gotTyped runTape
	for i, p := range parts {
		c, h, err := p.Emit(&got)
		if err != nil {
			t.Fatalf("%s: partition %d to a run sink: %v", what, i, err)
		}
		ct, ht, err := p.EmitRuns(&gotTyped)
		if err != nil {
			t.Fatalf("%s: partition %d, EmitRuns: %v", what, i, err)
		}
		if ct != c || ht != h {
			t.Fatalf("%s: partition %d: EmitRuns counted %d (hash %x), Emit %d (%x)", what, i, ct, ht, c, h)
		}
	}
	if got.bad != "" {
		t.Fatalf("%s: partitions to a run sink: %s", what, got.bad)
	}
	if !slices.Equal(got.Tape, want) {
		t.Fatalf("%s: %d partitions to a run sink: %d records, differing from the stream's %d", what, len(parts), len(got.Tape), len(want))
	}
	if gotTyped.bad != "" || gotTyped.runs != got.runs || !slices.Equal(gotTyped.Tape, got.Tape) {
		t.Fatalf("%s: EmitRuns gave %d records in %d runs (%s), Emit %d in %d", what,
			len(gotTyped.Tape), gotTyped.runs, gotTyped.bad, len(got.Tape), got.runs)
	}
}

// checkPartitions checks that Partitions(n), emitted in order, is exactly
// the resting-order stream of f.SnapshotTo, for each n.
func checkPartitions(t *testing.T, what string, f *engine.Frozen, ns ...int) {
	t.Helper()
	want, err := restingTape(f.SnapshotTo)
	if err != nil {
		t.Fatalf("%s: snapshot: %v", what, err)
	}
	var wantSum uint64
	for _, r := range want {
		wantSum += engine.HashResting(r.Instrument, r.Side, r.OrderID, r.Account, r.Price, r.Qty, r.Seq, r.STP, r.Post)
	}
	for _, n := range ns {
		parts := f.Partitions(n)
		// AppendPartitions appends the same partitions after what dst
		// holds and, with room in dst, allocates nothing.
		pre := make([]engine.Partition, 1, 1+len(parts)+1)
		app := f.AppendPartitions(pre, n)
		if len(app) != 1+len(parts) {
			t.Fatalf("%s: AppendPartitions(%d) appended %d partitions, Partitions gave %d", what, n, len(app)-1, len(parts))
		}
		for i := range parts {
			if app[1+i] != parts[i] {
				t.Fatalf("%s: AppendPartitions(%d)[%d] differs from Partitions", what, n, i)
			}
		}
		if a := testing.AllocsPerRun(5, func() { app = f.AppendPartitions(app[:0], n) }); a != 0 {
			t.Fatalf("%s: AppendPartitions(%d) into a reused slice: %v allocations", what, n, a)
		}
		// EachPartition yields the same partitions, in order, and stops
		// at the first false.
		var each []engine.Partition
		f.EachPartition(n, func(p engine.Partition) bool { each = append(each, p); return true })
		if !slices.Equal(each, parts) {
			t.Fatalf("%s: EachPartition(%d) yielded %d partitions differing from Partitions' %d", what, n, len(each), len(parts))
		}
		for stop := 1; stop < len(parts); stop++ {
			calls := 0
			f.EachPartition(n, func(engine.Partition) bool { calls++; return calls < stop })
			if calls != stop {
				t.Fatalf("%s: EachPartition(%d) yielded %d partitions after the %dth said stop", what, n, calls, stop)
			}
		}
		if n <= 0 {
			if len(parts) != 0 {
				t.Fatalf("%s: Partitions(%d) gave %d partitions", what, n, len(parts))
			}
			continue
		}
		if len(parts) > n {
			t.Fatalf("%s: Partitions(%d) gave %d partitions", what, n, len(parts))
		}
		var got Tape
		var count, sum uint64
		sizes := make([]int, 0, len(parts))
		for i, p := range parts {
			before := len(got)
			c, h, err := p.Emit(&got)
			if err != nil {
				t.Fatalf("%s: Partitions(%d)[%d].Emit: %v", what, n, i, err)
			}
			if int(c) != len(got)-before {
				t.Fatalf("%s: Partitions(%d)[%d] emitted %d orders but counted %d", what, n, i, len(got)-before, c)
			}
			// The cuts are found from the level totals, so each
			// partition's estimate is its exact count.
			if c != p.Estimate {
				t.Fatalf("%s: Partitions(%d)[%d] emitted %d orders, estimated %d", what, n, i, c, p.Estimate)
			}
			count += c
			sum += h
			sizes = append(sizes, int(c))
		}
		if len(got) != len(want) {
			t.Fatalf("%s: Partitions(%d) (sizes %v) emitted %d orders, the stream has %d", what, n, sizes, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: Partitions(%d) (sizes %v): order %d is %+v, the stream has %+v", what, n, sizes, i, got[i], want[i])
			}
		}
		checkRuns(t, fmt.Sprintf("%s, Partitions(%d)", what, n), f, want, parts)
		if count != uint64(len(want)) || sum != wantSum {
			t.Fatalf("%s: Partitions(%d): count %d hash sum %016x, want %d %016x", what, n, count, sum, len(want), wantSum)
		}
		if len(want) > 0 && len(parts) == 0 {
			t.Fatalf("%s: Partitions(%d) gave nothing for %d orders", what, n, len(want))
		}
	}
}

// layout builds an engine holding exactly size resting orders laid out in
// a given way, through ordinary commands.
type layout struct {
	name  string
	build func(t *testing.T, e *engine.Engine, size int)
}

type builder struct {
	t   *testing.T
	e   *engine.Engine
	seq uint64
	id  uint64
}

func (b *builder) apply(c engine.Command) []engine.Event {
	b.t.Helper()
	b.seq++
	c.Source, c.Seq = 1, b.seq
	evs := b.e.Apply(&c)
	if len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
		b.t.Fatalf("%s: %s", FormatCommand(&c), FormatEvents(evs, ""))
	}
	return evs
}

func (b *builder) define(insts ...uint32) {
	for _, in := range insts {
		b.apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: in, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 10_000})
	}
}

// rest places a resting order and returns its id.
func (b *builder) rest(inst uint32, side engine.Side, price int64) uint64 {
	b.id++
	b.apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: b.id, Account: b.id % 5, Side: side,
		Type: engine.Limit, TIF: engine.GTC, STP: engine.STP(b.id % 5), Post: b.id%7 == 0, Price: price, Qty: int64(1 + b.id%9)})
	return b.id
}

var layouts = []layout{
	{"one-crowded-level", func(t *testing.T, e *engine.Engine, size int) {
		b := &builder{t: t, e: e}
		b.define(1)
		for i := 0; i < size; i++ {
			b.rest(1, engine.Buy, 100)
		}
	}},
	{"many-levels", func(t *testing.T, e *engine.Engine, size int) {
		b := &builder{t: t, e: e}
		b.define(1)
		for i := 0; i < size; i++ {
			if i%2 == 0 {
				b.rest(1, engine.Buy, 5000-int64(i))
			} else {
				b.rest(1, engine.Sell, 5001+int64(i))
			}
		}
	}},
	{"mixed-with-holes", func(t *testing.T, e *engine.Engine, size int) {
		// Three instruments (one of them empty), both sides, three
		// levels a side; twice the orders placed and every other one
		// cancelled, so arrival sequences have holes.
		b := &builder{t: t, e: e}
		b.define(3, 1, 7, 5)
		insts := []uint32{1, 3, 7}
		var cancel []struct {
			inst uint32
			id   uint64
		}
		for i := 0; i < 2*size; i++ {
			in := insts[(i/2)%3]
			side := engine.Side(1 + (i/6)%2)
			price := int64(500 - (i/12)%3)
			if side == engine.Sell {
				price = 600 + int64((i/12)%3)
			}
			id := b.rest(in, side, price)
			if i%2 == 1 {
				cancel = append(cancel, struct {
					inst uint32
					id   uint64
				}{in, id})
			}
		}
		for _, c := range cancel {
			b.apply(engine.Command{Kind: engine.CmdCancel, Instrument: c.inst, OrderID: c.id})
		}
	}},
	{"requeued-level", func(t *testing.T, e *engine.Engine, size int) {
		// One crowded bid level and one crowded ask level; a third of the
		// orders lose priority by a quantity increase, so the level's
		// order is not the id order.
		b := &builder{t: t, e: e}
		b.define(2)
		var ids []uint64
		for i := 0; i < size; i++ {
			side, price := engine.Buy, int64(100)
			if i%4 == 3 {
				side, price = engine.Sell, 200
			}
			ids = append(ids, b.rest(2, side, price))
		}
		for i, id := range ids {
			if i%3 == 0 {
				price := int64(100)
				if i%4 == 3 {
					price = 200
				}
				b.apply(engine.Command{Kind: engine.CmdModify, Instrument: 2, OrderID: id, Price: price, Qty: 50})
			}
		}
	}},
}

// TestPartitions: for every n from 1 to 9 (and a few beyond), Partitions(n)
// concatenated is exactly SnapshotTo's resting-order stream, at book sizes
// around every boundary (0, 1, 2, n-1, n, n+1, ...), for one crowded level,
// many levels, several instruments with holes, and requeued levels.
func TestPartitions(t *testing.T) {
	ns := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64}
	var sizes []int
	for s := 0; s <= 30; s++ {
		sizes = append(sizes, s)
	}
	sizes = append(sizes, 35, 36, 37, 63, 64, 65, 81, 100, 257, 1000, 4099)
	for _, l := range layouts {
		for _, size := range sizes {
			e := engine.New()
			l.build(t, e, size)
			f := e.Clone()
			if got := len(mustResting(t, f)); got != size {
				t.Fatalf("%s: built %d orders, want %d", l.name, got, size)
			}
			checkPartitions(t, fmt.Sprintf("%s size=%d", l.name, size), f, ns...)
		}
	}
}

func mustResting(t *testing.T, f *engine.Frozen) Tape {
	t.Helper()
	tp, err := restingTape(f.SnapshotTo)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestPartitionsRandomBooks cuts generated books (deep and crowded) at
// several points of their streams.
func TestPartitionsRandomBooks(t *testing.T) {
	for i, cfg := range []GenConfig{{Deep: true, Instruments: 3, MaxInstruments: 3, Spread: 2}, {Deep: true, Instruments: 1, MaxInstruments: 1, Spread: 0}, {}} {
		p := newPair(t, int64(300+i), cfg)
		for k := 0; k < 4; k++ {
			p.run(scaled(6000))
			checkPartitions(t, fmt.Sprintf("shape %d after %d commands", i, p.n), p.e.Clone(), 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 100)
		}
	}
}
