package bench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/matchlog/matchlog/engine"
)

// Book sizes of the large-book benchmarks. The 5M sizes are skipped under
// -short: building a 5M-order book through commands takes several seconds.
const (
	SmallOrders = 1_000
	MOrders     = 1_000_000
	BigOrders   = 5_000_000
)

// BigBook is the spec of the large books (heap, clone, restore): orders
// spread at random over 10,000 levels a side (100 a level at 1M, 500 at 5M).
func BigBook(orders int) BookSpec {
	return BookSpec{Orders: orders, Levels: 10_000, Seed: 7}
}

// SmallBook is the spec of a small book: about 375 levels a side, like the
// mix's.
func SmallBook(orders int) BookSpec {
	return BookSpec{Orders: orders, Levels: 375, Seed: 7}
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("orders=%dM", n/1_000_000)
	case n >= 1_000 && n%1_000 == 0:
		return fmt.Sprintf("orders=%dk", n/1_000)
	}
	return fmt.Sprintf("orders=%d", n)
}

func skipBig(b *testing.B, n int) {
	if n >= BigOrders && testing.Short() {
		b.Skipf("%d-order book skipped under -short", n)
	}
}

func reportCmds(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "cmds/s")
	}
}

var defaultMix struct {
	once sync.Once
	m    *Mixed
	err  error
}

// DefaultMixedWorkload returns the mix [DefaultMixed] describes, generated
// once per process (about a second).
func DefaultMixedWorkload() (*Mixed, error) {
	defaultMix.once.Do(func() { defaultMix.m, defaultMix.err = NewMixed(DefaultMixed()) })
	return defaultMix.m, defaultMix.err
}

// MixedWarm is the number of stream commands applied, untimed, after each
// rebuild of the mix's engine. A fresh engine allocates a few times in the
// first ~400k commands of the default mix, each time some table reaches a
// new high-water mark (an index segment grows, a tree splits a node while
// its free list is still filling, a new account number), and not at all in
// the rest of the 1M-command stream.
const MixedWarm = 400_000

// BenchMixed runs exchange-core's mix (see [MixedSpec]), one command per op.
// When the 1M-command stream runs out, the engine is rebuilt and warmed up
// outside the timer. Steady state allocates nothing.
func BenchMixed(b *testing.B) {
	m, err := DefaultMixedWorkload()
	if err != nil {
		b.Fatal(err)
	}
	r := m.NewRunner(MixedWarm)
	b.ReportAllocs()
	bad := 0
	for b.Loop() {
		if r.Left() == 0 {
			b.StopTimer()
			r.Reset()
			b.StartTimer()
		}
		if !r.Step() {
			bad++
		}
	}
	reportCmds(b)
	if bad > 0 {
		b.Fatalf("%d commands of the mix not accepted", bad)
	}
}

func checkBatch(b *testing.B, what string, evs []engine.Event) {
	if len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
		b.Fatalf("%s not accepted: %+v", what, evs)
	}
}

// BenchInsert times passive GTC orders into a book of 1k and of 1M orders,
// one order per op. Every batch of inserts is cancelled outside the timer,
// so the book stays near its size.
func BenchInsert(b *testing.B) {
	for _, n := range []int{SmallOrders, MOrders} {
		b.Run(sizeName(n), func(b *testing.B) {
			spec := SmallBook(n)
			if n >= MOrders {
				spec = BigBook(n)
			}
			bk := BuildBook(spec)
			k := min(1<<14, max(n, 1024))
			ins := make([]engine.Command, k)
			cxl := make([]engine.Command, k)
			r := bk.Rand()
			for i := range k {
				id := bk.NextID + uint64(i)
				side := randSide(r)
				ins[i] = NewLimit(id, side, PassivePrice(side, 1+r.Int64N(int64(spec.Levels))), 1+r.Int64N(100), 1+r.Uint64N(1000))
				cxl[i] = Cancel(id)
			}
			timeBatches(b, bk.D, ins, cxl, "inserts")
		})
	}
}

// timeBatches applies the timed commands one per op, each of which must be
// accepted, and after each full pass applies the undo commands outside the
// timer to put the book back.
func timeBatches(b *testing.B, d *Driver, timed, undo []engine.Command, what string) {
	b.ReportAllocs()
	i, bad := 0, 0
	for b.Loop() {
		if i == len(timed) {
			b.StopTimer()
			for j := range undo {
				d.mustApply(&undo[j])
			}
			i = 0
			b.StartTimer()
		}
		evs := d.Apply(&timed[i])
		if len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
			bad++
		}
		i++
	}
	reportCmds(b)
	if bad > 0 {
		b.Fatalf("%d %s not accepted", bad, what)
	}
}

