package bench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/measure"
)

// ReportOptions configure [EngineReport].
type ReportOptions struct {
	// Orders is the size of the large book behind the heap, clone and
	// restore figures (default [BigOrders]); smaller makes a quick run.
	Orders int
	// Runs is how many times each measurement runs (default 5); the report
	// gives medians.
	Runs int
	// Progress, if not nil, receives a line per stage.
	Progress io.Writer
}

// Target is one figure's target and whether it was met.
type Target struct {
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

// Report is the engine report: the figures DESIGN.md §7 and issue 2 set
// targets for, each the median of Runs runs, with the conditions they were
// taken in. It serialises as one JSON object.
type Report struct {
	Date       string `json:"date"`
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	Runs       int    `json:"runs"`
	Orders     int    `json:"orders"` // size of the large book

	// Load average (1, 5, 15 minutes) at the start and at the end. A run
	// that starts or ends with the 1-minute load above the CPU count gives
	// upper bounds, not figures (Loaded).
	LoadAvgStart [3]float64 `json:"load_avg_start"`
	LoadAvg      [3]float64 `json:"load_avg"`
	Loaded       bool       `json:"loaded"`

	// The mix (see [MixedSpec]): throughput with no clock in the loop,
	// then latency per command read with the cheap clock, whose overhead
	// (one read, ClockOverheadNs) each latency includes.
	CmdsPerSec      float64 `json:"cmds_per_sec"`
	MixAllocs       float64 `json:"mix_allocs"` // allocations in a run, after warm-up
	MixAllocsPerCmd float64 `json:"mix_allocs_per_cmd"`
	P50Ns           float64 `json:"p50_ns"`
	P99Ns           float64 `json:"p99_ns"`
	P999Ns          float64 `json:"p999_ns"`
	Clock           string  `json:"clock"`
	ClockOverheadNs float64 `json:"clock_overhead_ns"`
	MixCommands     int     `json:"mix_commands"` // commands per run
	MixOrders       float64 `json:"mix_orders"`   // resting orders, average
	MixLevels       float64 `json:"mix_levels"`   // price levels, average
	MixTradesPerCmd float64 `json:"mix_trades_per_cmd"`

	// Top-10 depth on books of 1,000 levels a side with 1 and with 500
	// orders a level, measured alternately; the ratio is the median of the
	// per-round ratios.
	DepthTop10Ns           float64 `json:"depth_top10_ns"`
	DepthTop10CrowdedNs    float64 `json:"depth_top10_crowded_ns"`
	DepthTop10CrowdedRatio float64 `json:"depth_top10_crowded_ratio"`

	// Live heap per resting order (after GC, minus an empty engine) at 1M
	// and at Orders, and the time to build the large book through commands.
	HeapBytesPerOrder1M float64 `json:"heap_bytes_per_order_1m"`
	HeapBytesPerOrder   float64 `json:"heap_bytes_per_order"`
	BuildNsPerOrder     float64 `json:"build_ns_per_order"`

	// Clone of the large book (named for the 5M target; taken at Orders),
	// one insert right after a clone (it pays the copy-on-write of its
	// path), and the same insert with no clone before it.
	CloneNsAt5M        float64 `json:"clone_ns_at_5m"`
	WriteAfterCloneNs  float64 `json:"write_after_clone_ns"`
	WriteNs            float64 `json:"write_ns"`
	SnapshotNsPerOrder float64 `json:"snapshot_ns_per_order"` // SnapshotTo into memory
	RestoreNsPerOrder  float64 `json:"restore_ns_per_order"`

	Targets map[string]Target `json:"targets"`
	Notes   []string          `json:"notes,omitempty"`
}

// Median is [measure.Median].
func Median(xs []float64) float64 { return measure.Median(xs) }

// percentile returns the p-th percentile (0 < p < 1) of sorted ticks, in ns.
func percentile(sorted []uint32, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, int(math.Ceil(p*float64(len(sorted))))-1)
	return float64(sorted[max(i, 0)]) / TicksPerNs()
}

type reporter struct {
	opts ReportOptions
	r    *Report
	t0   time.Time
}

func (rp *reporter) logf(format string, args ...any) {
	if rp.opts.Progress != nil {
		fmt.Fprintf(rp.opts.Progress, "bench: %5.1fs  %s  (load %.2f)\n", time.Since(rp.t0).Seconds(),
			fmt.Sprintf(format, args...), measure.LoadAvg()[0])
	}
}

