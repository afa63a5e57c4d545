package clusterbench_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/bench/clusterbench"
	"github.com/matchlog/matchlog/cluster"
)

var (
	reportOrders = flag.String("pausereport.orders", "20000", "comma-separated book sizes of BenchmarkPauseReport (e.g. 1000000,5000000)")
	reportSync   = flag.String("pausereport.sync", "0,2", "comma-separated file sync levels of BenchmarkPauseReport")
	reportBlock  = flag.String("pausereport.block", "1048576,16777216", "comma-separated archive block lengths of BenchmarkPauseReport")
	reportRate   = flag.Int("pausereport.rate", 20_000, "commands a second of BenchmarkPauseReport")
)

func intList(tb testing.TB, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			tb.Fatalf("bad list %q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}

// BenchmarkPauseReport runs clusterbench.PauseReport for every combination of
// -pausereport.orders, -pausereport.sync, -pausereport.block and both
// snapshot modes. The default book is small, for a quick run; the issue's
// matrix is
//
//	go test -run XXX -bench PauseReport -benchtime 1x -timeout 2h ./cluster/enginesvc -pausereport.orders 1000000,5000000
//
// (or `matchlog bench cluster`).
func BenchmarkPauseReport(b *testing.B) {
	for _, orders := range intList(b, *reportOrders) {
		for _, sync := range intList(b, *reportSync) {
			for _, block := range intList(b, *reportBlock) {
				for _, mode := range []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld} {
					name := fmt.Sprintf("orders=%d/%s/sync=%d/block=%d", orders, clusterbench.ModeName(mode), sync, block)
					b.Run(name, func(b *testing.B) {
						var r *clusterbench.PauseResult
						for i := 0; i < b.N; i++ {
							var err error
							r, err = clusterbench.PauseReport(clusterbench.PauseOptions{Orders: orders, Mode: mode, SyncLevel: sync,
								FileIoMaxLength: block, Rate: *reportRate, Dir: b.TempDir()})
							if err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(r.NoSnapshotP99Ms, "nosnap-p99-ms")
						b.ReportMetric(r.PauseMsMax, "pause-max-ms")
						b.ReportMetric(r.TakeMs, "take-ms")
						b.ReportMetric(r.ArchiveWriteMs, "archive-ms")
						b.ReportMetric(r.TargetMs, "target-ms")
						b.Logf("met=%v load %.2f", r.Met, r.LoadAvg)
					})
				}
			}
		}
	}
}

// TestPauseReport runs a tiny report of each mode.
func TestPauseReport(t *testing.T) {
	var rs []*clusterbench.PauseResult
	for _, mode := range []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld} {
		r, err := clusterbench.PauseReport(clusterbench.PauseOptions{Orders: 3000, Mode: mode, SyncLevel: 0, Rate: 5000,
			Baseline: 50 * time.Millisecond, Lead: 20 * time.Millisecond, Tail: 20 * time.Millisecond, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if r.Commands == 0 || r.PauseMsMax <= 0 || r.NoSnapshotP99Ms <= 0 || r.SnapshotBytes < 3000*20 || r.TargetMs <= 0 {
			t.Errorf("implausible result %+v", r)
		}
		rs = append(rs, r)
	}
	if testing.Verbose() {
		clusterbench.WritePauseTable(os.Stdout, rs)
	}
}