// BenchCancel times cancels of random resting orders of a book of 1k and of
// 1M orders, one per op. Each batch of cancelled orders is put back outside
// the timer.
func BenchCancel(b *testing.B) {
	for _, n := range []int{SmallOrders, MOrders} {
		b.Run(sizeName(n), func(b *testing.B) {
			spec := SmallBook(n)
			if n >= MOrders {
				spec = BigBook(n)
			}
			spec.Keep = true
			bk := BuildBook(spec)
			k := min(1<<14, n/2)
			perm := bk.Rand().Perm(len(bk.Placed))[:k]
			cxl := make([]engine.Command, k)
			put := make([]engine.Command, k)
			for i, j := range perm {
				p := bk.Placed[j]
				cxl[i] = Cancel(p.ID)
				put[i] = NewLimit(p.ID, p.Side, p.Price, p.Qty, 1)
			}
			timeBatches(b, bk.D, cxl, put, "cancels")
		})
	}
}

// BenchCancelCrowded times a cancel in the middle of one crowded level of
// 100 and of 100,000 orders, each followed by the same order id added back
// at the tail of that level (which keeps the level's size): op k cancels id
// n/2 + k mod n/2, which is always the order of rank n/2 - 1, so every
// cancel hits the middle of the level. The two sizes should cost the same:
// a cancel finds its slot through the index and leaves a tombstone. The
// clone variants take a [engine.Engine.Clone] before each op, so every
// cancel is the first write to its level after a clone and pays that
// write's copy-on-write.
func BenchCancelCrowded(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		for _, clone := range []bool{false, true} {
			name := fmt.Sprintf("orders_per_level=%d", n)
			if clone {
				name += "/after_clone"
			}
			b.Run(name, func(b *testing.B) {
				d := NewDriver()
				price := PassivePrice(engine.Buy, 5)
				for id := uint64(1); id <= uint64(n); id++ {
					c := NewLimit(id, engine.Buy, price, 1, 1)
					d.mustApply(&c)
				}
				half := uint64(n / 2)
				var cxl, add engine.Command
				var f *engine.Frozen
				k := uint64(0)
				b.ReportAllocs()
				for b.Loop() {
					if clone {
						f = d.E.Clone()
					}
					id := half + k%half
					cxl, add = Cancel(id), NewLimit(id, engine.Buy, price, 1, 1)
					checkBatch(b, "cancel", d.Apply(&cxl))
					checkBatch(b, "add", d.Apply(&add))
					k++
				}
				runtime.KeepAlive(f)
				if dst := d.E.Depth(Instrument, engine.Buy, 1, nil); len(dst) != 1 || dst[0].Count != int64(n) {
					b.Fatalf("depth %+v, want one level of %d orders", dst, n)
				}
			})
		}
	}
}

// BenchAggressiveMatch times IOC takers that each fill exactly 1 or 10
// resting orders (see [Sweep]) in a book of 100k orders on 1,000 levels a
// side, one taker per op.
func BenchAggressiveMatch(b *testing.B) {
	for _, makers := range []int{1, 10} {
		b.Run(fmt.Sprintf("makers=%d", makers), func(b *testing.B) {
			s := NewSweep(100_000, 1000, makers, 3)
			takers := s.Takers()
			d := s.B.D
			b.ReportAllocs()
			i, trades := 0, 0
			for b.Loop() {
				if i == len(takers) {
					b.StopTimer()
					s.Refill()
					i = 0
					b.StartTimer()
				}
				evs := d.Apply(&takers[i])
				trades += countTrades(evs)
				i++
			}
			reportCmds(b)
			if trades != b.N*makers {
				b.Fatalf("%d trades in %d takers, want %d each", trades, b.N, makers)
			}
		})
	}
}

func countTrades(evs []engine.Event) int {
	n := 0
	for i := range evs {
		if evs[i].Kind == engine.EvTrade {
			n++
		}
	}
	return n
}

// DepthLevels is the number of levels a side of the depth books.
const DepthLevels = 1000

// DepthBook is the spec of the depth benchmark's books: DepthLevels levels
// a side with perLevel orders at each.
func DepthBook(perLevel int) BookSpec {
	return BookSpec{Levels: DepthLevels, PerLevel: perLevel, Seed: 5}
}

// BenchDepthTop10 times the top 10 bid levels of a book with 1 and with 500
// orders at each of its 1,000 levels a side. The two should cost the same:
// depth reads level totals, never orders.
func BenchDepthTop10(b *testing.B) {
	for _, per := range []int{1, 500} {
		b.Run(fmt.Sprintf("orders_per_level=%d", per), func(b *testing.B) {
			bk := BuildBook(DepthBook(per))
			e := bk.D.E
			dst := make([]engine.Level, 0, 10)
			b.ReportAllocs()
			for b.Loop() {
				dst = e.Depth(Instrument, engine.Buy, 10, dst[:0])
			}
			if len(dst) != 10 || dst[0].Count != int64(per) {
				b.Fatalf("depth %+v, want 10 levels of %d orders", dst, per)
			}
		})
	}
}

