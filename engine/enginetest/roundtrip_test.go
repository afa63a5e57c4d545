package enginetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// pair is an engine and the model driven by one generator, checked
// command by command.
type pair struct {
	t *testing.T
	g *Gen
	e *engine.Engine
	m *Model
	c engine.Command
	n int
}

func newPair(t *testing.T, seed int64, cfg GenConfig) *pair {
	return &pair{t: t, g: NewGen(seed, cfg), e: engine.New(), m: NewModel()}
}

// step applies the next command to the engine, the model and any extra
// engines, and fails on any difference in events.
func (p *pair) step(extra ...*engine.Engine) []engine.Event {
	p.t.Helper()
	p.g.Next(&p.c)
	mv := p.m.Apply(&p.c)
	ev := p.e.Apply(&p.c)
	if firstDiff(ev, mv) >= 0 {
		p.t.Fatalf("command %d: %s\nengine:\n%smodel:\n%s", p.n, FormatCommand(&p.c), FormatEvents(ev, "  "), FormatEvents(mv, "  "))
	}
	for i, x := range extra {
		if xv := x.Apply(&p.c); firstDiff(xv, mv) >= 0 {
			p.t.Fatalf("command %d: %s\nengine %d:\n%smodel:\n%s", p.n, FormatCommand(&p.c), i, FormatEvents(xv, "  "), FormatEvents(mv, "  "))
		}
	}
	p.g.Observe(mv)
	p.n++
	return mv
}

func (p *pair) run(n int, extra ...*engine.Engine) {
	p.t.Helper()
	for i := 0; i < n; i++ {
		p.step(extra...)
	}
}

// sameState fails unless the engines' state hashes and record streams
// equal the model's.
func (p *pair) sameState(what string, es ...*engine.Engine) {
	p.t.Helper()
	mh := p.m.StateHash()
	for i, e := range es {
		if eh := e.StateHash(); eh != mh {
			p.t.Fatalf("%s: engine %d state hash %016x, model %016x\n%s", what, i, eh, mh,
				DiffLines(Records(e.SnapshotTo), Records(p.m.SnapshotTo), "engine", "model"))
		}
	}
}

// stripSources drops what a rejected command may change from a record
// stream: source records, the header's source count and the End record.
func stripSources(lines []string) []string {
	var out []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "source "), strings.HasPrefix(l, "end "):
		case strings.HasPrefix(l, "header "):
			f := strings.Fields(l)
			f[3] = "*"
			out = append(out, strings.Join(f, " "))
		default:
			out = append(out, l)
		}
	}
	return out
}

// TestRejectedLeavesStateUnchanged: a rejected command changes nothing but
// its source's high-water mark; an ignored (resent) command changes
// nothing at all.
func TestRejectedLeavesStateUnchanged(t *testing.T) {
	p := newPair(t, 21, GenConfig{InvalidPct: 40, Spread: 3})
	reasons := map[engine.Reason]int{}
	ignored := 0
	for i := 0; i < scaled(40_000); i++ {
		before := p.e.StateHash()
		var lines []string
		full := i%20 == 0
		if full {
			lines = Records(p.e.SnapshotTo)
		}
		marks := map[uint64]uint64{}
		for s, q := range p.m.sources {
			marks[s] = q
		}
		evs := p.step()
		c := p.c
		after := p.e.StateHash()
		switch {
		case len(evs) == 0:
			ignored++
			if after != before {
				t.Fatalf("command %d ignored but the state hash changed: %s", i, FormatCommand(&c))
			}
		case evs[0].Kind == engine.EvRejected:
			reasons[evs[0].Reason]++
			if len(evs) != 2 || evs[1].Kind != engine.EvRelease {
				t.Fatalf("command %d: rejected with more than Release:\n%s", i, FormatEvents(evs, "  "))
			}
			want := before + engine.HashSource(c.Source, c.Seq)
			if old, ok := marks[c.Source]; ok {
				want -= engine.HashSource(c.Source, old)
			}
			if after != want {
				t.Fatalf("command %d rejected %s but the state changed beyond its source mark: %s\n%s", i, evs[0].Reason, FormatCommand(&c),
					DiffLines(stripSources(lines), stripSources(Records(p.e.SnapshotTo)), "before", "after"))
			}
			if full {
				now := Records(p.e.SnapshotTo)
				if d := DiffLines(stripSources(lines), stripSources(now), "before", "after"); d != "" {
					t.Fatalf("command %d rejected %s: %s", i, evs[0].Reason, d)
				}
				if !contains(strings.Join(now, "\n"), fmt.Sprintf("source %d %d", c.Source, c.Seq)) {
					t.Fatalf("command %d rejected: source %d mark did not move to %d", i, c.Source, c.Seq)
				}
			}
		}
	}
	for r := engine.RejUnknownInstrument; r <= engine.RejNoChange; r++ {
		if reasons[r] == 0 {
			t.Errorf("no command rejected %s", r)
		}
	}
	if ignored == 0 {
		t.Error("no command ignored")
	}
	t.Logf("rejects %v, ignored %d", reasons, ignored)
}

