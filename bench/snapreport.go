package bench

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/measure"
	"github.com/matchlog/matchlog/snapshot"
)

// SnapOptions configure [SnapshotReport].
type SnapOptions struct {
	Orders  int // resting orders in the book (default 1M)
	Workers int // parallel workers; 0 measures the linear take only
	Takes   int // timed takes of each kind, and restores (default 7)
	MTU     int // default SnapMTU (the node's stop-the-world snapshot MTU)
	Seed    uint64
	// Progress, if not nil, receives a line per stage.
	Progress io.Writer
}

// SnapReport is the snapshot report: take and restore of the snapshot
// benchmark book ([SnapshotBook]), one JSON object.
type SnapReport struct {
	Date       string `json:"date"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`

	Orders  int `json:"orders"`
	Workers int `json:"workers"`
	MTU     int `json:"mtu"`
	Takes   int `json:"takes"`

	// Takes against a drain-only reader, linear and parallel alternating
	// in one run; each figure the median over the takes. Speedup is the
	// median of the per-round ratios linear/parallel.
	LinearNsPerOrder   float64 `json:"linear_ns_per_order"`
	ParallelNsPerOrder float64 `json:"parallel_ns_per_order"`
	Speedup            float64 `json:"speedup"`
	// The process's CPU time during the takes (all threads: the taker, the
	// workers, the drain; CLOCK_PROCESS_CPUTIME_ID, Linux only, else 0),
	// medians per resting order; CoresBusy is the median over parallel
	// takes of CPU time / wall time. SpeedupBound is the speedup the
	// parallel take's CPU would allow with every core it can use busy all
	// the time: the linear take's wall time over the parallel CPU spread
	// on min(GOMAXPROCS, workers+1) cores. Where a take's CPU exceeds the
	// linear take's, that work bounds the speedup whatever the scheduling.
	LinearCPUNsPerOrder   float64 `json:"linear_cpu_ns_per_order"`
	ParallelCPUNsPerOrder float64 `json:"parallel_cpu_ns_per_order"`
	CoresBusy             float64 `json:"cores_busy"`
	SpeedupBound          float64 `json:"speedup_bound"`
	// Take duration of the configured mode (parallel when Workers > 0).
	TakeMsP50       float64 `json:"take_ms_p50"`
	TakeMsP99       float64 `json:"take_ms_p99"`
	LinearTakeMsP50 float64 `json:"linear_take_ms_p50"`

	// Restore of a captured stream into a fresh engine, in a separate
	// pass; the median over Takes restores.
	RestoreNsPerOrder float64 `json:"restore_ns_per_order"`

	WireBytesPerOrder float64 `json:"wire_bytes_per_order"` // log bytes of one snapshot / orders
	HeapBytesPerOrder float64 `json:"heap_bytes_per_order"` // live heap of the built book / orders
	BuildNsPerOrder   float64 `json:"build_ns_per_order"`
	// AllocsPerTake is the mean of the heap allocations (runtime.MemStats
	// Mallocs, all goroutines) over the timed takes of both kinds, after a
	// warm-up round; AllocsMaxTake the most in any one take. The takes'
	// own code allocates nothing (testing.AllocsPerRun in the snapshot
	// tests). The runtime's own caches are warmed first (see
	// warmWaitRecords); what the counter can still catch is the runtime's
	// background work, e.g. the scavenger growing its timer heap.
	AllocsPerTake float64 `json:"allocs_per_take"`
	AllocsMaxTake float64 `json:"allocs_max_take"`

	// Identical: every checked parallel take (one per round, untimed, read
	// frame by frame) equals the linear take byte for byte.
	Identical bool `json:"identical"`
	// StateHashEqual: every restore has the book's state hash.
	StateHashEqual bool `json:"state_hash_equal"`

	LoadAvgStart [3]float64 `json:"load_avg_start"`
	LoadAvg      [3]float64 `json:"load_avg"`
	Loaded       bool       `json:"loaded"` // load above the CPU count at start or end

	Targets map[string]Target `json:"targets"`
}

