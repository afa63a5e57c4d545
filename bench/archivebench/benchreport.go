package archivebench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/measure"
	"github.com/matchlog/matchlog/internal/vfs"
)

// BenchOptions configure BenchReport.
type BenchOptions struct {
	// Bytes recorded (and written raw) per run; 0 means 256 MiB.
	Bytes int64
	// Dir is where the runs' temporary directories go (os.TempDir if
	// empty). It should be on the disk under test.
	Dir string
	// Blocks are the FileIoMaxLength values measured (1 MiB and 16 MiB if
	// nil), SyncLevels the sync levels (0, 1, 2 if nil).
	Blocks     []int
	SyncLevels []int
	// Runs of each measurement; the report gives medians (4 if 0). The
	// first of each recorder/raw pair alternates, so an even number of
	// runs balances any cost of going first.
	Runs int
	// SegmentLength of the recordings (archive.DefaultSegmentLength if 0).
	SegmentLength int32
	// Progress, if not nil, receives a line per run.
	Progress io.Writer
}

// BenchResult is the outcome for one block size and sync level.
type BenchResult struct {
	Block     int     `json:"block"`
	Sync      int     `json:"sync"`
	MBPerS    float64 `json:"mb_per_s"`     // recorder, median of the runs
	RawMBPerS float64 `json:"raw_mb_per_s"` // raw positional writes, median
	Ratio     float64 `json:"ratio"`        // MBPerS / RawMBPerS
}

// BenchResults is what BenchReport returns.
type BenchResults struct {
	Results []BenchResult `json:"results"`
	// LoadAvg is the load average (1, 5, 15 minutes, [measure.LoadAvg])
	// at the end of the runs, LoadAvgStart at their start; zeros where
	// unavailable.
	LoadAvg      [3]float64 `json:"load_avg"`
	LoadAvgStart [3]float64 `json:"load_avg_start"`
	Bytes        int64      `json:"bytes"`
	Runs         int        `json:"runs"`
	NumCPU       int        `json:"num_cpu"`
}

// Bench parameters: 8 KiB frames fill a 16 MiB term exactly (no padding),
// and the publisher runs one term ahead of the recorder, so every block
// has its full FileIoMaxLength (up to the term length).
const (
	benchTermLength = 16 << 20
	benchMTU        = 8192
)