// restore rebuilds a fresh engine from snapshot and fails on any error.
func restore(t *testing.T, what string, snapshot func(engine.Sink) error) *engine.Engine {
	t.Helper()
	f := engine.New()
	r := f.Restorer()
	err := snapshot(r)
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		t.Fatalf("%s: restore: %v", what, err)
	}
	return f
}

// TestSnapshotRoundTrip: SnapshotTo into a fresh engine's Restorer gives the
// same state hash and record stream, and the restored engine then behaves
// exactly like the uninterrupted one. Also restores from a frozen clone
// and from the model's own record stream.
func TestSnapshotRoundTrip(t *testing.T) {
	empty := restore(t, "empty", engine.New().SnapshotTo)
	if empty.StateHash() != engine.New().StateHash() || empty.StateHash() != NewModel().StateHash() {
		t.Fatal("empty engine: round trip changes the state hash")
	}
	// A source whose mark is 0 (its first command had Seq 0) keeps
	// ignoring Seq 0 after a round trip.
	zero := engine.New()
	def := engine.Command{Kind: engine.CmdDefineInstrument, Source: 7, Seq: 0, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 9}
	if evs := zero.Apply(&def); len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
		t.Fatalf("define on a new source with seq 0: %s", FormatEvents(evs, ""))
	}
	zero = restore(t, "seq zero", zero.SnapshotTo)
	def.Instrument = 2
	if evs := zero.Apply(&def); len(evs) != 0 {
		t.Fatalf("seq 0 again after a round trip: %s", FormatEvents(evs, ""))
	}
	shapes := []GenConfig{{}, {Deep: true, Instruments: 2, MaxInstruments: 2}, {Spread: 1, Accounts: 2}, {Instruments: 20, Sources: 9}}
	for i, cfg := range shapes {
		t.Run(fmt.Sprintf("shape=%d", i), func(t *testing.T) {
			p := newPair(t, int64(100+i), cfg)
			p.run(scaled(15_000))
			p.sameState("before snapshot", p.e)
			fromEngine := restore(t, "engine", p.e.SnapshotTo)
			fromClone := restore(t, "clone", p.e.Clone().SnapshotTo)
			fromModel := restore(t, "model", p.m.SnapshotTo)
			p.sameState("restored", fromEngine, fromClone, fromModel)
			want := Records(p.e.SnapshotTo)
			for name, x := range map[string]*engine.Engine{"engine": fromEngine, "clone": fromClone, "model": fromModel} {
				if d := DiffLines(want, Records(x.SnapshotTo), "original", name); d != "" {
					t.Fatalf("restored from %s: %s", name, d)
				}
			}
			// Go on: every engine must emit the model's events.
			for k := 0; k < 5; k++ {
				p.run(scaled(3000), fromEngine, fromClone, fromModel)
				p.sameState("after restore", p.e, fromEngine, fromClone, fromModel)
			}
			// Restore again from the restored engine (a second generation).
			again := restore(t, "restored engine", fromEngine.SnapshotTo)
			p.run(3000, again)
			p.sameState("second generation", p.e, again)
		})
	}
}

