// Package snaptest checks snapshot and restore end to end: a seeded random
// command stream drives a primary engine, snapshots of it are taken at random
// points through [snapshot.Publisher] into an Aeron-format log buffer, each is
// restored with [snapshot.Load] by a reader running concurrently with the
// writer, and the restored engine (the shadow) is then fed the same commands
// as the primary, its events and state compared with the primary's.
//
// [RunRestoreDiff] is what `matchlog difftest` runs by default, and tests
// call it directly. It is a superset of [enginetest.RunDiff]: the stream is
// RunDiff's (the same generator, configuration and feedback), and the
// primary engine is still compared with the model, command by command, as
// RunDiff compares them.
//
// # Snapshot points
//
// Points are drawn from the seed (a generator of their own, so the command
// stream is RunDiff's): one within the first 100 commands, then gaps drawn
// uniformly from [1, 2*Every) (Every defaults to 30,000, so a million
// commands take about three dozen snapshots), and always one within the last
// 1% of the stream. A point p means: after p commands have been applied.
// The late point depends on the stream's length, so a divergence is
// reproduced by running the same seed and the same number of commands,
// which is what [Divergence] prints.
//
// At each point:
//
//  1. A log is made with a random geometry: MTU 1,408 or 65,504; a term of
//     the smallest length the MTU allows, twice that, or one that holds the
//     whole snapshot; a start position either 0 or just before the end of a term,
//     so that the snapshot rotates into the next term; and an initial term
//     id that sometimes makes term ids wrap.
//  2. The snapshot is written: snapshots alternate between a linear
//     [snapshot.Publisher.Take] of the primary and, when Options.Workers > 0,
//     a parallel [snapshot.Publisher.TakeFrozen] of a clone with that many
//     workers (ParallelMin 0, so the parallel path runs whatever the book's
//     size). Before a parallel take, a linear take of the same state is
//     captured, and every fragment the loader reads from the parallel take
//     is compared byte for byte with it.
//  3. A goroutine loads the snapshot from the log's image while it is being
//     written; the publisher, when back-pressured, moves its position limit
//     to the reader's position plus a window, as a live publication does.
//     The window is drawn too: half a term (Aeron's IPC default), two MTUs,
//     or one frame at a time. The reader must consume exactly what was written, and return the
//     BEGIN marker that was written.
//  4. The restored engine must have the primary's state hash and depth on
//     every instrument, and pass [engine.Engine.Check]. It replaces the
//     previous shadow.
//
// # Comparisons
//
// After every command: the primary's events against the model's (unless
// Options.NoModel) and against the shadow's, and the order and trigger counts
// of primary and shadow. State hashes walk the whole state, so they are not
// compared after every command: the shadow's hash is compared with the
// primary's after each of the first HashWindow commands (default 1,000)
// after a restore, then every HashEvery commands (default 1,024), and at the
// end; the model's hash and depth are compared every Diff.HashEvery commands
// (default 1,000) and at the end, as RunDiff does. The first difference, a
// failed take or load, a failed check or a panic is returned as a
// [*Divergence].
package snaptest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
)

// Options tunes [RunRestoreDiff]. The zero value is usable.
type Options struct {
	// Diff shapes the stream and the model comparison as for
	// [enginetest.RunDiff]: Gen, HashEvery (model), Check (the structure
	// check, here of the primary and the shadow after every command),
	// Progress and ProgressEvery. RestoreEvery and CloneEvery must be zero:
	// the snapshot points take their place.
	Diff enginetest.DiffOptions

	// NoModel leaves the model out: only the primary and the shadow are
	// compared.
	NoModel bool

	// Every is the mean number of commands between snapshot points
	// (default 30,000).
	Every int

	// Workers, when positive, makes every other snapshot a parallel take
	// with that many encoding workers.
	Workers int

	// HashWindow is how many commands after each restore the shadow's
	// state hash is compared after every command (default 1,000; -1 for
	// none); HashEvery is how often it is compared afterwards (default
	// 1,024).
	HashWindow int
	HashEvery  int

	// Test hooks.
	damage       func(snap int) (fragment, offset int, ok bool) // flip a byte of a fragment before the loader sees it
	afterRestore func(snap int, shadow *engine.Engine)          // change the shadow once restored
	alterRef     func(snap int, ref [][]byte)                   // change the linear reference of a parallel take
}

