package bench

import (
	"flag"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/invariants"
)

func BenchmarkMixed(b *testing.B)           { BenchMixed(b) }
func BenchmarkInsert(b *testing.B)          { BenchInsert(b) }
func BenchmarkCancel(b *testing.B)          { BenchCancel(b) }
func BenchmarkCancelCrowded(b *testing.B)   { BenchCancelCrowded(b) }
func BenchmarkAggressiveMatch(b *testing.B) { BenchAggressiveMatch(b) }
func BenchmarkDepthTop10(b *testing.B)      { BenchDepthTop10(b) }
func BenchmarkClone(b *testing.B)           { BenchClone(b) }
func BenchmarkRestoreSorted(b *testing.B)   { BenchRestoreSorted(b) }
func BenchmarkHeapPerOrder(b *testing.B)    { BenchHeapPerOrder(b) }

// smallMix is a shorter mix for tests: the default mix's first n commands.
func smallMix(t *testing.T, n int) *Mixed {
	t.Helper()
	s := DefaultMixed()
	s.Commands = n
	m, err := NewMixed(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMixedZeroAlloc applies the mix in steady state and requires that it
// allocates nothing at all: after MixedWarm commands of warm-up (and the
// batch of AllocsPerRun's own warm-up call), a batch of 150k commands must
// not allocate once.
func TestMixedZeroAlloc(t *testing.T) {
	if invariants.Enabled {
		t.Skip("the invariants build checks the whole engine after every command")
	}
	const batch = 150_000
	m := smallMix(t, MixedWarm+2*batch)
	r := m.NewRunner(MixedWarm)
	bad := 0
	allocs := testing.AllocsPerRun(1, func() {
		bad += r.Run(batch)
	})
	if bad > 0 {
		t.Fatalf("%d commands of the mix not accepted", bad)
	}
	if allocs != 0 {
		t.Errorf("%v allocations in %d commands of the mix in steady state, want 0", allocs, batch)
	}
}

// TestCrowdedChurnZeroAlloc: cancelling orders in the middle of a level of
// 100 and adding them again at its tail, the level's chunks of 64 slots
// keep entering the long form (a fifth chunk) and leaving it (a rebuild
// when sparse); in steady state that allocates nothing.
func TestCrowdedChurnZeroAlloc(t *testing.T) {
	if invariants.Enabled {
		t.Skip("the invariants build checks the whole engine after every command")
	}
	const n = 100
	d := NewDriver()
	price := PassivePrice(engine.Buy, 5)
	for id := uint64(1); id <= n; id++ {
		c := NewLimit(id, engine.Buy, price, 1, 1)
		d.mustApply(&c)
	}
	var cxl, add engine.Command
	k := uint64(0)
	churn := func() {
		for range 20_000 {
			id := n/2 + k%(n/2)
			cxl, add = Cancel(id), NewLimit(id, engine.Buy, price, 1, 1)
			if ev := d.Apply(&cxl); ev[0].Kind != engine.EvAccepted {
				t.Fatalf("cancel %d: %+v", id, ev[0])
			}
			if ev := d.Apply(&add); ev[0].Kind != engine.EvAccepted {
				t.Fatalf("add %d: %+v", id, ev[0])
			}
			k++
		}
	}
	churn()
	if allocs := testing.AllocsPerRun(1, churn); allocs != 0 {
		t.Errorf("%v allocations in 40,000 commands on a crowded level, want 0", allocs)
	}
}

// TestMixedShape checks the generated mix: its proportions, a book held near
// 1,000 orders on about 750 levels, trades happening, and a replay from
// Setup reaching the generator's state.
func TestMixedShape(t *testing.T) {
	m := smallMix(t, 300_000)
	n := float64(len(m.Stream))
	for i, want := range []float64{0.82, 0.09, 0.03, 0.06} {
		if got := float64(m.Count[i]) / n; got < want-0.005 || got > want+0.005 {
			t.Errorf("class %d: %.3f of the stream, want %.2f", i, got, want)
		}
	}
	if m.AvgOrders < 900 || m.AvgOrders > 1100 {
		t.Errorf("book holds %.0f orders on average, want about 1,000", m.AvgOrders)
	}
	if m.AvgLevels < 650 || m.AvgLevels > 850 {
		t.Errorf("book has %.0f levels on average, want about 750", m.AvgLevels)
	}
	if m.Trades < len(m.Stream)/50 {
		t.Errorf("%d trades in %d commands", m.Trades, len(m.Stream))
	}
	r := m.NewRunner(0)
	if bad := r.Run(r.Left()); bad > 0 {
		t.Fatalf("%d commands not accepted on replay", bad)
	}
	if h := r.D.E.StateHash(); h != m.EndHash {
		t.Fatalf("replay ends at state hash %#x, generator at %#x", h, m.EndHash)
	}
	if err := r.D.E.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSweep checks that every taker of the aggressive-match workload fills
// exactly its makers, across refills.
func TestSweep(t *testing.T) {
	for _, makers := range []int{1, 10} {
		s := NewSweep(20_000, 100, makers, 3)
		want := s.B.D.E.Orders()
		for round := range 3 {
			for i := range s.Takers() {
				c := s.Takers()[i]
				evs := s.B.D.Apply(&c)
				if n := countTrades(evs); n != makers {
					t.Fatalf("makers=%d round %d taker %d: %d trades", makers, round, i, n)
				}
			}
			s.Refill()
			if got := s.B.D.E.Orders(); got != want {
				t.Fatalf("makers=%d: %d orders after refill, want %d", makers, got, want)
			}
		}
	}
}

// TestBookSpec checks the book builder: counts per level in PerLevel mode,
// and a snapshot-restore round trip through [Records].
func TestBookSpec(t *testing.T) {
	bk := BuildBook(BookSpec{Levels: 50, PerLevel: 7, Seed: 1})
	for _, s := range []engine.Side{engine.Buy, engine.Sell} {
		lv := bk.D.E.Depth(Instrument, s, 100, nil)
		if len(lv) != 50 {
			t.Fatalf("%v: %d levels, want 50", s, len(lv))
		}
		for _, l := range lv {
			if l.Count != 7 {
				t.Fatalf("%v level %d: %d orders, want 7", s, l.Price, l.Count)
			}
		}
	}
	rec := new(Records)
	if err := bk.D.E.SnapshotTo(rec); err != nil {
		t.Fatal(err)
	}
	e, err := rec.Restore()
	if err != nil {
		t.Fatal(err)
	}
	if e.StateHash() != bk.D.E.StateHash() {
		t.Fatal("restored engine has a different state hash")
	}
}

var snap5M = flag.Bool("snap5m", false, "also run the snapshot benchmarks at 5M orders")

func snapSizes() []int {
	if *snap5M {
		return append(slices.Clone(SnapSizes), BigOrders)
	}
	return SnapSizes
}

func BenchmarkSnapshotTake(b *testing.B)      { BenchSnapshotTake(b, snapSizes()) }
func BenchmarkSnapshotTakeNoLog(b *testing.B) { BenchSnapshotTakeNoLog(b, snapSizes()) }
func BenchmarkSnapshotRestore(b *testing.B)   { BenchSnapshotRestore(b, snapSizes()) }
func BenchmarkSnapshotWalk(b *testing.B)      { BenchSnapshotWalk(b, snapSizes()) }