// BenchReport measures the recorder against raw writes on the OS file
// system: for each block size and sync level it records opts.Bytes of 8 KiB
// frames from an in-memory log into a new archive (start, every block, the
// segment files it creates, stop), and separately writes the same number
// of bytes in blocks of the same size with the same syncs into a file
// preallocated beforehand. Only the recorder's own time is counted, not the
// publisher filling the log. Recorder and raw runs alternate (raw first on
// odd rounds) after an uncounted warm-up run of each, and the medians are
// reported with the load average.
func BenchReport(opts BenchOptions) (*BenchResults, error) {
	if opts.Bytes <= 0 {
		opts.Bytes = 256 << 20
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	if opts.Blocks == nil {
		opts.Blocks = []int{1 << 20, 16 << 20}
	}
	if opts.SyncLevels == nil {
		opts.SyncLevels = []int{0, 1, 2}
	}
	if opts.Runs <= 0 {
		opts.Runs = 4
	}
	if opts.SegmentLength == 0 {
		opts.SegmentLength = archive.DefaultSegmentLength
	}
	rig, err := NewBenchRig()
	if err != nil {
		return nil, err
	}
	res := &BenchResults{Bytes: opts.Bytes, Runs: opts.Runs, NumCPU: numCPU(), LoadAvgStart: measure.LoadAvg()}
	// Warm up (page cache, file system, the log's pages); not counted.
	if _, err := rig.RecordRun(opts.Dir, opts.Bytes, opts.Blocks[0], 0, opts.SegmentLength, nil); err != nil {
		return nil, err
	}
	if _, err := RawRun(opts.Dir, opts.Bytes, opts.Blocks[0], 0, rig.Buffer(), nil); err != nil {
		return nil, err
	}
	type key struct{ block, sync int }
	rec, raw := map[key][]float64{}, map[key][]float64{}
	mb := float64(opts.Bytes) / 1e6
	for run := range opts.Runs {
		for _, block := range opts.Blocks {
			for _, level := range opts.SyncLevels {
				k := key{block, level}
				doRec := func() error {
					d, err := rig.RecordRun(opts.Dir, opts.Bytes, block, level, opts.SegmentLength, nil)
					if err == nil {
						rec[k] = append(rec[k], mb/d.Seconds())
					}
					return err
				}
				doRaw := func() error {
					d, err := RawRun(opts.Dir, opts.Bytes, block, level, rig.Buffer(), nil)
					if err == nil {
						raw[k] = append(raw[k], mb/d.Seconds())
					}
					return err
				}
				first, second := doRec, doRaw
				if run%2 == 1 {
					first, second = doRaw, doRec
				}
				for _, f := range []func() error{first, second} {
					if err := settle(opts.Dir, rig.Buffer()); err != nil {
						return nil, err
					}
					if err := f(); err != nil {
						return nil, err
					}
				}
				if opts.Progress != nil {
					fmt.Fprintf(opts.Progress, "bench archive: run %d block %d sync %d: recorder %.0f MB/s, raw %.0f MB/s\n",
						run+1, block, level, rec[k][len(rec[k])-1], raw[k][len(raw[k])-1])
				}
			}
		}
	}
	for _, block := range opts.Blocks {
		for _, level := range opts.SyncLevels {
			k := key{block, level}
			r := BenchResult{Block: block, Sync: level, MBPerS: median(rec[k]), RawMBPerS: median(raw[k])}
			if r.RawMBPerS > 0 {
				r.Ratio = r.MBPerS / r.RawMBPerS
			}
			res.Results = append(res.Results, r)
		}
	}
	res.LoadAvg = measure.LoadAvg()
	return res, nil
}

// WriteTable prints the results as a table.
func (r *BenchResults) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "%-10s %-5s %12s %12s %7s\n", "block", "sync", "MB/s", "raw MB/s", "ratio"); err != nil {
		return err
	}
	for _, x := range r.Results {
		if _, err := fmt.Fprintf(w, "%-10s %-5d %12.0f %12.0f %7.3f\n", sizeName(x.Block), x.Sync, x.MBPerS, x.RawMBPerS, x.Ratio); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d MiB per run, median of %d runs, %d CPUs, load average %v (start %v)\n",
		r.Bytes>>20, r.Runs, r.NumCPU, r.LoadAvg, r.LoadAvgStart)
	return err
}

func sizeName(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}

func median(v []float64) float64 { return measure.Median(v) }

func numCPU() int { return runtime.NumCPU() }

// BenchRig is an in-memory log and publication that feed recordings in
// benchmarks. It is reused across runs: each recording starts where the
// last one stopped.
type BenchRig struct {
	log     *logbuf.Log
	pub     *logbuf.ExclusivePublication
	payload []byte
	buf     []byte
}

// NewBenchRig allocates the log (three 16 MiB terms).
func NewBenchRig() (*BenchRig, error) {
	l, err := logbuf.New(benchTermLength, benchMTU, 0, 1, 1)
	if err != nil {
		return nil, err
	}
	g := &BenchRig{log: l, pub: l.Publication(), payload: make([]byte, benchMTU-logbuf.HeaderLength), buf: make([]byte, benchTermLength)}
	for i := range g.payload {
		g.payload[i] = byte(i*7 + 3)
	}
	for i := range g.buf {
		g.buf[i] = byte(i * 13)
	}
	return g, nil
}

// Buffer is a term-sized buffer for raw writes.
func (g *BenchRig) Buffer() []byte { return g.buf }