// SnapshotReport builds the snapshot benchmark book and measures takes
// (linear and, with workers, parallel, interleaved), byte identity,
// restore, wire size, heap and allocations.
func SnapshotReport(o SnapOptions) (*SnapReport, error) {
	if o.Orders <= 0 {
		o.Orders = MOrders
	}
	if o.Takes <= 0 {
		o.Takes = 7
	}
	if o.MTU == 0 {
		o.MTU = SnapMTU
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	logf := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench snapshot: "+format+"\n", args...)
		}
	}
	r := &SnapReport{Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(),
		Orders: o.Orders, Workers: o.Workers, MTU: o.MTU, Takes: o.Takes, LoadAvgStart: measure.LoadAvg()}

	logf("building %d orders through commands", o.Orders)
	h0 := liveHeap()
	t0 := time.Now()
	e, err := SnapshotBook(o.Orders, o.Seed)
	if err != nil {
		return nil, err
	}
	r.BuildNsPerOrder = float64(time.Since(t0).Nanoseconds()) / float64(o.Orders)
	r.HeapBytesPerOrder = float64(liveHeap()-h0) / float64(o.Orders)
	f := e.Clone()
	want := f.StateHash()

	logf("capturing the linear stream")
	ref, err := Capture(f, o.MTU)
	if err != nil {
		return nil, err
	}

	lin, err := NewSnapRig(o.MTU, 0)
	if err != nil {
		return nil, err
	}
	defer lin.Close()
	var par *SnapRig
	if o.Workers > 0 {
		if par, err = NewSnapRig(o.MTU, o.Workers); err != nil {
			return nil, err
		}
		defer par.Close()
	}
	wire, err := lin.Take(f) // warm-up
	if err != nil {
		return nil, err
	}
	r.WireBytesPerOrder = float64(wire) / float64(o.Orders)
	if par != nil {
		if _, err := par.Take(f); err != nil {
			return nil, err
		}
	}

	r.Identical = par != nil
	var linMs, parMs, ratios []float64
	var allocSum float64
	var linCPU, parCPU, busy []float64
	// timed takes f on rig and returns its wall time (ms), the heap
	// allocations meanwhile and the process's CPU time (ns; -1 where the
	// clock cannot be read).
	timed := func(rig *SnapRig) (float64, float64, float64, error) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, cok := measure.ProcessCPU()
		t := time.Now()
		_, err := rig.Take(f)
		d := time.Since(t)
		c1, _ := measure.ProcessCPU()
		runtime.ReadMemStats(&m1)
		cpu := -1.0
		if cok {
			cpu = float64((c1 - c0).Nanoseconds())
		}
		return float64(d.Nanoseconds()) / 1e6, float64(m1.Mallocs - m0.Mallocs), cpu, err
	}
	// One collection before the rounds, none between takes: a collection
	// empties the runtime's caches (sudogs among them), and refilling them
	// would be counted as a take's allocations. Takes allocate nothing, so
	// no collection starts during one.
	// Round 0 is a warm-up, not reported: the runtime starts the threads
	// and fills the caches the rounds need (a new OS thread costs the
	// runtime a few allocations, a goroutine's first wait on a channel
	// one). The collector is off during the rounds: takes allocate
	// nothing, so it would only run because of the harness's own small
	// allocations, and a cycle marking a book of hundreds of MB on the
	// other core would be charged to whichever take it overlapped (and its
	// start allocates goroutine records). Restores run with it on: their
	// garbage is part of their cost.
	runtime.GC()
	warmWaitRecords()
	gcPercent := debug.SetGCPercent(-1)
	for i := 0; i <= o.Takes; i++ {
		ms, allocs, cpu, err := timed(lin)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			linMs = append(linMs, ms)
			if cpu >= 0 {
				linCPU = append(linCPU, cpu)
			}
			r.AllocsMaxTake = max(r.AllocsMaxTake, allocs)
			allocSum += allocs
		}
		if par == nil {
			logf("round %d/%d: linear %.1f ms (%.0f allocations)", i, o.Takes, ms, allocs)
			continue
		}
		pms, pallocs, pcpu, err := timed(par)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			parMs = append(parMs, pms)
			if pcpu >= 0 {
				parCPU = append(parCPU, pcpu)
				busy = append(busy, pcpu/(pms*1e6))
			}
			ratios = append(ratios, ms/pms)
			r.AllocsMaxTake = max(r.AllocsMaxTake, pallocs)
			allocSum += pallocs
		}
		same, err := sameAs(par, f, ref)
		if err != nil {
			return nil, err
		}
		r.Identical = r.Identical && same
		logf("round %d/%d: linear %.1f ms (%.0f allocations), %d workers %.1f ms (%.0f allocations), identical %v", i, o.Takes, ms, allocs, o.Workers, pms, pallocs, same)
	}
	r.AllocsPerTake = allocSum / float64(len(linMs)+len(parMs))
	perOrder := func(ms float64) float64 { return ms * 1e6 / float64(o.Orders) }
	r.LinearNsPerOrder = perOrder(Median(linMs))
	r.LinearTakeMsP50 = Median(linMs)
	r.TakeMsP50, r.TakeMsP99 = Median(linMs), measure.Quantile(linMs, 0.99)
	if len(linCPU) > 0 {
		r.LinearCPUNsPerOrder = Median(linCPU) / float64(o.Orders)
	}
	if par != nil {
		r.ParallelNsPerOrder = perOrder(Median(parMs))
		r.Speedup = Median(ratios)
		r.TakeMsP50, r.TakeMsP99 = Median(parMs), measure.Quantile(parMs, 0.99)
		if len(parCPU) > 0 {
			r.ParallelCPUNsPerOrder = Median(parCPU) / float64(o.Orders)
			r.CoresBusy = Median(busy)
			cores := float64(min(runtime.GOMAXPROCS(0), o.Workers+1))
			r.SpeedupBound = r.LinearNsPerOrder / (r.ParallelCPUNsPerOrder / cores)
		}
	}

	debug.SetGCPercent(gcPercent)
	logf("restoring %d times", o.Takes)
	var restNs []float64
	r.StateHashEqual = true
	var l snapshot.Loader
	for range o.Takes {
		runtime.GC()
		t := time.Now()
		got, _, err := l.Load(ref.Source(), SnapLoad)
		d := time.Since(t)
		if err != nil {
			return nil, err
		}
		restNs = append(restNs, float64(d.Nanoseconds())/float64(o.Orders))
		r.StateHashEqual = r.StateHashEqual && got.StateHash() == want && got.Orders() == o.Orders
	}
	r.RestoreNsPerOrder = Median(restNs)
	runtime.KeepAlive(e)

	r.LoadAvg = measure.LoadAvg()
	r.Loaded = r.LoadAvgStart[0] > float64(r.NumCPU) || r.LoadAvg[0] > float64(r.NumCPU)
	r.targets()
	return r, nil
}

