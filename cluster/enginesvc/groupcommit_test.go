package enginesvc_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestGroupCommit checks that one archive sync covers every message
// sequenced in a duty cycle: with b messages waiting per cycle the log is
// synced about once per b messages, and every command's events wait for it.
func TestGroupCommit(t *testing.T) {
	cmds, _ := stream(5, 1024, false)
	for _, batch := range []int{1, 16, 256} {
		h := newHarness(t, vfs.NewMem(), cluster.StopTheWorld, 1)
		h.opts.MaxBatch = batch
		h.mustOpen()
		before := h.node.Stats()
		if err := h.submit(cmds); err != nil {
			t.Fatal(err)
		}
		st := h.node.Stats()
		syncs := st.LogSyncs - before.LogSyncs
		want := int64((len(cmds) + batch - 1) / batch)
		if syncs > want+4+int64(len(cmds)/100) { // + term rollovers (a block never crosses a term)
			t.Fatalf("batch %d: %d syncs for %d commands, want about %d", batch, syncs, len(cmds), want)
		}
		if len(h.released) == 0 || st.DurableLog != st.LogPosition {
			t.Fatalf("batch %d: released %d, durable %d of %d", batch, len(h.released), st.DurableLog, st.LogPosition)
		}
		t.Logf("batch %4d: %d commands, %d syncs (%.1f commands per sync)", batch, len(cmds), syncs, float64(len(cmds))/float64(syncs))
		h.close()
	}
}

// BenchmarkGroupCommit measures sequencing + apply + archive write + sync
// + release on the real file system (b.TempDir) at sync levels 1 and 2,
// with 1, 64 or 1024 commands arriving per duty cycle.
//
//	go test -run XXX -bench GroupCommit ./cluster/enginesvc
func BenchmarkGroupCommit(b *testing.B) {
	cmds, _ := stream(9, 1<<14, false)
	for _, level := range []int{1, 2} {
		for _, batch := range []int{1, 64, 1024} {
			b.Run(fmt.Sprintf("level=%d/batch=%d", level, batch), func(b *testing.B) {
				h := newHarness(b, vfs.Default, cluster.StopTheWorld, level)
				h.opts.Dir = b.TempDir()
				h.opts.TermLength = 16 << 20
				h.opts.SegmentLength = 128 << 20
				h.opts.MaxBatch = batch
				h.opts.Clock = nil
				var lat time.Duration
				worst := time.Duration(0)
				if err := h.open(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				start := h.node.Stats()
				for i := 0; i < b.N; i += batch {
					k := min(batch, b.N-i)
					j := i % (len(cmds) - batch)
					t0 := time.Now()
					if err := h.submit(cmds[j : j+k]); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					lat += d
					worst = max(worst, d)
				}
				b.StopTimer()
				st := h.node.Stats()
				syncs := st.LogSyncs - start.LogSyncs
				b.ReportMetric(float64(b.N)/float64(max(syncs, 1)), "cmds/sync")
				b.ReportMetric(float64(lat.Microseconds())/float64(max(syncs, 1)), "µs/cycle")
				b.ReportMetric(float64(worst.Microseconds()), "worst-µs/cycle")
				h.close()
			})
		}
	}
}
