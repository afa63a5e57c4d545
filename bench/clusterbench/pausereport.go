package clusterbench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/measure"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// PauseOptions configure PauseReport: one node, one book, one snapshot.
type PauseOptions struct {
	// Orders is the number of resting orders the book holds when the
	// snapshot is taken (default 100,000).
	Orders int
	// Mode is the node's snapshot mode (cluster.Pauseless by default).
	Mode cluster.SnapshotMode
	// SyncLevel is the archive's file sync level (0, 1 or 2).
	SyncLevel int
	// FileIoMaxLength is the archive's block length (default
	// 1 MiB).
	FileIoMaxLength int
	// Workers is the number of parallel snapshot encoders (0: linear).
	Workers int
	// SnapshotTermLength is the node's Options.SnapshotTermLength (0:
	// its default), which bounds the snapshot's archive blocks.
	SnapshotTermLength int
	// Rate is the number of commands a second submitted at a fixed
	// schedule during the measurements (default 20,000).
	Rate int
	// Baseline is how long the no-snapshot traffic runs (default 1 s);
	// Lead how long traffic runs before the snapshot request (default
	// 200 ms) and Tail how long it runs after the snapshot completed
	// (default 200 ms).
	Baseline, Lead, Tail time.Duration
	// Dir is the parent of the node's temporary directory (os.TempDir()
	// if empty); the node directory is removed afterwards.
	Dir string
	// Progress, if set, receives progress lines.
	Progress io.Writer
	// Seed of the book (default 1).
	Seed uint64
	// SnapshotDir is a diagnosis switch: when set, the snapshot
	// recordings' segment files go under this directory (vfs.Route and
	// vfs.Rebase; on another device, e.g. a tmpfs at /dev/shm) while the
	// log stays in Dir, taking the snapshot's writes and syncs off the
	// log's device. The result is marked.
	SnapshotDir string
	// YieldEvery is the node's Options.SnapshotYieldEvery (0: its
	// default; negative: never yield).
	YieldEvery int
	// Nice is the node's Options.SnapshotNice (0: its default, negative:
	// not niced).
	Nice int
	// Trace, if set, receives the delay of every command of the snapshot
	// window, one line each: ms since the snapshot request of its scheduled
	// time, its delay in ms (and markers for the snapshot's completion).
	Trace io.Writer
}

