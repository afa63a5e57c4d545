package enginesvc_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

var (
	pauseOrders   = flag.Int("pause.orders", 200_000, "resting orders of BenchmarkSnapshotPause")
	pauseSnapTerm = flag.Int("pause.snapterm", 0, "Options.SnapshotTermLength of BenchmarkSnapshotPause (0: the default)")
)

// bookCommands are the commands that grow a non-crossing book of n resting
// orders on 8 instruments (as bench.SnapshotBook), from source 1.
func bookCommands(n int, seed uint64) []engine.Command {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []engine.Command
	seq := uint64(0)
	add := func(c engine.Command) {
		seq++
		c.Source, c.Seq = 1, seq
		out = append(out, c)
	}
	for i := 1; i <= 8; i++ {
		add(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: uint32(i), Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000})
	}
	for id := uint64(1); id <= uint64(n); id++ {
		c := engine.Command{Kind: engine.CmdNewOrder, Instrument: uint32(1 + rng.IntN(8)), OrderID: id,
			Account: 1 + rng.Uint64N(1000), Type: engine.Limit, TIF: engine.GTC, Qty: 1 + rng.Int64N(1000)}
		if rng.IntN(2) == 0 {
			c.Side, c.Price = engine.Buy, 10_000-int64(rng.IntN(5000))
		} else {
			c.Side, c.Price = engine.Sell, 10_001+int64(rng.IntN(5000))
		}
		add(c)
	}
	return out
}

// BenchmarkSnapshotPause measures the client-visible pause of a snapshot:
// commands arrive at a fixed rate (one every 20 µs, offered in arrival
// order by the duty-cycle loop), and each one's delay is from its arrival
// to the release of its events (durable at sync level 1 on b.TempDir).
// It reports the worst delay in a window around a snapshot of a book of
// -pause.orders resting orders, the p99 of the same traffic without a
// snapshot, and how long the snapshot took to write.
//
//	go test -run XXX -bench SnapshotPause -benchtime 1x ./cluster/enginesvc [-pause.orders 1000000]
func BenchmarkSnapshotPause(b *testing.B) {
	for _, c := range []struct {
		mode    cluster.SnapshotMode
		workers int
	}{{cluster.Pauseless, 0}, {cluster.Pauseless, 2}, {cluster.StopTheWorld, 0}} {
		name := map[cluster.SnapshotMode]string{cluster.Pauseless: "pauseless", cluster.StopTheWorld: "stop-the-world"}[c.mode]
		b.Run(fmt.Sprintf("orders=%d/%s/workers=%d", *pauseOrders, name, c.workers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				snapshotPause(b, c.mode, c.workers, *pauseOrders)
			}
		})
	}
}

func snapshotPause(b *testing.B, mode cluster.SnapshotMode, workers, orders int) {
	b.StopTimer()
	cmds := bookCommands(orders+40_000, 3)
	h := newHarness(b, vfs.Default, mode, 1)
	h.opts.Dir = b.TempDir()
	h.opts.TermLength, h.opts.SegmentLength, h.opts.FileIoMaxLength = 16<<20, 128<<20, 16<<20
	h.opts.MTU = 8192
	h.opts.MaxBatch = 4096
	h.opts.SnapshotTermLength = *pauseSnapTerm
	h.opts.Clock = nil
	h.svcOpts = enginesvc.Options{Workers: workers}
	released := map[uint64]time.Time{}
	h.opts.Egress = func(_ int64, msg []byte) {
		if wire.EventKind(msg) == engine.EvRelease {
			_, seq, _ := wire.DecodeRelease(msg)
			released[seq] = time.Now()
		}
	}
	if err := h.open(); err != nil {
		b.Fatal(err)
	}
	defer h.close()
	book := cmds[:orders+8]
	for len(book) > 0 {
		k := min(len(book), 4096)
		if err := h.submit(book[:k]); err != nil {
			b.Fatal(err)
		}
		book = book[k:]
	}
	live := cmds[orders+8:]
	run := func(cs []engine.Command, snapAt int) (delays []time.Duration) {
		const every = 20 * time.Microsecond
		t0 := time.Now()
		arrival := make([]time.Time, len(cs))
		next := 0
		var buf []byte
		for next < len(cs) || len(released) < len(cs) {
			now := time.Now()
			for next < len(cs) && t0.Add(time.Duration(next)*every).Before(now) {
				arrival[next] = t0.Add(time.Duration(next) * every)
				buf, _ = wire.AppendCommand(buf[:0], &cs[next])
				if err := h.node.Offer(h.sess, buf); err != nil {
					b.Fatal(err)
				}
				if next == snapAt {
					h.node.RequestSnapshot()
				}
				next++
			}
			if _, err := h.node.DoWork(); err != nil {
				b.Fatal(err)
			}
			if next == len(cs) && time.Since(now) > 30*time.Second {
				b.Fatal("commands not released")
			}
		}
		for i := range cs {
			delays = append(delays, released[cs[i].Seq].Sub(arrival[i]))
		}
		return delays
	}
	clear(released)
	base := run(live[:10_000], -1)
	clear(released)
	b.StartTimer()
	snap := run(live[10_000:40_000], 1_000)
	b.StopTimer()
	if err := h.node.AwaitSnapshot(time.Minute); err != nil {
		b.Fatal(err)
	}
	slices.Sort(base)
	p99 := base[len(base)*99/100]
	worst := slices.Max(snap)
	st := h.node.Stats()
	slices.Sort(snap)
	b.Logf("no snapshot: p50 %v p90 %v p99 %v max %v; with snapshot: p50 %v p99 %v max %v; %d syncs",
		base[len(base)/2], base[len(base)*9/10], p99, base[len(base)-1], snap[len(snap)/2], snap[len(snap)*99/100], worst, st.LogSyncs)
	b.ReportMetric(float64(p99.Microseconds()), "p99-no-snap-µs")
	b.ReportMetric(float64(worst.Microseconds()), "worst-with-snap-µs")
	b.ReportMetric(float64(st.LastSnapshotWrite.Milliseconds()), "snapshot-write-ms")
	b.ReportMetric(float64(st.SnapshotBytes)/float64(orders), "snap-bytes/order")
}
