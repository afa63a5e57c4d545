// Package demo is `matchlog demo`: a node on an embedded default, loaded
// and probed over its real TCP ingress, snapshotted both ways and
// restarted, with the client-visible latency measured throughout.
//
// The run, on one timeline:
//
//  1. A node (server.Server over cluster.Node and the engine service) in a
//     temporary directory, listening on 127.0.0.1 on a free port.
//  2. Preload: one client defines Instruments instruments and sends Orders
//     resting limit orders (bids below a mid price, asks above, random
//     levels and sizes), keeping at most a window in flight: as many
//     orders as half the node's egress queue holds the events of, so the
//     node never drops the demo's own client as a slow consumer (see
//     window.go).
//  3. Probes: a second client sends IOC buy orders priced far below the
//     best ask at a fixed Rate; each crosses nothing and is answered by one
//     Release. Latency is measured from each probe's scheduled send time to
//     its Release (coordinated omission corrected: a stalled node delays
//     the probes scheduled behind the stall, and they are measured from
//     when they should have gone out) into an HdrHistogram.
//  4. While the probes run: a pauseless snapshot, then a stop-the-world
//     one, each followed by Gap; then a restart: the probe sends are held,
//     the engine's state hash is read, the node closes and reopens from its
//     latest snapshot plus the log after it, the hash is read again and the
//     held probes go out (they are measured from their scheduled times, so
//     the restart shows as the latency of the probes behind it).
//  5. The report: per snapshot the take time and the client pause (the
//     worst probe latency scheduled from Settle before the request to
//     Settle after its completion: a probe in flight at the request waits
//     too), probe p50/p99/max outside those windows, the worst probe of
//     each window and of the time outside them with what overlapped its
//     wait (GC, a late timer, the node's log recording or a long duty
//     cycle, a segment roll-over, a snapshot: see stalls.go), restart
//     time split into snapshot load and log replay, whether the state
//     hashes agree, and the machine: date, Go version, processors and
//     load average at start and end.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/measure"
	"github.com/matchlog/matchlog/internal/plot"
	"github.com/matchlog/matchlog/internal/probe"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
)

// Options configure a run. The zero value is the documented default.
type Options struct {
	// Dir is the node directory, new or empty (kept afterwards); empty: a
	// new temporary directory, removed afterwards.
	Dir string
	// Orders is the number of resting orders preloaded (default 1,000,000).
	Orders int
	// Instruments to spread them over (default 8).
	Instruments int
	// Rate is the number of probes a second (default 5,000).
	Rate float64
	// SyncLevel is the archive's file sync level, 0, 1 or 2; nil (the
	// zero value) is DefaultSyncLevel, 1: a probe's Release means its
	// command is on disk. Level 0 is asked for explicitly, new(0).
	SyncLevel *archive.SyncLevel
	// Baseline is how long the probes run before the first snapshot
	// (default 3 s); Gap how long after each snapshot and the restart
	// (default 1.5 s); Settle how far before a snapshot's request and
	// after its completion its pause window extends (default 100 ms; the
	// same around the restart).
	Baseline, Gap, Settle time.Duration
	// Window is the most preload orders in flight. The default, and the
	// most allowed, is what keeps the events of the orders in flight
	// within half the node's egress queue (WriteQueueBytes): the node
	// never drops the demo's clients as slow consumers, however loaded
	// the machine. The probes' window is derived the same way.
	Window int
	// WriteQueueBytes is the node's egress queue per connection (default
	// server.DefaultWriteQueueBytes).
	WriteQueueBytes int
	// FS is the node's file system (default the operating system's);
	// tests delay or fail its operations through it.
	FS vfs.FS
	// Seed of the book (default 1).
	Seed uint64
	// Progress receives a progress bar and phase lines (nil: none).
	Progress io.Writer
}

// DefaultSyncLevel is the file sync level of Options{}.
const DefaultSyncLevel = archive.SyncData

// syncLevel is the file sync level the run uses.
func (o *Options) syncLevel() archive.SyncLevel {
	if o.SyncLevel == nil {
		return DefaultSyncLevel
	}
	return *o.SyncLevel
}

// nodeOptions are the node's options of a run in dir.
func (o *Options) nodeOptions(dir string) cluster.Options {
	return cluster.Options{FS: o.FS, Dir: dir, FileSyncLevel: o.syncLevel(), SnapshotMode: cluster.Pauseless}
}

