package enginetest

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/matchlog/matchlog/engine"
)

// DiffOptions tunes [RunDiff]. The zero value is usable.
type DiffOptions struct {
	Gen GenConfig

	// HashEvery compares the state hashes every so many commands (default
	// 1000); the final states are always compared.
	HashEvery int

	// Check calls the engine's structure checker after every command.
	Check bool

	// RestoreEvery, when positive, rebuilds the engine from its own
	// snapshot (SnapshotTo into a fresh engine's Restorer) every so many
	// commands and goes on with the rebuilt engine.
	RestoreEvery int

	// CloneEvery, when positive, takes a frozen clone every so many
	// commands, checks that its state hash and record stream are the
	// model's, and at the next clone checks that the old clone has not
	// changed while the engine went on.
	CloneEvery int

	// Progress, when set, is called every ProgressEvery commands (default
	// 100,000) with the totals so far.
	Progress      func(DiffResult)
	ProgressEvery int
}

// DiffResult sums up a differential run.
type DiffResult struct {
	Seed      int64
	Commands  int    // commands applied
	Events    int    // events emitted (by each side)
	Trades    int    // trade events
	Rejects   int    // rejected commands
	Ignored   int    // commands ignored as resent
	Resting   int    // resting orders at the end
	Armed     int    // armed triggers at the end
	StateHash uint64 // the final state hash (equal on both sides)
}

func (r DiffResult) String() string {
	return fmt.Sprintf("seed %d: %d commands, %d events, %d trades, %d rejects, %d ignored, %d resting, %d armed, state hash %016x",
		r.Seed, r.Commands, r.Events, r.Trades, r.Rejects, r.Ignored, r.Resting, r.Armed, r.StateHash)
}

// Divergence is the error [RunDiff] returns when the engine and the model
// disagree (or the engine fails a check or panics).
type Divergence struct {
	Seed    int64
	Index   int // 0-based index of the command in the stream
	Command engine.Command
	What    string // what differed
	Detail  string // more about it: a record diff, a check error, a stack

	Engine, Model         []engine.Event // the command's events on each side
	EngineHash, ModelHash uint64
}

