package engine

import (
	"math/rand"
	"runtime"
	"sync"
	"testing"

	"github.com/matchlog/matchlog/internal/invariants"
)

// scaled shrinks a book size for -short runs and for invariants builds,
// which check the whole engine after every command.
func scaled(n int) int {
	if testing.Short() || invariants.Enabled {
		return n / 20
	}
	return n
}

// buildRandom fills an engine with n resting orders on one instrument, in
// random arrival order, and returns it with the next source sequence.
func buildRandom(t testing.TB, n int, seed int64) (*Engine, uint64) {
	e := New()
	seq := uint64(1)
	e.Apply(&Command{Kind: CmdDefineInstrument, Source: 1, Seq: seq, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20})
	r := rand.New(rand.NewSource(seed))
	for id := 1; id <= n; id++ {
		seq++
		c := Command{Kind: CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: uint64(id), Account: uint64(r.Intn(20) + 1),
			Type: Limit, TIF: GTC, Qty: int64(r.Intn(9) + 1)}
		if r.Intn(2) == 0 {
			c.Side, c.Price = Buy, int64(1000-r.Intn(200))
		} else {
			c.Side, c.Price = Sell, int64(1001+r.Intn(200))
		}
		if ev := e.Apply(&c); ev[0].Kind != EvAccepted {
			t.Fatalf("build: %+v", ev[0])
		}
	}
	return e, seq
}

// TestCloneConcurrent reads frozen views on other goroutines while the
// writer keeps trading: each view must keep the state it had when it was
// taken. Run it with -race.
func TestCloneConcurrent(t *testing.T) {
	e, seq := buildRandom(t, scaled(20000), 1)
	r := rand.New(rand.NewSource(2))
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for round := 0; round < 8; round++ {
		want := e.StateHash()
		f := e.Clone()
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := f.StateHash(); got != want {
					errs <- "frozen hash changed while the writer went on"
				}
				var sum uint64
				for _, p := range f.Partitions(4) {
					_, h, _ := p.Emit(nil)
					sum += h
				}
				if sum+f.NonOrderHash() != want {
					errs <- "partition hashes do not add up to the state hash"
				}
			}()
		}
		for i := 0; i < 3000; i++ {
			seq++
			id := uint64(r.Intn(scaled(20000)) + 1)
			c := Command{Kind: CmdModify, Source: 1, Seq: seq, Instrument: 1, OrderID: id, Price: int64(900 + r.Intn(200)), Qty: int64(r.Intn(9) + 1)}
			if i%3 == 0 {
				c = Command{Kind: CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: uint64(100000 + round*10000 + i), Account: 3,
					Side: Side(r.Intn(2) + 1), Type: Limit, TIF: GTC, Price: int64(950 + r.Intn(100)), Qty: 5}
			}
			e.Apply(&c)
		}
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Fatal(s)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCloneIsConstantTime checks that a clone copies no orders: cloning a
// book of 200k orders allocates the same as cloning a book of 2k.
func TestCloneIsConstantTime(t *testing.T) {
	small, _ := buildRandom(t, 200, 3)
	big, _ := buildRandom(t, scaled(200000), 3)
	a := testing.AllocsPerRun(20, func() { small.Clone() })
	b := testing.AllocsPerRun(20, func() { big.Clone() })
	if a != b {
		t.Fatalf("clone allocations depend on book size: %v at 200 orders, %v at %d", a, b, big.Orders())
	}
}

// TestSnapshotAllocs: streaming the state allocates nothing per order.
func TestSnapshotAllocs(t *testing.T) {
	e, _ := buildRandom(t, scaled(50000), 4)
	var h Hasher
	n := testing.AllocsPerRun(5, func() {
		if err := e.SnapshotTo(&h); err != nil {
			t.Fatal(err)
		}
	})
	if n > 0 {
		t.Fatalf("SnapshotTo allocates %v times per take", n)
	}
	f := e.Clone()
	parts := f.Partitions(4)
	n = testing.AllocsPerRun(5, func() {
		for _, p := range parts {
			if _, _, err := p.Emit(&h); err != nil {
				t.Fatal(err)
			}
		}
	})
	if n > 0 {
		t.Fatalf("Partition.Emit allocates %v times per take", n)
	}
}