// buildTimed builds a large book and logs how long it took.
func buildTimed(b *testing.B, n int) (*Book, time.Duration) {
	t0 := time.Now()
	bk := BuildBook(BigBook(n))
	el := time.Since(t0)
	b.Logf("built %d orders through commands in %v (%.0f ns/order)", n, el.Round(time.Millisecond),
		float64(el.Nanoseconds())/float64(n))
	return bk, el
}

// BenchClone times Clone of an engine holding 1M and 5M orders, alone and
// followed by one write (an insert or a cancel, alternately), which pays the
// copy-on-write of the paths it touches. The book is built once per run:
// about 1µs an order here, so several seconds at 5M.
func BenchClone(b *testing.B) {
	for _, n := range []int{MOrders, BigOrders} {
		b.Run(sizeName(n), func(b *testing.B) {
			skipBig(b, n)
			bk, _ := buildTimed(b, n)
			d := bk.D
			extra := [2]engine.Command{NewLimit(bk.NextID, engine.Buy, PassivePrice(engine.Buy, 5), 1, 1), Cancel(bk.NextID)}
			b.Run("clone", func(b *testing.B) {
				b.ReportAllocs()
				var f *engine.Frozen
				for b.Loop() {
					f = d.E.Clone()
				}
				runtime.KeepAlive(f)
			})
			b.Run("write", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					checkBatch(b, "write", d.Apply(&extra[i&1]))
					i++
				}
				if i&1 == 1 {
					d.mustApply(&extra[1])
				}
			})
			b.Run("clone+write", func(b *testing.B) {
				b.ReportAllocs()
				var f *engine.Frozen
				i := 0
				for b.Loop() {
					f = d.E.Clone()
					checkBatch(b, "write", d.Apply(&extra[i&1]))
					i++
				}
				runtime.KeepAlive(f)
				if i&1 == 1 {
					d.mustApply(&extra[1])
				}
			})
		})
	}
}

var engineSink *engine.Engine

// BenchRestoreSorted times restoring an engine from the record stream of a
// 1M and a 5M-order book built through commands: SnapshotTo into memory
// ([Records]), then per op a new engine and its Restorer fed every record.
// Only the restore is timed; before each op the previous engine is dropped
// and the heap collected. Reports ns/order.
func BenchRestoreSorted(b *testing.B) {
	for _, n := range []int{MOrders, BigOrders} {
		b.Run(sizeName(n), func(b *testing.B) {
			skipBig(b, n)
			rec, err := snapshotOf(b, n)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				engineSink = nil
				runtime.GC()
				b.StartTimer()
				engineSink, err = rec.Restore()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rec.Resting)), "ns/order")
			if h := engineSink.StateHash(); h != rec.End.StateHash {
				b.Fatalf("restored state hash %#x, want %#x", h, rec.End.StateHash)
			}
			engineSink = nil
		})
	}
}

// snapshotOf builds an n-order book through commands and returns its
// record stream; the book itself is dropped.
func snapshotOf(b *testing.B, n int) (*Records, error) {
	bk, _ := buildTimed(b, n)
	rec := new(Records)
	if err := bk.D.E.SnapshotTo(rec); err != nil {
		return nil, err
	}
	if len(rec.Resting) != n {
		return nil, fmt.Errorf("bench: snapshot has %d resting orders, want %d", len(rec.Resting), n)
	}
	return rec, nil
}

// HeapAlloc returns the live heap after two full collections.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// HeapPerOrder builds the book spec describes into a fresh engine and
// returns the live heap it holds per resting order (heap after the build
// minus heap with an empty engine, after GC), and the build time.
func HeapPerOrder(spec BookSpec) (bytesPerOrder float64, build time.Duration) {
	empty := NewDriver()
	base := HeapAlloc()
	runtime.KeepAlive(empty)
	empty = nil
	d := NewDriver()
	bk := &Book{D: d, Spec: spec}
	t0 := time.Now()
	bk.Fill(d)
	build = time.Since(t0)
	after := HeapAlloc()
	runtime.KeepAlive(d)
	return (float64(after) - float64(base)) / float64(spec.Count()), build
}

// BenchHeapPerOrder builds 1M and 5M-order books through commands, one
// book per op, and reports the live heap per resting order of the last book
// (heap after GC minus that of an empty engine) and the build time alone
// (build-ns/order; ns/op also counts the collections around it).
func BenchHeapPerOrder(b *testing.B) {
	for _, n := range []int{MOrders, BigOrders} {
		b.Run(sizeName(n), func(b *testing.B) {
			skipBig(b, n)
			spec := BigBook(n)
			b.ReportAllocs()
			var per float64
			var build time.Duration
			for b.Loop() {
				p, el := HeapPerOrder(spec)
				per, build = p, build+el
			}
			b.ReportMetric(per, "B/order")
			b.ReportMetric(float64(build.Nanoseconds())/float64(b.N)/float64(n), "build-ns/order")
		})
	}
}