// Result sums up a run. The embedded DiffResult holds the stream's totals
// as [enginetest.RunDiff] reports them.
type Result struct {
	enginetest.DiffResult

	Workers       int            // Options.Workers
	Snapshots     int            // snapshots taken
	Linear        int            // of which linear takes
	Parallel      int            // of which parallel takes
	Restores      int            // snapshots restored and checked
	Rotated       int            // snapshots that crossed into another term
	BackPressured int            // snapshots whose publisher had to wait for the reader
	MaxOrders     uint64         // resting orders in the largest snapshot
	Bytes         int64          // bytes written to the logs by the restored snapshots (frames and padding)
	ByteChecks    int            // parallel takes compared byte for byte with a linear take
	EventChecks   int            // commands whose events were compared between primary and shadow
	HashChecks    int            // state hash comparisons between primary and shadow (restores included)
	Points        []SnapshotInfo // every snapshot taken, in order
}

// String is a one-line summary of the snapshots.
func (r Result) String() string {
	par := ""
	if r.Workers > 0 {
		par = fmt.Sprintf(", %d parallel with %d workers", r.Parallel, r.Workers)
	}
	return fmt.Sprintf("seed %d: %d commands, %d snapshots (%d linear%s), %d restores, %d across a term boundary, %d back-pressured, "+
		"largest %d orders, %d bytes written, %d byte checks, %d event checks, %d hash checks",
		r.Seed, r.Commands, r.Snapshots, r.Linear, par, r.Restores, r.Rotated, r.BackPressured,
		r.MaxOrders, r.Bytes, r.ByteChecks, r.EventChecks, r.HashChecks)
}

const (
	defaultEvery      = 30_000
	defaultHashWindow = 1000
	defaultHashEvery  = 1024
)

// points returns the snapshot points of a run of n commands: the numbers of
// commands applied when each snapshot is taken, ascending, each in [1, n-1].
func points(rng *rand.Rand, n, every int) []int {
	if n < 2 {
		return nil
	}
	early := 1 + rng.IntN(min(n-1, 100))
	late := n - 1 - rng.IntN(max(1, n/100))
	late = max(late, early)
	pts := []int{early}
	for p := early + 1 + rng.IntN(2*every-1); p < late; p += 1 + rng.IntN(2*every-1) {
		pts = append(pts, p)
	}
	if late > early {
		pts = append(pts, late)
	}
	return pts
}

// RunRestoreDiff feeds n commands of the stream seed generates to a primary
// engine and (unless Options.NoModel) the model, takes snapshots of the
// primary at seeded random points, restores each into a fresh engine through
// a log buffer, and goes on feeding the most recently restored engine the
// same commands as the primary; see the package documentation for what is
// compared when. It returns a [*Divergence] at the first difference, with
// the totals so far.
func RunRestoreDiff(seed int64, n int, opts Options) (res Result, err error) {
	if opts.Diff.RestoreEvery != 0 || opts.Diff.CloneEvery != 0 {
		return res, errors.New("snaptest: Diff.RestoreEvery and Diff.CloneEvery are not supported")
	}
	if n < 0 || opts.Workers < 0 || opts.Every < 0 {
		return res, fmt.Errorf("snaptest: bad arguments: %d commands, %d workers, every %d", n, opts.Workers, opts.Every)
	}
	if opts.Every == 0 {
		opts.Every = defaultEvery
	}
	if opts.HashWindow == 0 {
		opts.HashWindow = defaultHashWindow
	}
	if opts.HashEvery <= 0 {
		opts.HashEvery = defaultHashEvery
	}
	if opts.Diff.HashEvery <= 0 {
		opts.Diff.HashEvery = 1000
	}
	if opts.Diff.ProgressEvery <= 0 {
		opts.Diff.ProgressEvery = 100_000
	}
	r := &runner{
		seed: seed, n: n, opts: opts,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x736e617074657374)), // "snaptest"
		g:   enginetest.NewGen(seed, opts.Diff.Gen),
		e:   engine.New(),
		idx: -1,
	}
	if !opts.NoModel {
		r.m = enginetest.NewModel()
	}
	r.res.Seed, r.res.Workers = seed, opts.Workers
	defer func() {
		if p := recover(); p != nil {
			err = r.diverge(fmt.Sprintf("panic: %v", p), string(debug.Stack()))
		}
		res = r.res
	}()
	return r.res, r.run()
}