// TestSnapshotWithoutOrders: the stream without orders is the full stream
// minus the resting records, and its End hash plus the partitions' sums is
// the state hash.
func TestSnapshotWithoutOrders(t *testing.T) {
	e, _ := buildRandom(t, scaled(20000), 6)
	e.Apply(&Command{Kind: CmdNewOrder, Source: 2, Seq: 1, Instrument: 1, OrderID: 1 << 40, Account: 1,
		Side: Buy, Type: Stop, TIF: IOC, Ref: RefMark, Stop: 2000, Qty: 1})
	f := e.Clone()
	var full, part Hasher
	if err := f.SnapshotTo(&full); err != nil {
		t.Fatal(err)
	}
	if err := f.SnapshotWithoutOrders(&part); err != nil {
		t.Fatal(err)
	}
	if part.Orders != 0 || part.Triggers != full.Triggers || part.Sources != full.Sources || part.Instruments != full.Instruments {
		t.Fatalf("without orders: %+v, full: %+v", part, full)
	}
	var sum uint64
	for _, p := range f.Partitions(3) {
		_, h, _ := p.Emit(nil)
		sum += h
	}
	if part.EndHash != f.NonOrderHash() || part.EndHash+sum != full.EndHash || full.EndHash != e.StateHash() {
		t.Fatalf("hashes: without orders %x, non-order %x, +partitions %x, full %x", part.EndHash, f.NonOrderHash(), part.EndHash+sum, full.EndHash)
	}
}

// TestFirstWriteAfterCloneIsBounded: after a clone, a cancel in the middle
// of a 100,000-order level copies the level, its list of segment pointers,
// the one segment and the one chunk it writes, never the level's orders or
// its whole chunk list: a few KiB of the level's 3.2 MB of slots. The
// frozen view keeps the order.
func TestFirstWriteAfterCloneIsBounded(t *testing.T) {
	n := uint64(scaled(100_000))
	e := New()
	seq := uint64(1)
	e.Apply(&Command{Kind: CmdDefineInstrument, Source: 1, Seq: seq, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	for id := uint64(1); id <= n; id++ {
		seq++
		if ev := e.Apply(&Command{Kind: CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: id, Account: 1,
			Side: Buy, Type: Limit, TIF: GTC, Price: 500, Qty: 1}); ev[0].Kind != EvAccepted {
			t.Fatalf("build: %+v", ev[0])
		}
	}
	f := e.Clone()
	before := f.StateHash()
	seq++
	c := Command{Kind: CmdCancel, Source: 1, Seq: seq, Instrument: 1, OrderID: n / 2}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	ev := e.Apply(&c)
	runtime.ReadMemStats(&m1)
	if ev[0].Kind != EvAccepted {
		t.Fatalf("cancel: %+v", ev[0])
	}
	// The copies: the level, its list of segment pointers (8 B a 2,048
	// orders), one segment (520 B) and one chunk (2 KiB).
	if got, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(8<<10); got > limit {
		t.Fatalf("first write after a clone allocated %d bytes, want at most %d (a level holds %d)", got, limit, n*32)
	}
	t.Logf("first write after a clone allocated %d bytes", m1.TotalAlloc-m0.TotalAlloc)
	if f.StateHash() != before || f.Orders() != n || uint64(e.Orders()) != n-1 {
		t.Fatalf("frozen view changed: %d orders, hash %x, was %x", f.Orders(), f.StateHash(), before)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCloneRefusesUsedUpEpochs: a chunk entry holds 48 bits of epoch, so
// the clone that would pass them panics rather than wrap to an epoch a
// frozen view's chunks may carry.
func TestCloneRefusesUsedUpEpochs(t *testing.T) {
	e := New()
	e.lp.epoch = maxChunkEpoch - 1
	e.Clone() // the last epoch a chunk entry holds
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a clone past the chunk entries' epochs did not panic")
		}
	}()
	e.Clone()
}
