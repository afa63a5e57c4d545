package enginetest

import (
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/invariants"
)

var (
	diffCommands = flag.Int("diff.commands", 1_200_000, "commands TestDifferential runs, spread over its seeds")
	diffSeeds    = flag.Int("diff.seeds", 11, "seeds (stream shapes) TestDifferential runs")
	diffSeed     = flag.Int64("diff.seed", 1, "first seed of TestDifferential")
	diffChecked  = flag.Int("diff.checked", 120_000, "commands TestDifferential runs with the engine's structure check after each")
)

// diffShapes are the stream shapes TestDifferential cycles through.
var diffShapes = []struct {
	name string
	cfg  GenConfig
}{
	{"default", GenConfig{}},
	{"crowded", GenConfig{Spread: 2, Accounts: 2}},
	{"one-book", GenConfig{Instruments: 1, MaxInstruments: 1, Spread: 3}},
	{"wide", GenConfig{Spread: 25, Instruments: 8, MaxInstruments: 40}},
	{"invalid", GenConfig{InvalidPct: 30, Sources: 6, WideIDs: true}},
	{"stp", GenConfig{Accounts: 1, Spread: 4}},
	{"clean", GenConfig{InvalidPct: -1, Spread: 5, Accounts: 3}},
	{"many", GenConfig{Instruments: 20, MaxInstruments: 64, Sources: 12, Accounts: 6, WideIDs: true}},
	{"deep", GenConfig{Deep: true, Instruments: 2, MaxInstruments: 3, Spread: 8}},
	{"deep-crowded", GenConfig{Deep: true, Instruments: 1, MaxInstruments: 1, Spread: 1, Accounts: 3}},
	{"accounts", GenConfig{Accounts: 20_000, WideIDs: true, Spread: 3}},
}

// TestDifferential runs the engine and the model side by side on generated
// streams: at least a million commands in the normal run; more with
// -diff.commands (and -diff.seeds, -diff.seed).
func TestDifferential(t *testing.T) {
	total, checked := *diffCommands, *diffChecked
	if testing.Short() || raceEnabled || invariants.Enabled {
		total, checked = total/10, checked/10
	}
	seeds := max(*diffSeeds, 1)
	per := total / seeds
	for i := 0; i < seeds; i++ {
		seed := *diffSeed + int64(i)
		shape := diffShapes[i%len(diffShapes)]
		t.Run(fmt.Sprintf("seed=%d/%s", seed, shape.name), func(t *testing.T) {
			start := time.Now()
			res, err := RunDiff(seed, per, DiffOptions{Gen: shape.cfg, HashEvery: 997, RestoreEvery: 50_021, CloneEvery: 20_011})
			reportDiff(t, res, err, start)
		})
	}
	// A smaller share with the structure checker after every command, and
	// snapshot/restore and clone points along the way.
	for i, shape := range []GenConfig{{Spread: 3}, {Instruments: 1, MaxInstruments: 2, Spread: 2, Accounts: 2}} {
		seed := *diffSeed + 1000 + int64(i)
		t.Run(fmt.Sprintf("seed=%d/checked", seed), func(t *testing.T) {
			start := time.Now()
			res, err := RunDiff(seed, checked/2, DiffOptions{Gen: shape, HashEvery: 101, Check: true, RestoreEvery: 4999, CloneEvery: 1999})
			reportDiff(t, res, err, start)
		})
	}
}

// scaled shrinks a test's command count under -short, the race detector
// and the invariants tag (which checks the whole engine after every
// command).
func scaled(n int) int {
	if testing.Short() || raceEnabled || invariants.Enabled {
		return max(n/4, 1)
	}
	return n
}

func reportDiff(t *testing.T, res DiffResult, err error, start time.Time) {
	t.Helper()
	var d *Divergence
	if errors.As(err, &d) {
		t.Fatal(d.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%v)", res, time.Since(start).Round(time.Millisecond))
}

// TestRunDiffReportsDivergence checks the runner itself: a model that
// differs from the engine must be caught and reported with both sides.
func TestRunDiffReportsDivergence(t *testing.T) {
	d := &Divergence{Seed: 3, Index: 41, Command: engine.Command{Kind: engine.CmdCancel, Source: 1, Seq: 42, Instrument: 2, OrderID: 9},
		What:   "events differ",
		Engine: []engine.Event{{Kind: engine.EvAccepted, Instrument: 2, OrderID: 9}},
		Model:  []engine.Event{{Kind: engine.EvRejected, Instrument: 2, OrderID: 9, Reason: engine.RejUnknownOrder}}}
	msg := d.Error()
	for _, want := range []string{"seed 3", "command 41", "cancel src=1 seq=42 inst=2 id=9", "first differing event: 0",
		"engine events:", "model events:", "reason=unknown_order", "--seed 3 --commands 42"} {
		if !contains(msg, want) {
			t.Errorf("divergence message lacks %q:\n%s", want, msg)
		}
	}
	var progress int
	res, err := RunDiff(5, 3000, DiffOptions{ProgressEvery: 1000, Progress: func(r DiffResult) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	if progress != 3 || res.Commands != 3000 || res.Events == 0 || res.Trades == 0 || res.StateHash == 0 {
		t.Fatalf("progress %d, result %s", progress, res)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