// runner is one run's state.
type runner struct {
	seed int64
	n    int
	opts Options
	rng  *rand.Rand
	g    *enginetest.Gen
	e    *engine.Engine // the primary
	m    *enginetest.Model

	shadow     *engine.Engine // the most recently restored engine, or nil
	shadowSnap *SnapshotInfo  // the snapshot it came from
	since      int            // commands the shadow has been fed since its restore

	res   Result
	c     engine.Command
	idx   int      // index of the command being processed
	insts []uint32 // instruments defined, ascending

	ed, sd []engine.Level
}

func (r *runner) run() error {
	pts := points(r.rng, r.n, r.opts.Every)
	next := 0
	for r.idx = 0; r.idx < r.n; r.idx++ {
		if err := r.step(); err != nil {
			return err
		}
		done := r.idx + 1
		if next < len(pts) && pts[next] == done {
			if err := r.snapshot(next); err != nil {
				return err
			}
			next++
		}
		if r.opts.Diff.Progress != nil && done%r.opts.Diff.ProgressEvery == 0 {
			r.opts.Diff.Progress(r.res.DiffResult)
		}
	}
	if r.n == 0 {
		return nil
	}
	r.idx = r.n - 1
	ph := r.e.StateHash()
	if err := r.compareModel(ph, "final state hash differs"); err != nil {
		return err
	}
	if err := r.compareShadow(ph, "final state hash of the restored engine differs"); err != nil {
		return err
	}
	r.res.StateHash = ph
	r.res.Resting, r.res.Armed = r.e.Orders(), r.e.Triggers()
	return nil
}

// step applies command idx to every engine and compares.
func (r *runner) step() error {
	c := &r.c
	r.g.Next(c)
	ev := r.e.Apply(c)
	obs := ev
	if r.m != nil {
		mv := r.m.Apply(c)
		if firstDiff(ev, mv) >= 0 {
			return r.modelDiverge(&enginetest.Divergence{What: "events differ",
				Engine: slices.Clone(ev), Model: slices.Clone(mv)})
		}
		obs = mv
	}
	if r.shadow != nil {
		sv := r.shadow.Apply(c)
		r.since++
		r.res.EventChecks++
		if firstDiff(ev, sv) >= 0 {
			d := r.diverge("events of the restored engine differ", "")
			d.Primary, d.Shadow = slices.Clone(ev), slices.Clone(sv)
			return d
		}
		if r.e.Orders() != r.shadow.Orders() || r.e.Triggers() != r.shadow.Triggers() {
			return r.diverge("order or trigger count of the restored engine differs",
				fmt.Sprintf("primary %d orders, %d triggers; restored %d orders, %d triggers",
					r.e.Orders(), r.e.Triggers(), r.shadow.Orders(), r.shadow.Triggers()))
		}
	}
	r.g.Observe(obs)
	r.count(c, ev)

	if r.opts.Diff.Check {
		if err := r.e.Check(); err != nil {
			return r.modelDiverge(&enginetest.Divergence{What: "engine check failed", Detail: err.Error()})
		}
		if r.shadow != nil {
			if err := r.shadow.Check(); err != nil {
				return r.diverge("restored engine's check failed", err.Error())
			}
		}
	}
	done := r.idx + 1
	var ph uint64
	hashed := false
	primaryHash := func() uint64 {
		if !hashed {
			ph, hashed = r.e.StateHash(), true
		}
		return ph
	}
	if r.m != nil && done%r.opts.Diff.HashEvery == 0 {
		if err := r.compareModel(primaryHash(), "state hash differs"); err != nil {
			return err
		}
	}
	if r.shadow != nil && (r.since <= r.opts.HashWindow || done%r.opts.HashEvery == 0) {
		if err := r.compareShadow(primaryHash(), "state hash of the restored engine differs"); err != nil {
			return err
		}
	}
	return nil
}