// Error renders the divergence with both sides' events.
func (d *Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "enginetest: divergence at seed %d, command %d: %s\n", d.Seed, d.Index, d.What)
	fmt.Fprintf(&b, "command: %s\n", FormatCommand(&d.Command))
	if d.Engine != nil || d.Model != nil {
		first := firstDiff(d.Engine, d.Model)
		if first >= 0 {
			fmt.Fprintf(&b, "first differing event: %d\n", first)
		}
		fmt.Fprintf(&b, "engine events:\n%s", FormatEvents(d.Engine, "  "))
		fmt.Fprintf(&b, "model events:\n%s", FormatEvents(d.Model, "  "))
	}
	if d.EngineHash != 0 || d.ModelHash != 0 {
		fmt.Fprintf(&b, "state hash: engine %016x, model %016x\n", d.EngineHash, d.ModelHash)
	}
	if d.Detail != "" {
		b.WriteString(d.Detail)
		if !strings.HasSuffix(d.Detail, "\n") {
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "reproduce: RunDiff(%d, %d, ...) or matchlog difftest --seed %d --commands %d\n", d.Seed, d.Index+1, d.Seed, d.Index+1)
	return b.String()
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

// RunDiff feeds n commands of the stream seed generates to a new engine and
// a new model side by side. It compares the events of every command and the
// state hashes (see [DiffOptions]), and returns a [*Divergence] at the first
// difference.
func RunDiff(seed int64, n int, opts DiffOptions) (res DiffResult, err error) {
	if opts.HashEvery <= 0 {
		opts.HashEvery = 1000
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 100_000
	}
	res.Seed = seed
	g := NewGen(seed, opts.Gen)
	e := engine.New()
	m := NewModel()
	var (
		c        engine.Command
		idx      int
		frozen   *engine.Frozen
		frozenAt uint64
	)
	diverge := func(what, detail string) *Divergence {
		return &Divergence{Seed: seed, Index: idx, Command: c, What: what, Detail: detail}
	}
	defer func() {
		if p := recover(); p != nil {
			res.Commands = idx
			err = diverge(fmt.Sprintf("engine panicked: %v", p), string(debug.Stack()))
		}
	}()
	var ed, md []engine.Level
	compareHash := func(what string) error {
		for _, id := range m.Instruments() {
			for _, side := range []engine.Side{engine.Buy, engine.Sell} {
				ed = e.Depth(id, side, 1<<30, ed[:0])
				md = m.Depth(id, side, 1<<30, md[:0])
				if !slices.Equal(ed, md) {
					return diverge("depth differs", fmt.Sprintf("instrument %d %s: engine %v\nmodel %v", id, side, ed, md))
				}
				for _, n := range []int{1, 3} {
					if top := e.Depth(id, side, n, nil); len(top) != min(n, len(md)) {
						return diverge("top-n depth differs", fmt.Sprintf("instrument %d %s: Depth(%d) gave %v, full depth %v", id, side, n, top, md))
					}
				}
			}
		}
		eh, mh := e.StateHash(), m.StateHash()
		if eh == mh {
			return nil
		}
		d := diverge(what, DiffLines(Records(e.SnapshotTo), Records(m.SnapshotTo), "engine", "model"))
		d.EngineHash, d.ModelHash = eh, mh
		return d
	}

	for idx = 0; idx < n; idx++ {
		g.Next(&c)
		ev := e.Apply(&c)
		mv := m.Apply(&c)
		if firstDiff(ev, mv) >= 0 {
			d := diverge("events differ", "")
			d.Engine = append([]engine.Event{}, ev...)
			d.Model = append([]engine.Event{}, mv...)
			return res, d
		}
		g.Observe(mv)
		res.Commands++
		res.Events += len(mv)
		if len(mv) == 0 {
			res.Ignored++
		}
		for i := range mv {
			switch mv[i].Kind {
			case engine.EvTrade:
				res.Trades++
			case engine.EvRejected:
				res.Rejects++
			}
		}
		if opts.Check {
			if cerr := e.Check(); cerr != nil {
				return res, diverge("engine check failed", cerr.Error())
			}
		}
		done := idx + 1
		if done%opts.HashEvery == 0 {
			if herr := compareHash("state hash differs"); herr != nil {
				return res, herr
			}
		}
		if opts.RestoreEvery > 0 && done%opts.RestoreEvery == 0 {
			fresh := engine.New()
			r := fresh.Restorer()
			serr := e.SnapshotTo(r)
			if serr == nil {
				serr = r.Err()
			}
			if serr != nil {
				return res, diverge("snapshot/restore failed", serr.Error())
			}
			if fh, eh := fresh.StateHash(), e.StateHash(); fh != eh {
				d := diverge("restored engine's state hash differs", DiffLines(Records(e.SnapshotTo), Records(fresh.SnapshotTo), "engine", "restored"))
				d.EngineHash, d.ModelHash = fh, eh
				return res, d
			}
			e = fresh
		}
		if opts.CloneEvery > 0 && done%opts.CloneEvery == 0 {
			if frozen != nil {
				if fh := frozen.StateHash(); fh != frozenAt {
					return res, diverge("an older frozen clone changed", fmt.Sprintf("clone hash %016x, was %016x", fh, frozenAt))
				}
			}
			frozen = e.Clone()
			frozenAt = m.StateHash()
			if fh := frozen.StateHash(); fh != frozenAt {
				d := diverge("frozen clone's state hash differs", DiffLines(Records(frozen.SnapshotTo), Records(m.SnapshotTo), "clone", "model"))
				d.EngineHash, d.ModelHash = fh, frozenAt
				return res, d
			}
		}
		if opts.Progress != nil && done%opts.ProgressEvery == 0 {
			opts.Progress(res)
		}
	}
	idx = n - 1
	if n > 0 {
		if herr := compareHash("final state hash differs"); herr != nil {
			return res, herr
		}
	}
	res.StateHash = m.StateHash()
	res.Resting, res.Armed = m.Orders()
	return res, nil
}