// PauseResult is the client-visible pause of one snapshot.
type PauseResult struct {
	Orders      int     `json:"orders"`
	Mode        string  `json:"mode"`
	Workers     int     `json:"workers"`
	Sync        int     `json:"sync"`
	Block       int     `json:"block"`
	Rate        int     `json:"rate"`
	PreloadSecs float64 `json:"preload_s"`
	// NoSnapshotP50Ms / P99Ms / MaxMs: delays of the baseline traffic.
	NoSnapshotP50Ms float64 `json:"no_snapshot_p50_ms"`
	NoSnapshotP99Ms float64 `json:"no_snapshot_p99_ms"`
	NoSnapshotMaxMs float64 `json:"no_snapshot_max_ms"`
	// PauseMsMax is the worst delay of the commands submitted from Lead
	// before the snapshot request to Tail after its completion; PauseP99Ms
	// their p99.
	PauseMsMax float64 `json:"pause_ms_max"`
	PauseP99Ms float64 `json:"pause_p99_ms"`
	// WorstAtMs is when the worst command was scheduled, in ms from the
	// snapshot request; SnapshotMs how long the snapshot took from the
	// request to its completion (seen by the duty cycle).
	WorstAtMs  float64 `json:"worst_at_ms"`
	SnapshotMs float64 `json:"snapshot_ms"`
	// TakeMs is the encoding time (the snapshot write less its archive
	// part, plus the frozen copies); PrepareMs the time the node's
	// goroutine was held (the clone when pauseless, everything when
	// stopping the world); ArchiveWriteMs the time spent writing,
	// syncing and stopping the snapshot recordings and syncing the log up
	// to the snapshot; SnapshotWriteMs the whole background (pauseless)
	// or in-line (stop the world) write.
	TakeMs          float64 `json:"take_ms"`
	PrepareMs       float64 `json:"prepare_ms"`
	ArchiveWriteMs  float64 `json:"archive_write_ms"`
	SnapshotWriteMs float64 `json:"snapshot_write_ms"`
	// Attribution of the worst delay, over the snapshot window: the
	// longest DoWork call (MaxDoWorkMs), the longest the node spent
	// recording the log in one cycle (MaxLogRecordMs: write, and sync at
	// level >= 1) and the longest gap between two DoWork calls
	// (MaxGapMs: the driving goroutine not running, or submitting).
	MaxDoWorkMs    float64 `json:"max_dowork_ms"`
	MaxLogRecordMs float64 `json:"max_log_record_ms"`
	MaxGapMs       float64 `json:"max_gap_ms"`
	// LogSyncMs is the part of ArchiveWriteMs spent making the log
	// durable up to the snapshot's position (sync level 0 only).
	LogSyncMs     float64 `json:"log_sync_ms"`
	SnapshotBytes int64   `json:"snapshot_bytes"`
	// SnapshotDir: where the snapshot segments were (diagnosis), if not
	// beside the log.
	SnapshotDir string `json:"snapshot_dir,omitempty"`
	// YieldEvery: the encoder's yield interval in claims (-1: never).
	YieldEvery int `json:"yield_every"`
	// Nice: the snapshot writer's nice value (-1: not niced).
	Nice int `json:"nice"`
	// TargetMs is the bound: the no-snapshot p99 + 1 ms
	// (pauseless), take + archive write + 50 ms (stop the world).
	TargetMs   float64 `json:"target_ms"`
	Met        bool    `json:"met"`
	Commands   int     `json:"commands"`
	LogSyncs   int64   `json:"log_syncs"`
	LoadAvg    float64 `json:"load_avg"`
	LoadAvgEnd float64 `json:"load_avg_end"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	NumCPU     int     `json:"num_cpu"`
	GOGC       string  `json:"gogc,omitempty"`
	GOMEMLIMIT string  `json:"gomemlimit,omitempty"`
}

// snapshotSegment matches the segment files of recordings other than
// the log's (recording 0 in a new node directory).
func snapshotSegment(name string) bool {
	base := filepath.Base(name)
	i := strings.IndexByte(base, '-')
	if i <= 0 || !strings.Contains(base[i:], ".rec") {
		return false
	}
	id, err := strconv.ParseInt(base[:i], 10, 64)
	return err == nil && id > 0
}

// ModeName is "pauseless" or "stw".
func ModeName(m cluster.SnapshotMode) string {
	if m == cluster.StopTheWorld {
		return "stw"
	}
	return "pauseless"
}

// bookGen generates the commands that grow a non-crossing book on 8
// instruments (bids 5,001..10,000, asks 10,001..15,000), from source 1.
type bookGen struct {
	rng *rand.Rand
	seq uint64
	id  uint64
}

func (g *bookGen) define(c *engine.Command, inst uint32) {
	g.seq++
	*c = engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: g.seq, Instrument: inst, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}
}

func (g *bookGen) order(c *engine.Command) {
	g.seq++
	g.id++
	*c = engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: g.seq, Instrument: uint32(1 + g.rng.IntN(8)), OrderID: g.id,
		Account: 1 + g.rng.Uint64N(1000), Type: engine.Limit, TIF: engine.GTC, Qty: 1 + g.rng.Int64N(1000)}
	if g.rng.IntN(2) == 0 {
		c.Side, c.Price = engine.Buy, 10_000-int64(g.rng.IntN(5000))
	} else {
		c.Side, c.Price = engine.Sell, 10_001+int64(g.rng.IntN(5000))
	}
}

// Book generates the commands of PauseReport's book, for other harnesses
// that must build the same book (bench/aeronbench): Define the instruments
// 1..8 first, then each Order is a new non-crossing GTC limit order from
// source 1 (bids 5,001..10,000, asks 10,001..15,000) on a random
// instrument, with the next seq and order id. The same seed gives the same
// commands as PauseReport's preload.
type Book struct{ g bookGen }

// NewBook returns the generator PauseReport uses for seed.
func NewBook(seed uint64) *Book { return &Book{g: bookGen{rng: rand.New(rand.NewPCG(seed, 7))}} }

// Define sets c to the definition of instrument inst.
func (b *Book) Define(c *engine.Command, inst uint32) { b.g.define(c, inst) }

// Order sets c to the next new order.
func (b *Book) Order(c *engine.Command) { b.g.order(c) }

// PauseReport measures the client-visible pause of one snapshot.
//
// It opens a node (enginesvc service, archive at o.SyncLevel with
// o.FileIoMaxLength blocks, log term 16 MiB, MTU 8 KiB, MaxBatch 4096) in a
// fresh directory and grows the book to o.Orders resting orders through
// the node's ingress: new-order commands offered in batches of 4,096 and
// sequenced, applied and recorded by the duty cycle at the configured sync
// level (group commit: one archive write, and sync, per duty cycle). The
// book is never restored from a snapshot.
//
// Then commands (more non-crossing new orders) are submitted at a fixed
// rate, o.Rate a second, by the goroutine that runs the duty cycle: each
// command has a scheduled send time t0 + i/rate, it is offered as soon as
// the loop sees that time has come, and its delay is from its scheduled
// time to the release of its EvRelease event (durable at the sync level).
// Measuring from the scheduled time corrects for coordinated omission:
// commands that should have been sent while the node was stalled (stop
// the world) count the stall. First o.Baseline of traffic without a
// snapshot (its p50/p99/max), then traffic from o.Lead before a snapshot
// request until o.Tail after the snapshot completed (its worst delay is
// the pause).
func PauseReport(o PauseOptions) (*PauseResult, error) {
	if o.Orders <= 0 {
		o.Orders = 100_000
	}
	if o.FileIoMaxLength == 0 {
		o.FileIoMaxLength = 1 << 20
	}
	if o.Rate <= 0 {
		o.Rate = 20_000
	}
	if o.Baseline <= 0 {
		o.Baseline = time.Second
	}
	if o.Lead <= 0 {
		o.Lead = 200 * time.Millisecond
	}
	if o.Tail <= 0 {
		o.Tail = 200 * time.Millisecond
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	dir, err := os.MkdirTemp(o.Dir, "matchlog-pause-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	res := &PauseResult{Orders: o.Orders, Mode: ModeName(o.Mode), Workers: o.Workers, Sync: o.SyncLevel, Block: o.FileIoMaxLength,
		Rate: o.Rate, GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(),
		GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT")}

	var (
		released []time.Time // by seq - seqBase
		seqBase  uint64
		counting bool
	)
	svc := enginesvc.New(enginesvc.Options{Workers: o.Workers})
	var fsys vfs.FS = vfs.Default
	res.YieldEvery, res.Nice = o.YieldEvery, o.Nice
	if res.Nice == 0 {
		res.Nice = cluster.DefaultSnapshotNice
	} else if res.Nice < 0 {
		res.Nice = -1
	}
	if res.YieldEvery == 0 {
		res.YieldEvery = cluster.DefaultSnapshotYieldEvery
	} else if res.YieldEvery < 0 {
		res.YieldEvery = -1
	}
	if o.SnapshotDir != "" {
		res.SnapshotDir = o.SnapshotDir
		alt := &vfs.Rebase{FS: vfs.Default, Root: o.SnapshotDir}
		defer os.RemoveAll(alt.FS.Join(o.SnapshotDir, dir))
		fsys = &vfs.Route{Base: vfs.Default, Alt: alt, Match: snapshotSegment}
	}
	node, err := cluster.Open(cluster.Options{
		FS: fsys, Dir: dir, Service: svc, FileSyncLevel: archive.SyncLevel(o.SyncLevel), SnapshotMode: o.Mode,
		TermLength: 16 << 20, SegmentLength: 128 << 20, FileIoMaxLength: o.FileIoMaxLength, MTU: 8192, MaxBatch: 4096,
		SnapshotTermLength: o.SnapshotTermLength, SnapshotYieldEvery: o.YieldEvery, SnapshotNice: o.Nice,
		Egress: func(_ int64, msg []byte) {
			if !counting || wire.EventKind(msg) != engine.EvRelease {
				return
			}
			if _, seq, err := wire.DecodeRelease(msg); err == nil && seq > seqBase && seq-seqBase <= uint64(len(released)) {
				released[seq-seqBase-1] = time.Now()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			node.Close()
		}
	}()
	sess, err := node.Connect("aeron:ipc", 102)
	if err != nil {
		return nil, err
	}
	var maxDoWork, maxGap time.Duration
	var lastReturn time.Time
	doWork := func() error {
		t0 := time.Now()
		if !lastReturn.IsZero() {
			maxGap = max(maxGap, t0.Sub(lastReturn))
		}
		w, err := node.DoWork()
		lastReturn = time.Now()
		maxDoWork = max(maxDoWork, lastReturn.Sub(t0))
		if err == nil && w == 0 {
			runtime.Gosched()
		}
		return err
	}
	drain := func() error {
		for node.Pending() > 0 {
			if err := doWork(); err != nil {
				return err
			}
		}
		return nil
	}

	// Preload through the ingress.
	g := &bookGen{rng: rand.New(rand.NewPCG(o.Seed, 7))}
	var c engine.Command
	var buf []byte
	offer := func() error {
		var err error
		if buf, err = wire.AppendCommand(buf[:0], &c); err != nil {
			return err
		}
		return node.Offer(sess, buf)
	}
	t0 := time.Now()
	for i := uint32(1); i <= 8; i++ {
		g.define(&c, i)
		if err := offer(); err != nil {
			return nil, err
		}
	}
	for left := o.Orders; left > 0; {
		k := min(left, 4096)
		for range k {
			g.order(&c)
			if err := offer(); err != nil {
				return nil, err
			}
		}
		left -= k
		if err := drain(); err != nil {
			return nil, err
		}
		if o.Progress != nil && (o.Orders-left)%(1<<20) < 4096 {
			progress("preload: %d/%d orders, %.1fs", o.Orders-left, o.Orders, time.Since(t0).Seconds())
		}
	}
	if err := drain(); err != nil {
		return nil, err
	}
	res.PreloadSecs = time.Since(t0).Seconds()
	if got := svc.Engine().Orders(); got != o.Orders {
		progress("preload: %d resting orders (want %d)", got, o.Orders)
	}
	runtime.GC()
	res.LoadAvg = measure.LoadAvg()[0]
	progress("preloaded %d orders in %.1fs; load average %.2f", o.Orders, res.PreloadSecs, res.LoadAvg)

	every := time.Second / time.Duration(o.Rate)
	// run submits commands on schedule until stop says so (checked with
	// the number of commands scheduled so far and whether the snapshot
	// has been requested); it returns the delays.
	run := func(snapshot bool) ([]time.Duration, error) {
		maxCmds := int((o.Baseline+o.Lead+o.Tail+10*time.Minute)/every) + 1
		if !snapshot {
			maxCmds = int(o.Baseline / every)
		}
		seqBase = g.seq
		released = released[:0]
		sched := make([]time.Time, 0, 1<<16)
		counting = true
		defer func() { counting = false }()
		start := time.Now()
		requested, doneAt := false, time.Time{}
		var requestedAt time.Time
		maxDoWork, maxGap, lastReturn = 0, 0, time.Time{}
		node.ResetMaxima()
		startSnaps := node.Stats().Snapshots
		for next := 0; ; {
			now := time.Now()
			for next < maxCmds && !start.Add(time.Duration(next)*every).After(now) {
				g.order(&c)
				if err := offer(); err != nil {
					return nil, err
				}
				sched = append(sched, start.Add(time.Duration(next)*every))
				released = append(released, time.Time{})
				next++
				if snapshot && !requested && now.Sub(start) >= o.Lead {
					node.RequestSnapshot()
					requested, requestedAt = true, now
				}
			}
			if err := doWork(); err != nil {
				return nil, err
			}
			if snapshot && requested && doneAt.IsZero() && node.Stats().Snapshots > startSnaps {
				doneAt = time.Now()
				maxCmds = next + int(o.Tail/every)
			}
			if next >= maxCmds && node.Pending() == 0 {
				break
			}
			if next >= maxCmds && time.Since(now) > time.Minute {
				return nil, errors.New("enginesvc: commands not released")
			}
		}
		delays := make([]time.Duration, len(sched))
		worst := 0
		for i := range sched {
			if released[i].IsZero() {
				return nil, fmt.Errorf("enginesvc: command %d not released", i)
			}
			delays[i] = released[i].Sub(sched[i])
			if delays[i] > delays[worst] {
				worst = i
			}
			if snapshot && o.Trace != nil {
				fmt.Fprintf(o.Trace, "%.3f %.3f\n", sched[i].Sub(requestedAt).Seconds()*1000, delays[i].Seconds()*1000)
			}
		}
		if snapshot {
			res.MaxDoWorkMs, res.MaxGapMs = maxDoWork.Seconds()*1000, maxGap.Seconds()*1000
			res.MaxLogRecordMs = node.Stats().MaxLogRecord.Seconds() * 1000
			res.WorstAtMs = sched[worst].Sub(requestedAt).Seconds() * 1000
			res.SnapshotMs = doneAt.Sub(requestedAt).Seconds() * 1000
		}
		return delays, nil
	}

	progress("baseline: %v at %d/s", o.Baseline, o.Rate)
	base, err := run(false)
	if err != nil {
		return nil, err
	}
	slices.Sort(base)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	res.NoSnapshotP50Ms = ms(base[len(base)/2])
	res.NoSnapshotP99Ms = ms(base[len(base)*99/100])
	res.NoSnapshotMaxMs = ms(base[len(base)-1])
	progress("snapshot (%s, %d workers)", res.Mode, o.Workers)
	snap, err := run(true)
	if err != nil {
		return nil, err
	}
	res.Commands = len(snap)
	res.PauseMsMax = ms(slices.Max(snap))
	slices.Sort(snap)
	res.PauseP99Ms = ms(snap[len(snap)*99/100])
	st := node.Stats()
	res.LogSyncs = st.LogSyncs
	res.SnapshotBytes = st.SnapshotBytes
	res.PrepareMs = ms(st.LastSnapshotPrepare)
	res.LogSyncMs = ms(st.LastSnapshotLogSync)
	res.SnapshotWriteMs = ms(st.LastSnapshotWrite)
	if o.Mode == cluster.StopTheWorld {
		// The log sync runs after the write, on the node's goroutine.
		res.TakeMs = res.SnapshotWriteMs - ms(st.LastSnapshotArchive)
		res.ArchiveWriteMs = ms(st.LastSnapshotArchive) + res.LogSyncMs
		res.TargetMs = res.TakeMs + res.ArchiveWriteMs + 50
	} else {
		// The log sync is part of the background write.
		res.TakeMs = res.SnapshotWriteMs - ms(st.LastSnapshotArchive) - res.LogSyncMs
		res.ArchiveWriteMs = ms(st.LastSnapshotArchive) + res.LogSyncMs
		res.TargetMs = res.NoSnapshotP99Ms + 1
	}
	res.Met = res.PauseMsMax <= res.TargetMs
	res.LoadAvgEnd = measure.LoadAvg()[0]
	closed = true
	if err := node.Close(); err != nil {
		return nil, err
	}
	return res, nil
}

// WritePauseTable writes results as a table.
func WritePauseTable(w io.Writer, rs []*PauseResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "orders\tmode\twrk\tsync\tblock\tnosnap p50\tnosnap p99\tpause max\tpause p99\tdowork max\trecord max\tgap max\ttake ms\tprepare ms\tarchive ms\ttarget\tmet\tload\tload end\tprocs\t")
	for _, r := range rs {
		mode := r.Mode
		if r.YieldEvery != cluster.DefaultSnapshotYieldEvery {
			mode += fmt.Sprintf("(yield %d)", r.YieldEvery)
		}
		if r.Nice != cluster.DefaultSnapshotNice {
			mode += fmt.Sprintf("(nice %d)", r.Nice)
		}
		if r.SnapshotDir != "" {
			mode += "(snap " + r.SnapshotDir + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%v\t%.2f\t%.2f\t%d\t\n",
			r.Orders, mode, r.Workers, r.Sync, blockName(r.Block), r.NoSnapshotP50Ms, r.NoSnapshotP99Ms, r.PauseMsMax, r.PauseP99Ms,
			r.MaxDoWorkMs, r.MaxLogRecordMs, r.MaxGapMs,
			r.TakeMs, r.PrepareMs, r.ArchiveWriteMs, r.TargetMs, r.Met, r.LoadAvg, r.LoadAvgEnd, r.GOMAXPROCS)
	}
	return tw.Flush()
}

func blockName(b int) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", b>>20)
	}
	return fmt.Sprintf("%dKiB", b>>10)
}