// EngineReport measures the engine and returns the report. At the default
// 5M orders it takes a minute or two and needs a few GB of memory.
func EngineReport(opts ReportOptions) (*Report, error) {
	if opts.Orders <= 0 {
		opts.Orders = BigOrders
	}
	if opts.Runs <= 0 {
		opts.Runs = 5
	}
	r := &Report{
		Date:       time.Now().UTC().Format(time.RFC3339),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU:     runtime.NumCPU(),
		Runs:       opts.Runs,
		Orders:     opts.Orders,
		Clock:      ClockName(),
	}
	r.LoadAvgStart = measure.LoadAvg()
	rp := &reporter{opts: opts, r: r, t0: time.Now()}
	r.ClockOverheadNs = ClockOverheadNs()
	steps := []func() error{rp.mixed, rp.depth, rp.heap1M, rp.big}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	r.LoadAvg = measure.LoadAvg()
	r.Loaded = r.LoadAvgStart[0] > float64(r.NumCPU) || r.LoadAvg[0] > float64(r.NumCPU)
	r.targets()
	rp.logf("done")
	return r, nil
}

func (r *Report) targets() {
	// The targets of DESIGN.md §7 (heap and restore were ≤ 110 B and ≤ 120
	// ns in the first round).
	r.Targets = map[string]Target{
		"cmds_per_sec":              {r.CmdsPerSec, ">= 5000000", r.CmdsPerSec >= 5e6},
		"mix_allocs_per_cmd":        {r.MixAllocsPerCmd, "0", r.MixAllocsPerCmd == 0},
		"heap_bytes_per_order":      {r.HeapBytesPerOrder, "<= 64", r.HeapBytesPerOrder <= 64},
		"depth_top10_crowded_ratio": {r.DepthTop10CrowdedRatio, "<= 2", r.DepthTop10CrowdedRatio <= 2},
		"clone_ns_at_5m":            {r.CloneNsAt5M, "<= 1000", r.CloneNsAt5M <= 1000},
		"restore_ns_per_order":      {r.RestoreNsPerOrder, "<= 60", r.RestoreNsPerOrder <= 60},
	}
	if r.Orders != BigOrders {
		r.Notes = append(r.Notes, fmt.Sprintf("heap, clone and restore taken at %d orders, not the targets' 5M", r.Orders))
	}
	if r.Loaded {
		r.Notes = append(r.Notes, "load average above the CPU count: timings are upper bounds")
	}
}

// mixed measures the mix: Runs throughput passes alternating with Runs
// latency passes, each over the whole stream on a fresh, warm engine.
func (rp *reporter) mixed() error {
	r := rp.r
	rp.logf("generating the mix")
	m, err := DefaultMixedWorkload()
	if err != nil {
		return err
	}
	r.MixOrders, r.MixLevels = m.AvgOrders, m.AvgLevels
	r.MixTradesPerCmd = float64(m.Trades) / float64(len(m.Stream))
	run := m.NewRunner(MixedWarm)
	n := run.Left()
	r.MixCommands = n
	lat := make([]uint32, n)
	var tput, allocs, p50, p99, p999 []float64
	var ms runtime.MemStats
	for i := range rp.opts.Runs {
		run.Reset()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		a0 := ms.Mallocs
		t0 := time.Now()
		bad := run.Run(n)
		el := time.Since(t0)
		runtime.ReadMemStats(&ms)
		if bad > 0 {
			return fmt.Errorf("bench: %d commands of the mix not accepted", bad)
		}
		tput = append(tput, float64(n)/el.Seconds())
		allocs = append(allocs, float64(ms.Mallocs-a0))

		run.Reset()
		runtime.GC()
		for j := range lat {
			c0 := Ticks()
			run.Step()
			lat[j] = uint32(min(Ticks()-c0, math.MaxUint32))
		}
		slices.Sort(lat)
		p50 = append(p50, percentile(lat, 0.50))
		p99 = append(p99, percentile(lat, 0.99))
		p999 = append(p999, percentile(lat, 0.999))
		rp.logf("mix run %d: %.0f cmds/s, p50 %.0f ns, p99 %.0f ns", i+1, tput[i], p50[i], p99[i])
	}
	r.CmdsPerSec, r.MixAllocs = Median(tput), Median(allocs)
	r.MixAllocsPerCmd = r.MixAllocs / float64(n)
	r.P50Ns, r.P99Ns, r.P999Ns = Median(p50), Median(p99), Median(p999)
	return nil
}