func (o *Options) defaults() {
	if o.Orders <= 0 {
		o.Orders = 1_000_000
	}
	if o.Instruments <= 0 {
		o.Instruments = 8
	}
	if o.Rate <= 0 {
		o.Rate = 5000
	}
	if o.Baseline <= 0 {
		o.Baseline = 3 * time.Second
	}
	if o.Gap <= 0 {
		o.Gap = 1500 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = 100 * time.Millisecond
	}
	if o.Window < 0 {
		o.Window = 0
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
}

// Snapshot is what one snapshot cost.
type Snapshot struct {
	Mode string `json:"mode"`
	// TakeMs is the snapshot's whole write (encode and archive), PrepareMs
	// the time the node's duty cycle was held (the clone when pauseless,
	// everything when stopping the world), ArchiveMs the archive part.
	TakeMs    float64 `json:"take_ms"`
	PrepareMs float64 `json:"prepare_ms"`
	ArchiveMs float64 `json:"archive_ms"`
	Bytes     int64   `json:"bytes"`
	// PauseMsMax is the worst probe latency scheduled from Settle before
	// the request to Settle after the completion; DurationMs request to
	// completion.
	PauseMsMax float64 `json:"pause_ms_max"`
	DurationMs float64 `json:"duration_ms"`
	// AtS is when it was requested, seconds from the probes' start.
	AtS float64 `json:"at_s"`
}

// Report is the result of a run.
type Report struct {
	Orders        int     `json:"orders"`
	RestingOrders int     `json:"resting_orders"`
	Instruments   int     `json:"instruments"`
	PreloadS      float64 `json:"preload_s"`
	PreloadRate   float64 `json:"preload_orders_per_s"`
	SyncLevel     int     `json:"sync_level"`

	PauselessPauseMsMax float64 `json:"pauseless_pause_ms_max"`
	STWPauseMsMax       float64 `json:"stw_pause_ms_max"`
	// TakeMs is the pauseless snapshot's take (the one trading runs
	// through), STWTakeMs the stop-the-world one's.
	TakeMs    float64    `json:"take_ms"`
	STWTakeMs float64    `json:"stw_take_ms"`
	Snapshots []Snapshot `json:"snapshots"`
	// Stalls are the worst probe of each snapshot's window, of the
	// restart's, and of the time outside all of them ("outside"), each
	// with what overlapped its wait.
	Stalls []Stall `json:"stalls"`

	// EgressQueueBytes is the node's egress queue per connection;
	// PreloadWindow and ProbeWindow the most preload orders and probes
	// kept outstanding, derived from it (see Options.Window).
	EgressQueueBytes int `json:"egress_queue_bytes"`
	PreloadWindow    int `json:"preload_window"`
	ProbeWindow      int `json:"probe_window"`

	ProbeRate    float64 `json:"probe_rate"`
	ProbesSent   int     `json:"probes_sent"`
	ProbesLost   int     `json:"probes_lost"`
	ProbeP50Us   float64 `json:"probe_p50_us"`
	ProbeP99Us   float64 `json:"probe_p99_us"`
	ProbeMaxUs   float64 `json:"probe_max_us"`
	ProbeP50AllU float64 `json:"probe_p50_all_us"`
	ProbeP99AllU float64 `json:"probe_p99_all_us"`
	ProbeMaxAllU float64 `json:"probe_max_all_us"`

	// RestartMs is the node's whole Open (recovery plan, snapshot load,
	// log replay, new term); SnapshotLoadMs and ReplayMs its two parts;
	// CloseMs the clean stop before it; RestartPauseMsMax the worst probe
	// latency scheduled from Settle before the hold to Settle after the
	// probes resumed.
	RestartMs         float64 `json:"restart_ms"`
	SnapshotLoadMs    float64 `json:"snapshot_load_ms"`
	ReplayMs          float64 `json:"replay_ms"`
	ReplayedEntries   int64   `json:"replayed_entries"`
	ReplayedBytes     int64   `json:"replayed_bytes"`
	CloseMs           float64 `json:"close_ms"`
	RestartPauseMsMax float64 `json:"restart_pause_ms_max"`

	StateHashBefore string `json:"state_hash_before"`
	StateHashAfter  string `json:"state_hash_after"`
	StateHashEqual  bool   `json:"state_hash_equal"`

	LoadAvg    [3]float64 `json:"load_avg"`
	LoadAvgEnd [3]float64 `json:"load_avg_end"`
	NumCPU     int        `json:"num_cpu"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	Machine    Machine    `json:"machine"`
	Dir        string     `json:"dir"`

	rec   *probe.Recorder
	start time.Time
}

// Clients' ids (the engine's command sources).
const (
	preloadClient = 1
	probeClient   = 2
)

// Prices of the book: levels below and above the mid, ticks of 1.
const (
	mid        = 100_000
	levelsSide = 2_000
	probePrice = mid - 50_000 // never crosses an ask
)

// Run runs the demo.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.defaults()
	if l := o.syncLevel(); l.Check() != nil {
		return nil, fmt.Errorf("demo: file sync level %d: give 0, 1 or 2 (nil: %d)", int(l), int(DefaultSyncLevel))
	}
	rep := &Report{Orders: o.Orders, Instruments: o.Instruments, SyncLevel: int(o.syncLevel()), ProbeRate: o.Rate,
		LoadAvg: measure.LoadAvg(), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Machine: thisMachine(time.Now())}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	say("machine: %s; load average %.2f %.2f %.2f", rep.machineLine(), rep.LoadAvg[0], rep.LoadAvg[1], rep.LoadAvg[2])
	dir := o.Dir
	if dir != "" {
		// The preload defines instruments and order ids from 1: a node
		// directory that already holds a book would reject them.
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("demo: %s is not empty: give a new or empty directory (the demo preloads a new book)", dir)
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "matchlog-demo-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep.Dir = dir
	// The windows, checked before anything is written (and derived again
	// from the node's own queue once it runs).
	queue := o.WriteQueueBytes
	if queue <= 0 {
		queue = server.DefaultWriteQueueBytes
	}
	if _, _, err := windows(queue, o.Window); err != nil {
		return nil, err
	}
	sopts := server.Options{
		Addr:            "127.0.0.1:0",
		Node:            o.nodeOptions(dir),
		SessionTimeout:  30 * time.Second,
		WriteQueueBytes: o.WriteQueueBytes,
	}

	// The node.
	srv, err := startServer(sopts)
	if err != nil {
		return nil, err
	}
	defer func() { srv.stop() }()
	addr := srv.s.Addr().String()
	say("node: %s, listening on %s, file sync level %d", dir, addr, o.syncLevel())
	rep.EgressQueueBytes = srv.s.WriteQueueBytes()
	if rep.PreloadWindow, rep.ProbeWindow, err = windows(rep.EgressQueueBytes, o.Window); err != nil {
		return nil, err
	}
	o.Window = rep.PreloadWindow

	// Preload.
	if err := preload(ctx, o, addr, rep, say); err != nil {
		return nil, err
	}
	if err := srv.s.Inspect(ctx, func(_ *cluster.Node, svc *enginesvc.Service) { rep.RestingOrders = svc.Engine().Orders() }); err != nil {
		return nil, err
	}

	// Probes.
	var rec *probe.Recorder
	var first atomic.Uint64
	pc, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: probeClient, Reconnect: true,
		ReconnectMin: time.Millisecond, ReconnectMax: 20 * time.Millisecond, ReconnectTimeout: time.Minute,
		MaxOutstanding: rep.ProbeWindow,
		OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRelease && rec != nil {
				rec.Done(int(ev.Seq-first.Load()), time.Now())
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("demo: probe client: %w", err)
	}
	defer pc.Close()
	first.Store(pc.NextSeq())
	total := o.Baseline + 3*o.Gap + time.Minute // the schedule's horizon; Run stops it earlier
	sched := probe.Schedule{Rate: o.Rate, Start: time.Now().Add(20 * time.Millisecond), Spin: -1}
	rec = probe.NewRecorder(sched, sched.Count(total)+1)
	rep.rec, rep.start = rec, sched.Start

	var hold sync.RWMutex // held (write-locked) while the node restarts
	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	var sent atomic.Int64
	probeDone := make(chan error, 1)
	go func() {
		cmd := probeCommand()
		n, err := sched.Run(probeCtx, sched.Count(total), func(i int, _ time.Time) error {
			hold.RLock()
			defer hold.RUnlock()
			// Back-pressure: a full window waits for answers (the
			// probes behind it are measured from their scheduled
			// times all the same).
			for pc.Outstanding() >= rep.ProbeWindow {
				if err := probeCtx.Err(); err != nil {
					return err
				}
				if err := pc.Err(); err != nil {
					return err
				}
				time.Sleep(50 * time.Microsecond)
			}
			cmd.OrderID = 1<<40 + uint64(i)
			cmd.Instrument = uint32(i%o.Instruments) + 1
			_, err := pc.Send(&cmd)
			return err
		})
		sent.Store(int64(n))
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		probeDone <- err
	}()
	probeErr := func() error {
		select {
		case err := <-probeDone:
			if err == nil {
				err = errors.New("probe stream ended early")
			}
			return fmt.Errorf("demo: probes: %w", err)
		default:
			return nil
		}
	}
	sleep := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return probeErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	say("probes: %.0f IOC orders/s that cross nothing, latency to their Release", o.Rate)
	tl := &timeline{}
	segLen := int64(sopts.Node.SegmentLength)
	if segLen <= 0 {
		segLen = archive.DefaultSegmentLength
	}
	mon := startMonitor(tl, srv.s, segLen)
	monDone := false
	defer func() {
		if !monDone {
			mon.finish(sched.Start)
		}
	}()
	if err := sleep(o.Baseline); err != nil {
		return nil, err
	}

	// Snapshots.
	for _, mode := range []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld} {
		s, err := takeSnapshot(ctx, srv.s, mode, rec, tl, o.Settle, sched.Start)
		if err != nil {
			return nil, err
		}
		say("snapshot %s: take %.1f ms, duty cycle held %.2f ms, %d bytes", s.Mode, s.TakeMs, s.PrepareMs, s.Bytes)
		rep.Snapshots = append(rep.Snapshots, s)
		if err := sleep(o.Gap); err != nil {
			return nil, err
		}
	}

	// Restart.
	say("restart: holding probes, closing the node")
	holdAt := time.Now()
	rec.Mark("restart", holdAt)
	hold.Lock()
	held := true
	release := func() {
		if held {
			hold.Unlock()
			held = false
		}
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = pc.Wait(wctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("demo: waiting for the probes in flight: %w", err)
	}
	before, err := srv.s.StateHash(ctx)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	mon.setServer(nil)
	if err := srv.stop(); err != nil {
		return nil, fmt.Errorf("demo: closing the node: %w", err)
	}
	rep.CloseMs = ms(time.Since(t0))
	sopts.Addr = addr // the clients reconnect to the same address
	if srv, err = startServer(sopts); err != nil {
		return nil, fmt.Errorf("demo: restarting the node: %w", err)
	}
	var recov cluster.Recovery
	var after uint64
	if err := srv.s.Inspect(ctx, func(n *cluster.Node, svc *enginesvc.Service) {
		recov, after = n.Recovery(), svc.Engine().StateHash()
	}); err != nil {
		return nil, err
	}
	release()
	resumeAt := time.Now()
	rec.Mark("resumed", resumeAt)
	mon.setServer(srv.s)
	tl.add(span{kind: CauseRestart, from: holdAt, to: resumeAt, d: resumeAt.Sub(holdAt),
		what: fmt.Sprintf("the node closed (%.1f ms) and reopened (%.1f ms: snapshot load %.1f ms, log replay %.1f ms) with the probes held", rep.CloseMs, ms(recov.Total), ms(recov.SnapshotLoad), ms(recov.Replay))})
	rep.RestartMs, rep.SnapshotLoadMs, rep.ReplayMs = ms(recov.Total), ms(recov.SnapshotLoad), ms(recov.Replay)
	rep.ReplayedEntries, rep.ReplayedBytes = recov.ReplayedEntries, recov.ReplayedBytes
	rep.StateHashBefore, rep.StateHashAfter = fmt.Sprintf("%016x", before), fmt.Sprintf("%016x", after)
	rep.StateHashEqual = before == after
	say("restart: open %.1f ms (snapshot load %.1f ms, replay of %d entries %.1f ms), state hash %s %s",
		rep.RestartMs, rep.SnapshotLoadMs, rep.ReplayedEntries, rep.ReplayMs, rep.StateHashAfter, map[bool]string{true: "equal", false: "DIFFERENT"}[rep.StateHashEqual])
	if err := sleep(o.Gap); err != nil {
		return nil, err
	}

	// Stop the probes and let the last ones come back.
	stopProbes()
	if err := <-probeDone; err != nil {
		return nil, fmt.Errorf("demo: probes: %w", err)
	}
	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	werr := pc.Wait(wctx)
	cancel()
	sum := rec.Finish(time.Now(), int(sent.Load()))
	mon.finish(sched.Start)
	monDone = true
	if werr != nil && sum.Lost == 0 {
		return nil, fmt.Errorf("demo: waiting for the last probes: %w", werr)
	}
	rep.ProbesSent, rep.ProbesLost = sum.Sent, sum.Lost
	rep.ProbeP50AllU, rep.ProbeP99AllU, rep.ProbeMaxAllU = us(sum.P50), us(sum.P99), us(sum.Max)

	// Windows: each snapshot, and the restart.
	var windows [][2]time.Time
	for _, s := range rep.Snapshots {
		at := sched.Start.Add(time.Duration(s.AtS * float64(time.Second)))
		from, to := at.Add(-o.Settle), at.Add(time.Duration(s.DurationMs*float64(time.Millisecond))+o.Settle)
		windows = append(windows, [2]time.Time{from, to})
		switch s.Mode {
		case "pauseless":
			rep.PauselessPauseMsMax = max(rep.PauselessPauseMsMax, s.PauseMsMax)
			rep.TakeMs = s.TakeMs
		case "stw":
			rep.STWPauseMsMax = max(rep.STWPauseMsMax, s.PauseMsMax)
			rep.STWTakeMs = s.TakeMs
		}
	}
	restartWin := [2]time.Time{holdAt.Add(-o.Settle), resumeAt.Add(o.Settle)}
	windows = append(windows, restartWin)
	rep.RestartPauseMsMax = ms(rec.WindowMax(restartWin[0], restartWin[1]))
	for i, s := range rep.Snapshots {
		if w, ok := rec.WindowWorst(windows[i][0], windows[i][1]); ok {
			rep.Stalls = append(rep.Stalls, stallOf(s.Mode, w, sched.Start, tl))
		}
	}
	if w, ok := rec.WindowWorst(restartWin[0], restartWin[1]); ok {
		rep.Stalls = append(rep.Stalls, stallOf("restart", w, sched.Start, tl))
	}
	if w, ok := rec.WorstOutside(windows); ok {
		rep.Stalls = append(rep.Stalls, stallOf("outside", w, sched.Start, tl))
	}
	rep.ProbeP50Us = us(rec.QuantileOutside(windows, 0.50))
	rep.ProbeP99Us = us(rec.QuantileOutside(windows, 0.99))
	rep.ProbeMaxUs = us(rec.QuantileOutside(windows, 1))
	rep.LoadAvgEnd = measure.LoadAvg()
	return rep, nil
}

// running is a server being served.
type running struct {
	s      *server.Server
	cancel context.CancelFunc
	done   chan error
}

func startServer(o server.Options) (*running, error) {
	s, err := server.New(o)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Serve(ctx) }()
	return r, nil
}

// stop shuts the server down cleanly (once).
func (r *running) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	return <-r.done
}

// preload defines the instruments and sends the resting orders.
func preload(ctx context.Context, o Options, addr string, rep *Report, say func(string, ...any)) error {
	var answered atomic.Int64
	c, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: preloadClient, MaxOutstanding: o.Window + o.Instruments,
		OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRelease {
				answered.Add(1)
			}
		}})
	if err != nil {
		return fmt.Errorf("demo: preload client: %w", err)
	}
	defer c.Close()
	for i := 1; i <= o.Instruments; i++ {
		cmd := engine.Command{Kind: engine.CmdDefineInstrument, Instrument: uint32(i), Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 2 * mid}
		if _, err := c.Send(&cmd); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 11))
	t0 := time.Now()
	bar := newBar(o.Progress, "preload", o.Orders)
	cmd := engine.Command{Kind: engine.CmdNewOrder, Type: engine.Limit, TIF: engine.GTC}
	for i := 0; i < o.Orders; i++ {
		cmd.Instrument = uint32(rng.IntN(o.Instruments)) + 1
		cmd.OrderID = uint64(i) + 1
		cmd.Account = uint64(rng.IntN(1000)) + 1
		cmd.Qty = int64(rng.IntN(100)) + 1
		if rng.IntN(2) == 0 {
			cmd.Side, cmd.Price = engine.Buy, int64(mid-1-rng.IntN(levelsSide))
		} else {
			cmd.Side, cmd.Price = engine.Sell, int64(mid+1+rng.IntN(levelsSide))
		}
		for c.Outstanding() >= o.Window {
			if err := c.Err(); err != nil {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
		if _, err := c.Send(&cmd); err != nil {
			return fmt.Errorf("demo: preload order %d: %w", i+1, err)
		}
		if i&4095 == 0 {
			bar.set(int(answered.Load()))
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	for c.Outstanding() > 0 {
		bar.set(int(answered.Load()) - o.Instruments)
		if err := c.Err(); err != nil {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	bar.done(o.Orders)
	rep.PreloadS = time.Since(t0).Seconds()
	rep.PreloadRate = float64(o.Orders) / rep.PreloadS
	say("preload: %d orders in %.1f s (%.0f orders/s)", o.Orders, rep.PreloadS, rep.PreloadRate)
	return nil
}

// takeSnapshot requests a snapshot in mode and waits for it to complete,
// then fills in its costs and its pause window (once Settle has passed).
func takeSnapshot(ctx context.Context, s *server.Server, mode cluster.SnapshotMode, rec *probe.Recorder, tl *timeline, settle time.Duration, start time.Time) (Snapshot, error) {
	var before cluster.Stats
	if err := s.Inspect(ctx, func(n *cluster.Node, _ *enginesvc.Service) { before = n.Stats() }); err != nil {
		return Snapshot{}, err
	}
	kind := "pauseless"
	if mode == cluster.StopTheWorld {
		kind = "stw"
	}
	at := time.Now()
	rec.Mark("snapshot-"+kind, at)
	if err := s.Inspect(ctx, func(n *cluster.Node, _ *enginesvc.Service) { n.RequestSnapshotMode(mode) }); err != nil {
		return Snapshot{}, err
	}
	var st cluster.Stats
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if err := s.Inspect(ctx, func(n *cluster.Node, _ *enginesvc.Service) { st = n.Stats() }); err != nil {
			return Snapshot{}, err
		}
		if st.Snapshots > before.Snapshots {
			break
		}
		if time.Now().After(deadline) {
			return Snapshot{}, errors.New("demo: snapshot did not complete in 5 minutes")
		}
		time.Sleep(200 * time.Microsecond)
	}
	doneAt := time.Now()
	rec.Mark("snapshot-"+kind+"-done", doneAt)
	tl.add(span{kind: CauseSnapshot, from: at, to: doneAt, d: doneAt.Sub(at),
		what: fmt.Sprintf("the %s snapshot, request to completion (write %.1f ms, duty cycle held %.2f ms)", kind, ms(st.LastSnapshotWrite), ms(st.LastSnapshotPrepare))})
	time.Sleep(settle)
	return Snapshot{Mode: kind, TakeMs: ms(st.LastSnapshotWrite), PrepareMs: ms(st.LastSnapshotPrepare),
		ArchiveMs: ms(st.LastSnapshotArchive), Bytes: st.SnapshotBytes - before.SnapshotBytes,
		PauseMsMax: ms(rec.WindowMax(at.Add(-settle), doneAt.Add(settle))), DurationMs: ms(doneAt.Sub(at)),
		AtS: at.Sub(start).Seconds()}, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// Chart draws the probes' latency over time with the snapshots and the
// restart marked.
func (r *Report) Chart() *plot.LatencyChart {
	c := plot.NewLatencyChart(fmt.Sprintf("matchlog demo: probe latency, %d resting orders, %.0f probes/s, sync level %d", r.Orders, r.ProbeRate, r.SyncLevel))
	if r.rec == nil {
		return c
	}
	r.rec.Each(func(_ int, off, lat time.Duration, _ bool) {
		c.Points = append(c.Points, plot.Point{X: off, Y: lat})
	})
	var restartAt time.Duration
	for _, m := range r.rec.Marks() {
		x := m.At.Sub(r.start)
		switch m.Name {
		case "snapshot-pauseless":
			c.Marks = append(c.Marks, plot.Mark{X: x, Label: "pauseless snapshot", Kind: plot.KindSnapshotPauseless})
		case "snapshot-stw":
			c.Marks = append(c.Marks, plot.Mark{X: x, Label: "stop-the-world snapshot", Kind: plot.KindSnapshotSTW})
		case "restart":
			restartAt = x
			c.Marks = append(c.Marks, plot.Mark{X: x, Label: "restart", Kind: plot.KindRestart})
		case "resumed":
			c.Spans = append(c.Spans, plot.Span{From: restartAt, To: x, Label: "node down (close, load, replay)"})
		}
	}
	for _, st := range r.Stalls {
		if st.Window == "outside" {
			c.Marks = append(c.Marks, plot.Mark{X: time.Duration(st.AtS * float64(time.Second)),
				Label: fmt.Sprintf("worst outside: %.0f ms", st.LatencyMs), Kind: "worst probe outside snapshots"})
		}
	}
	for _, s := range r.Snapshots {
		from := time.Duration(s.AtS * float64(time.Second))
		c.Spans = append(c.Spans, plot.Span{From: from, To: from + time.Duration(s.DurationMs*float64(time.Millisecond)), Label: s.Mode + " snapshot"})
	}
	c.RefLines = []plot.RefLine{
		{Y: time.Duration(r.ProbeP50Us * 1e3), Label: "p50 outside snapshots"},
		{Y: time.Duration(r.ProbeP99Us * 1e3), Label: "p99 outside snapshots"},
	}
	c.Caption = "Each dot is one probe: an IOC order that crosses nothing, sent at a fixed rate over TCP; its latency runs from its scheduled send time to its Release, so a stalled node shows as the latency of every probe scheduled behind the stall."
	c.Rows = r.rows()
	return c
}

func (r *Report) rows() [][2]string {
	f := func(format string, args ...any) string { return fmt.Sprintf(format, args...) }
	rows := [][2]string{
		{"resting orders", f("%d", r.RestingOrders)},
		{"pauseless snapshot", f("take %.1f ms, client pause %.2f ms", r.TakeMs, r.PauselessPauseMsMax)},
		{"stop-the-world snapshot", f("take %.1f ms, client pause %.2f ms", r.STWTakeMs, r.STWPauseMsMax)},
		{"probes outside snapshots", f("p50 %.0f µs, p99 %.0f µs, max %.0f µs", r.ProbeP50Us, r.ProbeP99Us, r.ProbeMaxUs)},
		{"restart", f("%.1f ms (snapshot load %.1f ms, replay %.1f ms)", r.RestartMs, r.SnapshotLoadMs, r.ReplayMs)},
		{"state hash", f("%s / %s equal=%v", r.StateHashBefore, r.StateHashAfter, r.StateHashEqual)},
		{"machine", r.machineLine()},
		{"load average", f("%.2f %.2f %.2f (start) / %.2f %.2f %.2f (end), %d CPUs", r.LoadAvg[0], r.LoadAvg[1], r.LoadAvg[2], r.LoadAvgEnd[0], r.LoadAvgEnd[1], r.LoadAvgEnd[2], r.NumCPU)},
	}
	for _, st := range r.Stalls {
		if st.Window != "outside" {
			continue
		}
		what := "nothing the demo measures"
		if len(st.Causes) > 0 {
			what = st.Causes[0].What
		}
		rows = append(rows, [2]string{"worst probe outside snapshots", f("%.2f ms at +%.3f s: %s", st.LatencyMs, st.AtS, what)})
	}
	return rows
}

// WriteText writes the readable report.
func (r *Report) WriteText(w io.Writer) error {
	var b []byte
	p := func(format string, args ...any) { b = fmt.Appendf(b, format, args...) }
	p("matchlog demo\n\n")
	p("  book          %d resting orders on %d instruments, preloaded over TCP in %.1f s (%.0f orders/s)\n",
		r.RestingOrders, r.Instruments, r.PreloadS, r.PreloadRate)
	p("  in flight     at most %d preload orders and %d probes: their events fill at most half the node's %d-byte egress queue\n",
		r.PreloadWindow, r.ProbeWindow, r.EgressQueueBytes)
	p("  durability    file sync level %d\n", r.SyncLevel)
	p("  probes        %d sent at %.0f/s, %d lost; latency from the scheduled send time to the Release\n", r.ProbesSent, r.ProbeRate, r.ProbesLost)
	p("                outside snapshots and the restart: p50 %.0f µs  p99 %.0f µs  max %.0f µs\n", r.ProbeP50Us, r.ProbeP99Us, r.ProbeMaxUs)
	p("\n  snapshot            take      duty cycle held   client pause (worst probe)   bytes\n")
	for _, s := range r.Snapshots {
		p("  %-18s  %7.1f ms  %9.2f ms       %9.2f ms                  %d\n", s.Mode, s.TakeMs, s.PrepareMs, s.PauseMsMax, s.Bytes)
	}
	if len(r.Stalls) > 0 {
		p("\n  worst probe   latency     sent at    what overlapped its wait (times from the probes' start)\n")
		for _, st := range r.Stalls {
			lost := ""
			if st.Lost {
				lost = " (lost)"
			}
			p("  %-10s  %9.2f ms  %+8.3f s%s", st.Window, st.LatencyMs, st.AtS, lost)
			if len(st.Causes) == 0 {
				p("  nothing the demo measures: no GC, late timer, long log recording or duty cycle, segment roll-over or snapshot\n")
			}
			for i, c := range st.Causes {
				if i > 0 {
					p("  %-10s  %12s  %10s", "", "", "")
				}
				p("  %+.3f s %s\n", c.AtS, c.What)
				if i == 2 && len(st.Causes) > 3 {
					p("  %-10s  %12s  %10s  and %d more (in the JSON report)\n", "", "", "", len(st.Causes)-3)
					break
				}
			}
		}
	}
	p("\n  restart       %.1f ms to reopen: snapshot load %.1f ms + log replay %.1f ms (%d entries, %d bytes); clean close %.1f ms\n",
		r.RestartMs, r.SnapshotLoadMs, r.ReplayMs, r.ReplayedEntries, r.ReplayedBytes, r.CloseMs)
	p("                client pause across the restart: %.1f ms\n", r.RestartPauseMsMax)
	eq := "equal"
	if !r.StateHashEqual {
		eq = "DIFFERENT"
	}
	p("  state hash    %s before, %s after: %s\n", r.StateHashBefore, r.StateHashAfter, eq)
	p("  machine       %s\n", r.machineLine())
	p("                load average %.2f %.2f %.2f at start, %.2f %.2f %.2f at end\n",
		r.LoadAvg[0], r.LoadAvg[1], r.LoadAvg[2], r.LoadAvgEnd[0], r.LoadAvgEnd[1], r.LoadAvgEnd[2])
	if lim := float64(r.NumCPU); r.LoadAvg[0] > lim || r.LoadAvgEnd[0] > lim {
		p("                (load above the CPU count: the latencies are upper bounds)\n")
	}
	_, err := w.Write(b)
	return err
}

// machineLine is the date, the build and the processors.
func (r *Report) machineLine() string {
	m := r.Machine
	cpu := fmt.Sprintf("%d CPUs", r.NumCPU)
	if m.CPUModel != "" {
		cpu += " (" + m.CPUModel + ")"
	}
	return fmt.Sprintf("%s, %s %s/%s, %s, GOMAXPROCS %d", m.Date, m.GoVersion, m.OS, m.Arch, cpu, r.GOMAXPROCS)
}

// bar is a progress bar on a writer.
type bar struct {
	w     io.Writer
	name  string
	total int
	t0    time.Time
	last  time.Time
}

func newBar(w io.Writer, name string, total int) *bar {
	return &bar{w: w, name: name, total: total, t0: time.Now()}
}

func (b *bar) set(n int) {
	if b.w == nil || time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last = time.Now()
	b.draw(n)
}

func (b *bar) draw(n int) {
	n = max(0, min(n, b.total))
	const width = 30
	fill := width * n / max(1, b.total)
	rate := float64(n) / max(1e-9, time.Since(b.t0).Seconds())
	line := make([]byte, 0, 96)
	line = fmt.Appendf(line, "\r%s [", b.name)
	for i := range width {
		switch {
		case i < fill:
			line = append(line, '=')
		case i == fill:
			line = append(line, '>')
		default:
			line = append(line, ' ')
		}
	}
	line = fmt.Appendf(line, "] %3d%% %d/%d %.0f/s ", 100*n/max(1, b.total), n, b.total, rate)
	b.w.Write(line)
}

func (b *bar) done(n int) {
	if b.w == nil {
		return
	}
	b.draw(n)
	b.w.Write([]byte("\n"))
}