// RecordRun records n bytes (rounded up to whole 8 KiB frames) into a new
// archive under parent (removed afterwards, then the file systems synced,
// so that runs do not pay for each other's housekeeping) and returns the
// time spent in the recorder: StartRecording, every Poll and Stop. timed,
// if not nil, is called with true when a timed section starts and with
// false when it ends (a benchmark starts and stops its timer there).
func (g *BenchRig) RecordRun(parent string, n int64, block, level int, segLen int32, timed func(bool)) (time.Duration, error) {
	if timed == nil {
		timed = func(bool) {}
	}
	dir, err := os.MkdirTemp(parent, "archive-bench-")
	if err != nil {
		return 0, err
	}
	defer func() {
		os.RemoveAll(dir)
		syncAll()
	}()
	a, err := archive.Open(vfs.Default, dir, archive.Options{SegmentLength: segLen, FileIoMaxLength: block, FileSyncLevel: archive.SyncLevel(level),
		CatalogSyncLevel: archive.SyncLevel(level), MarkErrorBufferLength: 4096})
	if err != nil {
		return 0, err
	}
	img := g.log.ImageAt(g.pub.Position())
	timed(true)
	t0 := time.Now()
	r, err := a.StartRecording(archive.Source{Log: g.log, Image: img, Channel: "aeron:ipc?alias=bench"})
	elapsed := time.Since(t0)
	timed(false)
	if err != nil {
		a.Close()
		return 0, err
	}
	end := img.Position() + n
	for r.Position() < end {
		g.pub.SetPositionLimit(img.Position() + benchTermLength)
		for {
			pos, err := g.pub.Offer(g.payload)
			if err != nil {
				a.Close()
				return 0, err
			}
			if pos < 0 || pos >= end {
				break
			}
		}
		timed(true)
		t0 = time.Now()
		_, err := r.Record(g.pub.Position())
		elapsed += time.Since(t0)
		timed(false)
		if err != nil {
			a.Close()
			return 0, err
		}
	}
	timed(true)
	t0 = time.Now()
	err = r.Stop()
	elapsed += time.Since(t0)
	timed(false)
	if err != nil {
		a.Close()
		return 0, err
	}
	return elapsed, a.Close()
}

// RawRun writes n bytes in blocks of block bytes from buf (reused) into a
// file under parent, preallocated to n bytes beforehand, syncing after
// each block as the recorder does at sync level level, and returns the
// time of the writes and syncs. The file is removed afterwards and the file
// systems synced. timed is as for RecordRun.
func RawRun(parent string, n int64, block, level int, buf []byte, timed func(bool)) (time.Duration, error) {
	if timed == nil {
		timed = func(bool) {}
	}
	block = min(block, len(buf))
	f, err := vfs.Default.Create(filepath.Join(parent, fmt.Sprintf("raw-bench-%d-%d", os.Getpid(), time.Now().UnixNano())))
	if err != nil {
		return 0, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
		syncAll()
	}()
	if err := f.Preallocate(n); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	timed(true)
	defer timed(false)
	t0 := time.Now()
	for off := int64(0); off < n; off += int64(block) {
		m := min(int64(block), n-off)
		if _, err := f.WriteAt(buf[:m], off); err != nil {
			return 0, err
		}
		switch level {
		case 1:
			err = f.Sync()
		case 2:
			err = f.SyncAll()
		}
		if err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

// settle writes and removes an untimed scratch file before each timed run.
// On this project's VM the first 256 MiB written to the page cache after
// the previous run's files were removed and synced is often several times
// slower than the next (dd shows the same: 0.4-0.5 GB/s, then 2.6-2.9
// GB/s); without a settle write that penalty fell on whichever of recorder
// and raw ran first in a pair and made the sync-0 ratios meaningless.
func settle(parent string, buf []byte) error {
	_, err := RawRun(parent, settleBytes, len(buf), 0, buf, nil)
	return err
}

// settleBytes is the size of the scratch write before each timed run.
const settleBytes = 64 << 20