// depth times top-10 depth on the uncrowded and crowded books, alternately.
func (rp *reporter) depth() error {
	r := rp.r
	rp.logf("building the depth books (1 and 500 orders a level, %d levels a side)", DepthLevels)
	books := [2]*engine.Engine{BuildBook(DepthBook(1)).D.E, BuildBook(DepthBook(500)).D.E}
	const calls = 200_000
	rounds := 4 * rp.opts.Runs
	var ns [2][]float64
	var ratio []float64
	dst := make([]engine.Level, 0, 10)
	for round := range rounds {
		var per [2]float64
		for k := range 2 {
			// Alternate which book goes first.
			b := k ^ round&1
			e := books[b]
			t0 := time.Now()
			for range calls {
				dst = e.Depth(Instrument, engine.Buy, 10, dst[:0])
			}
			per[b] = float64(time.Since(t0).Nanoseconds()) / calls
			if len(dst) != 10 {
				return fmt.Errorf("bench: depth returned %d levels, want 10", len(dst))
			}
		}
		ns[0], ns[1] = append(ns[0], per[0]), append(ns[1], per[1])
		ratio = append(ratio, per[1]/per[0])
	}
	r.DepthTop10Ns, r.DepthTop10CrowdedNs = Median(ns[0]), Median(ns[1])
	r.DepthTop10CrowdedRatio = Median(ratio)
	rp.logf("depth top 10: %.1f ns, crowded %.1f ns, ratio %.2f", r.DepthTop10Ns, r.DepthTop10CrowdedNs, r.DepthTop10CrowdedRatio)
	return nil
}

// heap1M measures heap per order at 1M orders, Runs times (the figure is
// deterministic up to the collector; the runs also show build time).
func (rp *reporter) heap1M() error {
	var per []float64
	for i := range min(rp.opts.Runs, 3) {
		p, el := HeapPerOrder(BigBook(MOrders))
		per = append(per, p)
		rp.logf("heap at 1M orders, run %d: %.1f B/order (built in %v)", i+1, p, el.Round(time.Millisecond))
	}
	rp.r.HeapBytesPerOrder1M = Median(per)
	return nil
}

// big builds the large book once, then measures heap, clone, snapshot and
// restore on it.
func (rp *reporter) big() error {
	r := rp.r
	n := rp.opts.Orders
	rp.logf("building a %d-order book through commands", n)
	empty := NewDriver()
	base := HeapAlloc()
	runtime.KeepAlive(empty)
	empty = nil
	spec := BigBook(n)
	d := NewDriver()
	bk := &Book{D: d, Spec: spec}
	t0 := time.Now()
	bk.Fill(d)
	build := time.Since(t0)
	bk.NextID = uint64(n + 1)
	r.BuildNsPerOrder = float64(build.Nanoseconds()) / float64(n)
	r.HeapBytesPerOrder = (float64(HeapAlloc()) - float64(base)) / float64(n)
	rp.logf("built in %v: %.1f B/order", build.Round(time.Millisecond), r.HeapBytesPerOrder)

	// Clone, then insert one order (the insert pays the copy-on-write of
	// its path) and cancel it; then the same insert with no clone before.
	extra := [2]engine.Command{NewLimit(bk.NextID, engine.Buy, PassivePrice(engine.Buy, 5), 1, 1), Cancel(bk.NextID)}
	const clones = 1000
	perNs := TicksPerNs()
	var cl, wac, wr []float64
	ts := make([]float64, clones)
	ws := make([]float64, clones)
	vs := make([]float64, clones)
	for i := range rp.opts.Runs {
		runtime.GC()
		for j := range clones {
			c0 := Ticks()
			f := d.E.Clone()
			c1 := Ticks()
			runtime.KeepAlive(f)
			d.mustApply(&extra[0])
			c2 := Ticks()
			d.mustApply(&extra[1])
			ts[j] = float64(c1-c0) / perNs
			ws[j] = float64(c2-c1) / perNs
		}
		for j := range clones {
			c0 := Ticks()
			d.mustApply(&extra[0])
			c1 := Ticks()
			d.mustApply(&extra[1])
			vs[j] = float64(c1-c0) / perNs
		}
		cl, wac, wr = append(cl, Median(ts)), append(wac, Median(ws)), append(wr, Median(vs))
		rp.logf("clone run %d: %.0f ns, write after clone %.0f ns, write %.0f ns", i+1, cl[i], wac[i], wr[i])
	}
	r.CloneNsAt5M, r.WriteAfterCloneNs, r.WriteNs = Median(cl), Median(wac), Median(wr)

	// Snapshot into memory, drop the book, restore Runs times.
	rec := new(Records)
	t0 = time.Now()
	if err := d.E.SnapshotTo(rec); err != nil {
		return err
	}
	r.SnapshotNsPerOrder = float64(time.Since(t0).Nanoseconds()) / float64(n)
	want := d.E.StateHash()
	d, bk = nil, nil
	var rs []float64
	for i := range rp.opts.Runs {
		engineSink = nil
		runtime.GC()
		t0 := time.Now()
		e, err := rec.Restore()
		el := time.Since(t0)
		if err != nil {
			return err
		}
		if h := e.StateHash(); h != want {
			return fmt.Errorf("bench: restored state hash %#x, want %#x", h, want)
		}
		engineSink = e
		rs = append(rs, float64(el.Nanoseconds())/float64(n))
		rp.logf("restore run %d: %.1f ns/order", i+1, rs[i])
	}
	engineSink = nil
	r.RestoreNsPerOrder = Median(rs)
	return nil
}