// count adds a command's events to the totals and notes new instruments.
func (r *runner) count(c *engine.Command, ev []engine.Event) {
	res := &r.res.DiffResult
	res.Commands++
	res.Events += len(ev)
	if len(ev) == 0 {
		res.Ignored++
	}
	for i := range ev {
		switch ev[i].Kind {
		case engine.EvTrade:
			res.Trades++
		case engine.EvRejected:
			res.Rejects++
		case engine.EvAccepted:
			if c.Kind == engine.CmdDefineInstrument {
				if i, found := slices.BinarySearch(r.insts, c.Instrument); !found {
					r.insts = slices.Insert(r.insts, i, c.Instrument)
				}
			}
		}
	}
}

// compareModel compares the primary's depth and state hash (ph) with the
// model's, as RunDiff does.
func (r *runner) compareModel(ph uint64, what string) error {
	if r.m == nil {
		return nil
	}
	for _, id := range r.m.Instruments() {
		for _, side := range []engine.Side{engine.Buy, engine.Sell} {
			r.ed = r.e.Depth(id, side, 1<<30, r.ed[:0])
			r.sd = r.m.Depth(id, side, 1<<30, r.sd[:0])
			if !slices.Equal(r.ed, r.sd) {
				return r.modelDiverge(&enginetest.Divergence{What: "depth differs",
					Detail: fmt.Sprintf("instrument %d %s: engine %v\nmodel %v", id, side, r.ed, r.sd)})
			}
			for _, n := range []int{1, 3} {
				if top := r.e.Depth(id, side, n, nil); len(top) != min(n, len(r.sd)) {
					return r.modelDiverge(&enginetest.Divergence{What: "top-n depth differs",
						Detail: fmt.Sprintf("instrument %d %s: Depth(%d) gave %v, full depth %v", id, side, n, top, r.sd)})
				}
			}
		}
	}
	if mh := r.m.StateHash(); ph != mh {
		return r.modelDiverge(&enginetest.Divergence{What: what, EngineHash: ph, ModelHash: mh,
			Detail: enginetest.DiffLines(enginetest.Records(r.e.SnapshotTo), enginetest.Records(r.m.SnapshotTo), "engine", "model")})
	}
	return nil
}

// compareShadow compares the shadow's state hash with the primary's (ph).
func (r *runner) compareShadow(ph uint64, what string) error {
	if r.shadow == nil {
		return nil
	}
	r.res.HashChecks++
	if sh := r.shadow.StateHash(); sh != ph {
		d := r.diverge(what, enginetest.DiffLines(enginetest.Records(r.e.SnapshotTo), enginetest.Records(r.shadow.SnapshotTo), "primary", "restored"))
		d.PrimaryHash, d.ShadowHash = ph, sh
		return d
	}
	return nil
}

// compareDepth compares the full depth of every instrument of the primary
// and of restored.
func (r *runner) compareDepth(restored *engine.Engine) string {
	for _, id := range r.insts {
		for _, side := range []engine.Side{engine.Buy, engine.Sell} {
			r.ed = r.e.Depth(id, side, 1<<30, r.ed[:0])
			r.sd = restored.Depth(id, side, 1<<30, r.sd[:0])
			if !slices.Equal(r.ed, r.sd) {
				return fmt.Sprintf("instrument %d %s: primary %v\nrestored %v", id, side, r.ed, r.sd)
			}
		}
	}
	return ""
}

// diverge returns a Divergence at the current command.
func (r *runner) diverge(what, detail string) *Divergence {
	d := &Divergence{Seed: r.seed, Commands: r.n, Workers: r.opts.Workers, Check: r.opts.Diff.Check,
		Index: r.idx, What: what, Detail: detail, Since: r.since}
	if r.idx >= 0 {
		d.Command = r.c
	}
	if r.shadowSnap != nil {
		s := *r.shadowSnap
		d.Snapshot = &s
	}
	return d
}

// modelDiverge wraps a difference between the primary and the model.
func (r *runner) modelDiverge(md *enginetest.Divergence) *Divergence {
	md.Seed, md.Index, md.Command = r.seed, r.idx, r.c
	d := r.diverge("primary engine and model diverge: "+md.What, "")
	d.Model = md
	return d
}

// firstDiff returns the index of the first differing event, or -1.
func firstDiff(a, b []engine.Event) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}