// TestCloneIsFrozen: clones taken along a stream keep their state while the
// engine goes on mutating the shared (copy-on-write) trees.
func TestCloneIsFrozen(t *testing.T) {
	p := newPair(t, 77, GenConfig{Deep: true, Instruments: 2, MaxInstruments: 3, Spread: 4})
	type shot struct {
		f     *engine.Frozen
		at    int
		hash  uint64
		lines []string
	}
	var shots []shot
	for k := 0; k < 12; k++ {
		p.run(scaled(2500))
		f := p.e.Clone()
		s := shot{f: f, at: p.n, hash: p.m.StateHash(), lines: Records(p.m.SnapshotTo)}
		if fh := f.StateHash(); fh != s.hash {
			t.Fatalf("clone at %d: state hash %016x, model %016x", p.n, fh, s.hash)
		}
		shots = append(shots, s)
		if k == 6 { // a mass cancel of everything right after a clone
			c := engine.Command{Kind: engine.CmdMassCancel, Source: 99, Seq: uint64(k + 1)}
			if ev, mv := p.e.Apply(&c), p.m.Apply(&c); firstDiff(ev, mv) >= 0 {
				t.Fatalf("mass cancel:\n%s%s", FormatEvents(ev, "  "), FormatEvents(mv, "  "))
			}
		}
	}
	p.run(5000)
	for _, s := range shots {
		if fh := s.f.StateHash(); fh != s.hash {
			t.Fatalf("clone taken at %d changed: %016x, was %016x", s.at, fh, s.hash)
		}
		if d := DiffLines(s.lines, Records(s.f.SnapshotTo), "then", "now"); d != "" {
			t.Fatalf("clone taken at %d changed: %s", s.at, d)
		}
		checkPartitions(t, fmt.Sprintf("clone at %d", s.at), s.f, 1, 2, 3, 4, 7)
	}
	p.sameState("engine after clones", p.e)
}

// TestCloneConcurrentReaders reads frozen clones (hash, record stream,
// partitions on several goroutines) while the writer goes on; run it with
// -race.
func TestCloneConcurrentReaders(t *testing.T) {
	p := newPair(t, 78, GenConfig{Deep: true, Instruments: 2, MaxInstruments: 2, Spread: 3})
	type job struct {
		f    *engine.Frozen
		hash uint64
	}
	jobs := make(chan job)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if h := j.f.StateHash(); h != j.hash {
					errs <- fmt.Errorf("clone state hash %016x, want %016x", h, j.hash)
					continue
				}
				var sum uint64
				var inner sync.WaitGroup
				parts := j.f.Partitions(3)
				sums := make([]uint64, len(parts))
				for i, part := range parts {
					inner.Add(1)
					go func() {
						defer inner.Done()
						var tp Tape
						_, sums[i], _ = part.Emit(&tp)
					}()
				}
				inner.Wait()
				for _, s := range sums {
					sum += s
				}
				var want uint64
				tp, _ := restingTape(j.f.SnapshotTo)
				for _, r := range tp {
					want += engine.HashResting(r.Instrument, r.Side, r.OrderID, r.Account, r.Price, r.Qty, r.Seq, r.STP, r.Post)
				}
				if sum != want {
					errs <- fmt.Errorf("partition hash sums %016x, want %016x", sum, want)
				}
			}
		}()
	}
	for k := 0; k < 20; k++ {
		p.run(1500)
		jobs <- job{f: p.e.Clone(), hash: p.m.StateHash()}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