// WriteTable writes the report as a table for people.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "matchlog engine report  %s  %s %s/%s  GOMAXPROCS=%d  CPUs=%d  runs=%d (medians)\n",
		r.Date, r.GoVersion, r.GOOS, r.GOARCH, r.GOMAXPROCS, r.NumCPU, r.Runs)
	fmt.Fprintf(&b, "load average: start %.2f %.2f %.2f, end %.2f %.2f %.2f\n\n",
		r.LoadAvgStart[0], r.LoadAvgStart[1], r.LoadAvgStart[2], r.LoadAvg[0], r.LoadAvg[1], r.LoadAvg[2])
	row := func(name, value, key string) {
		t, ok := r.Targets[key]
		target, met := "", ""
		if ok {
			target, met = t.Target, "no"
			if t.Met {
				met = "yes"
			}
		}
		fmt.Fprintf(&b, "  %-44s %16s   %-12s %s\n", name, value, target, met)
	}
	fmt.Fprintf(&b, "  %-44s %16s   %-12s %s\n", "figure", "value", "target", "met")
	row("mix throughput (cmds/s)", fmt.Sprintf("%.0f", r.CmdsPerSec), "cmds_per_sec")
	row(fmt.Sprintf("mix allocations in %d commands", r.MixCommands), fmt.Sprintf("%.0f", r.MixAllocs), "mix_allocs_per_cmd")
	row(fmt.Sprintf("mix latency p50 / p99 / p99.9 (ns, %s)", r.Clock),
		fmt.Sprintf("%.0f / %.0f / %.0f", r.P50Ns, r.P99Ns, r.P999Ns), "")
	row("  clock overhead per reading (ns)", fmt.Sprintf("%.1f", r.ClockOverheadNs), "")
	row("depth top 10, 1 / 500 orders a level (ns)", fmt.Sprintf("%.1f / %.1f", r.DepthTop10Ns, r.DepthTop10CrowdedNs), "")
	row("depth top 10 crowded/uncrowded ratio", fmt.Sprintf("%.2f", r.DepthTop10CrowdedRatio), "depth_top10_crowded_ratio")
	if r.Orders != 1_000_000 { // else the next row is the same figure
		row("heap per resting order at 1M (B)", fmt.Sprintf("%.1f", r.HeapBytesPerOrder1M), "")
	}
	row(fmt.Sprintf("heap per resting order at %s (B)", short(r.Orders)), fmt.Sprintf("%.1f", r.HeapBytesPerOrder), "heap_bytes_per_order")
	row(fmt.Sprintf("build through commands at %s (ns/order)", short(r.Orders)), fmt.Sprintf("%.0f", r.BuildNsPerOrder), "")
	row(fmt.Sprintf("clone at %s (ns)", short(r.Orders)), fmt.Sprintf("%.0f", r.CloneNsAt5M), "clone_ns_at_5m")
	row("  one insert after a clone / without (ns)", fmt.Sprintf("%.0f / %.0f", r.WriteAfterCloneNs, r.WriteNs), "")
	row(fmt.Sprintf("snapshot to memory at %s (ns/order)", short(r.Orders)), fmt.Sprintf("%.1f", r.SnapshotNsPerOrder), "")
	row(fmt.Sprintf("restore at %s (ns/order)", short(r.Orders)), fmt.Sprintf("%.1f", r.RestoreNsPerOrder), "restore_ns_per_order")
	fmt.Fprintf(&b, "\nmix: %d commands a run, %.0f orders on %.0f levels on average, %.3f trades a command\n",
		r.MixCommands, r.MixOrders, r.MixLevels, r.MixTradesPerCmd)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func short(n int) string { return strings.TrimPrefix(sizeName(n), "orders=") }
