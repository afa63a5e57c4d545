package archivebench

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/matchlog/matchlog/archive"
)

// benchBytes is what one benchmark iteration records (and writes raw):
// 64 MiB, or MATCHLOG_ARCHIVE_BENCH_BYTES.
func benchBytes() int64 {
	if v, err := strconv.ParseInt(os.Getenv("MATCHLOG_ARCHIVE_BENCH_BYTES"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 64 << 20
}

// BenchmarkRecord measures recording throughput on the OS file system in a
// temp dir at 1 MiB and 16 MiB blocks and sync levels 0, 1, 2, each next to
// a raw baseline: the same blocks written with the same syncs into a
// preallocated file. The publisher filling the log is not timed. Compare
// the MB/s of .../recorder and .../raw; see also BenchReport.
func BenchmarkRecord(b *testing.B) {
	n := benchBytes()
	rig, err := NewBenchRig()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, block := range []int{1 << 20, 16 << 20} {
		for level := range 3 {
			name := fmt.Sprintf("block=%s/sync=%d", sizeName(block), level)
			b.Run(name+"/recorder", func(b *testing.B) {
				b.SetBytes(n)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					if _, err := rig.RecordRun(dir, n, block, level, archive.DefaultSegmentLength, timer(b)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
			b.Run(name+"/raw", func(b *testing.B) {
				b.SetBytes(n)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					if _, err := RawRun(dir, n, block, level, rig.Buffer(), timer(b)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

// timer runs the benchmark's timer only in the timed sections of a run.
func timer(b *testing.B) func(bool) {
	return func(on bool) {
		if on {
			b.StartTimer()
		} else {
			b.StopTimer()
		}
	}
}

// TestBenchReport runs BenchReport on a small size to check its shape.
func TestBenchReport(t *testing.T) {
	if testing.Short() {
		t.Skip("writes to disk")
	}
	r, err := BenchReport(BenchOptions{Bytes: 4 << 20, Dir: t.TempDir(), Blocks: []int{1 << 20}, SyncLevels: []int{0, 1}, Runs: 1, SegmentLength: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 2 || r.Results[0].MBPerS <= 0 || r.Results[1].RawMBPerS <= 0 || r.Results[0].Ratio <= 0 {
		t.Fatalf("%+v", r)
	}
}