// sameAs takes f on rig reading every frame, and reports whether the frames
// equal ref's.
func sameAs(rig *SnapRig, f *engine.Frozen, ref Frames) (bool, error) {
	i, same := 0, true
	rig.Reader = func(p []byte) {
		if i >= len(ref) || !bytes.Equal(p, ref[i]) {
			same = false
		}
		i++
	}
	defer func() { rig.Reader = nil }()
	if _, err := rig.Take(f); err != nil {
		return false, err
	}
	return same && i == len(ref), nil
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func (r *SnapReport) targets() {
	// The targets of DESIGN.md §7 (the first round's were ≤ 25 ns, ≤ 120
	// ns and ≥ 1.6×).
	r.Targets = map[string]Target{
		"linear_ns_per_order":  {r.LinearNsPerOrder, "<= 15", r.LinearNsPerOrder <= 15},
		"restore_ns_per_order": {r.RestoreNsPerOrder, "<= 60", r.RestoreNsPerOrder <= 60},
		"wire_bytes_per_order": {r.WireBytesPerOrder, "<= 82", r.WireBytesPerOrder <= 82},
		"allocs_per_take":      {r.AllocsPerTake, "0", r.AllocsPerTake == 0},
		"state_hash_equal":     {b2f(r.StateHashEqual), "true", r.StateHashEqual},
	}
	if r.Workers > 0 {
		r.Targets["speedup"] = Target{r.Speedup, ">= 1.8", r.Speedup >= 1.8}
		r.Targets["identical"] = Target{b2f(r.Identical), "true", r.Identical}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// WriteTable prints the report for people.
func (r *SnapReport) WriteTable(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "snapshot: %d orders, MTU %d, %d workers, %d takes each (%s, GOMAXPROCS %d, %s)\n",
		r.Orders, r.MTU, r.Workers, r.Takes, r.GoVersion, r.GOMAXPROCS, r.Date)
	fmt.Fprintf(&b, "load average %.2f %.2f %.2f at start, %.2f %.2f %.2f at end\n",
		r.LoadAvgStart[0], r.LoadAvgStart[1], r.LoadAvgStart[2], r.LoadAvg[0], r.LoadAvg[1], r.LoadAvg[2])
	if r.Loaded {
		fmt.Fprintf(&b, "WARNING: load average above %d CPUs: these figures are upper bounds\n", r.NumCPU)
	}
	row := func(name, val, key string) {
		t, ok := r.Targets[key]
		mark := ""
		if ok {
			mark = "target " + t.Target + ": "
			if t.Met {
				mark += "met"
			} else {
				mark += "not met"
			}
		}
		fmt.Fprintf(&b, "  %-28s %-22s %s\n", name, val, mark)
	}
	row("linear take", fmt.Sprintf("%.1f ns/order", r.LinearNsPerOrder), "linear_ns_per_order")
	if r.Workers > 0 {
		row(fmt.Sprintf("parallel take, %d workers", r.Workers), fmt.Sprintf("%.1f ns/order", r.ParallelNsPerOrder), "")
		row("speedup", fmt.Sprintf("%.2fx", r.Speedup), "speedup")
		if r.ParallelCPUNsPerOrder > 0 {
			row("CPU linear / parallel", fmt.Sprintf("%.1f / %.1f ns/order", r.LinearCPUNsPerOrder, r.ParallelCPUNsPerOrder), "")
			row("cores busy, parallel", fmt.Sprintf("%.2f", r.CoresBusy), "")
			row("speedup, every core busy", fmt.Sprintf("%.2fx at most", r.SpeedupBound), "")
		}
		row("identical to linear", fmt.Sprint(r.Identical), "identical")
	}
	row("take time p50 / p99", fmt.Sprintf("%.1f / %.1f ms", r.TakeMsP50, r.TakeMsP99), "")
	row("restore", fmt.Sprintf("%.1f ns/order", r.RestoreNsPerOrder), "restore_ns_per_order")
	row("state hash equal", fmt.Sprint(r.StateHashEqual), "state_hash_equal")
	row("wire", fmt.Sprintf("%.1f B/order", r.WireBytesPerOrder), "wire_bytes_per_order")
	row("allocations per take", fmt.Sprintf("%.2f (most %.0f)", r.AllocsPerTake, r.AllocsMaxTake), "allocs_per_take")
	row("heap", fmt.Sprintf("%.1f B/order", r.HeapBytesPerOrder), "")
	row("book build", fmt.Sprintf("%.0f ns/order", r.BuildNsPerOrder), "")
	_, err := w.Write(b.Bytes())
	return err
}

// warmWaitRecords fills the runtime's caches of wait records (sudogs)
// before allocations are counted. A goroutine that blocks on a channel
// takes a record from its processor's cache and returns it to the cache of
// the processor it wakes on. In a parallel take the owner blocks on one
// processor and wakes on the other, again and again, so one cache drains
// into the other and, until the second overflows into the shared cache
// (128 records), each wait on the first allocates a record: tens of
// allocations over the first hundreds of takes, none after. A collection
// drops the shared cache. Parking 512 goroutines at once and waking them
// leaves both processors' caches and the shared one full, as a long-running
// node's are between collections.
func warmWaitRecords() {
	const n = 512
	release := make(chan struct{})
	var parked, done sync.WaitGroup
	parked.Add(n)
	done.Add(n)
	for range n {
		go func() {
			parked.Done()
			<-release
			done.Done()
		}()
	}
	parked.Wait()
	time.Sleep(20 * time.Millisecond) // each goes on from Done to block on release
	close(release)
	done.Wait()
}
