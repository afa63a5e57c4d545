package backup

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// BenchmarkDrill creates a backup of a node that took 200,000 orders, all
// resting (a snapshot after the first 100,000), and drills it; it reports
// the drill's figures (run it once: -bench Drill -benchtime 1x).
func BenchmarkDrill(b *testing.B) {
	const total, snapAt = 200_000, 100_000
	dir := filepath.Join(b.TempDir(), "node")
	var clock int64
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: svc, FileSyncLevel: 0, SnapshotMode: cluster.StopTheWorld, MaxBatch: 1024,
		Clock: func() int64 { clock += 1000; return clock }})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := n.Connect("aeron:ipc", 102)
	if err != nil {
		b.Fatal(err)
	}
	// A book that only grows: an instrument, then limit orders that never
	// cross (bids below 50,000, asks above), so the node holds every order.
	var c engine.Command
	var buf []byte
	seq := uint64(0)
	next := func(i int) {
		seq++
		if i == 0 {
			c = engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: seq, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}
			return
		}
		c = engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: uint64(i), Account: uint64(1 + i%16),
			Type: engine.Limit, TIF: engine.GTC, Qty: int64(1 + i%7)}
		if i%2 == 0 {
			c.Side, c.Price = engine.Buy, int64(49_999-i%40_000)
		} else {
			c.Side, c.Price = engine.Sell, int64(50_001+i%40_000)
		}
	}
	sent := 0
	send := func(k int) {
		for j := 0; j < k; j++ {
			next(sent)
			sent++
			if buf, err = wire.AppendCommand(buf[:0], &c); err != nil {
				b.Fatal(err)
			}
			if err := n.Offer(sess, buf); err != nil {
				b.Fatal(err)
			}
			if j%512 == 511 {
				drainNode(b, n)
			}
		}
		drainNode(b, n)
	}
	send(snapAt)
	if err := cluster.TakeSnapshot(n, time.Minute); err != nil {
		b.Fatal(err)
	}
	send(total - snapAt)
	if err := n.Close(); err != nil {
		b.Fatal(err)
	}
	es, err := enginesvc.ReadSnapshot(vfs.Default, dir, -1, false)
	if err != nil {
		b.Fatal(err)
	}
	if rest := svc.Engine().StateHash(); rest == 0 {
		b.Fatal("no state")
	}
	b.Logf("%d commands; the snapshot at %d holds %d resting orders", total, es.LogPosition, es.Orders)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bdir := filepath.Join(b.TempDir(), "bk")
		t0 := time.Now()
		m, err := Create(Options{From: dir, To: bdir})
		if err != nil {
			b.Fatal(err)
		}
		create := time.Since(t0)
		d, err := Drill(DrillOptions{Backup: bdir, WorkDir: filepath.Join(b.TempDir(), "restore")})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(d.RestoreBytes), "restore-bytes")
		b.ReportMetric(d.RestoreBytesPerSec, "restore-bytes/s")
		b.ReportMetric(float64(d.ReplayedPositions), "replayed-positions")
		b.ReportMetric(d.ReplayPositionsPerSec, "replay-positions/s")
		b.ReportMetric(d.DurationSeconds, "drill-s")
		b.ReportMetric(create.Seconds(), "create-s")
		b.Logf("S %d B %d, %d files %d bytes; drill %+v", m.S, m.B, len(m.Files), m.Bytes, *d)
	}
}

func drainNode(b *testing.B, n *cluster.Node) {
	for {
		w, err := n.DoWork()
		if err != nil {
			b.Fatal(err)
		}
		if w == 0 && n.Pending() == 0 {
			return
		}
	}
}
