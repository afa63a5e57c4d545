package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/snapshot/snaptest"
)

// runDiff is [enginetest.RunDiff] and runRestoreDiff is
// [snaptest.RunRestoreDiff]; tests replace them.
var (
	runDiff        = enginetest.RunDiff
	runRestoreDiff = snaptest.RunRestoreDiff
)

// runDifftest runs `matchlog difftest`: the B-tree engine and the model on
// one seeded random stream, with snapshots of the engine restored and
// continued along the way (through [snaptest.RunRestoreDiff]), or without
// them (--snapshots=false, through [enginetest.RunDiff]).
func runDifftest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("difftest", flag.ContinueOnError)
	seedFlag := fs.Uint64("seed", 1, "seed of the random command stream (0 to 9223372036854775807)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	n := fs.Int("commands", 1_000_000, "number of commands")
	check := fs.Bool("check", false, "also run the engine's structure checker after every command (slow)")
	snapshots := fs.Bool("snapshots", true, "take snapshots at random points, restore them into fresh engines and compare those too")
	workers := fs.Int("workers", 0, "encode every other snapshot in parallel with this many workers (0: all linear)")
	every := fs.Int("every", 30_000, "mean number of commands between snapshots")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog difftest [--seed N] [--commands M] [--workers K] [--every E] [--snapshots=false] [--check]\n\n"+
			"Feeds one seeded random command stream to the B-tree engine and to the model engine and\n"+
			"compares their events after every command and their state hashes along the way.\n\n"+
			"With snapshots (the default), it also takes snapshots of the engine at seeded random\n"+
			"points (about one every E commands, plus one near the start and one near the end) into an\n"+
			"Aeron-format log buffer, with a random MTU (1408 or 65504) and term geometry, restores\n"+
			"each into a fresh engine while it is being written, and feeds the restored engine the\n"+
			"following commands too, comparing its events with the engine's after every command and\n"+
			"its state hash after every command for the first 1000 after a restore, then every 1024.\n"+
			"With --workers K, every other snapshot is encoded in parallel by K workers and checked\n"+
			"byte for byte against a linear take of the same state.\n\n"+
			"On the first divergence it prints both sides' events and the command line that\n"+
			"reproduces it, and exits with status 1.\n\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nWith --json, one JSON object (indented) with these fields:\n%s", jsonDoc(difftestJSON{}))
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *seedFlag > math.MaxInt64 {
		fmt.Fprintf(stderr, "difftest: --seed %d: at most %d\n", *seedFlag, int64(math.MaxInt64))
		return errUsage
	}
	seed := new(int64(*seedFlag))
	switch {
	case *n <= 0:
		fmt.Fprint(stderr, "difftest: --commands must be positive\n")
		return errUsage
	case *workers < 0:
		fmt.Fprint(stderr, "difftest: --workers must not be negative\n")
		return errUsage
	case *every <= 0:
		fmt.Fprint(stderr, "difftest: --every must be positive\n")
		return errUsage
	case !*snapshots && *workers > 0:
		fmt.Fprint(stderr, "difftest: --workers needs snapshots (--snapshots=false was given)\n")
		return errUsage
	}

	start := time.Now()
	opts := enginetest.DiffOptions{
		Check: *check,
		Progress: func(r enginetest.DiffResult) {
			fmt.Fprintf(stderr, "difftest: seed %d: %d/%d commands (%.0f%%), %d events, %d trades, %.0f commands/s\n",
				*seed, r.Commands, *n, 100*float64(r.Commands)/float64(*n), r.Events, r.Trades,
				float64(r.Commands)/time.Since(start).Seconds())
		},
	}
	if !*snapshots {
		res, err := runDiff(*seed, *n, opts)
		if err != nil {
			return diffError(*seed, err, stderr)
		}
		elapsed := time.Since(start)
		if *asJSON {
			return writeJSON(stdout, toDifftestJSON(res, nil, elapsed))
		}
		fmt.Fprintf(stdout, "difftest: engine and model agree: %v (%.1fs, %.0f commands/s)\n",
			res, elapsed.Seconds(), float64(res.Commands)/elapsed.Seconds())
		return nil
	}

	res, err := runRestoreDiff(*seed, *n, snaptest.Options{Diff: opts, Workers: *workers, Every: *every})
	if err != nil {
		return diffError(*seed, err, stderr)
	}
	elapsed := time.Since(start)
	if *asJSON {
		return writeJSON(stdout, toDifftestJSON(res.DiffResult, &res, elapsed))
	}
	fmt.Fprintf(stdout, "difftest: engine and model agree: %v (%.1fs, %.0f commands/s)\n",
		res.DiffResult, elapsed.Seconds(), float64(res.Commands)/elapsed.Seconds())
	fmt.Fprintf(stdout, "difftest: restored snapshots agree: %v\n", res)
	return nil
}

// difftestJSON is `difftest --json`.
type difftestJSON struct {
	Seed      int64                  `json:"seed"`
	Commands  int                    `json:"commands"`
	Events    int                    `json:"events" doc:"events emitted by each side"`
	Trades    int                    `json:"trades"`
	Rejects   int                    `json:"rejects"`
	Ignored   int                    `json:"ignored" doc:"commands ignored as resent"`
	Resting   int                    `json:"resting_orders" doc:"at the end"`
	Armed     int                    `json:"armed_triggers" doc:"at the end"`
	StateHash string                 `json:"state_hash" doc:"the final state hash, 16 hex digits (equal on both sides)"`
	ElapsedMs int64                  `json:"elapsed_ms" doc:"wall-clock time of the run"`
	Snapshots *difftestSnapshotsJSON `json:"snapshots,omitempty" doc:"absent with --snapshots=false"`
}

type difftestSnapshotsJSON struct {
	Taken       int    `json:"taken"`
	Linear      int    `json:"linear"`
	Parallel    int    `json:"parallel"`
	Workers     int    `json:"workers"`
	Restores    int    `json:"restores" doc:"snapshots restored and checked"`
	Rotated     int    `json:"rotated" doc:"snapshots that crossed into another term"`
	MaxOrders   uint64 `json:"max_orders" doc:"resting orders in the largest snapshot"`
	Bytes       int64  `json:"bytes" doc:"written to the logs by the restored snapshots"`
	ByteChecks  int    `json:"byte_checks" doc:"parallel takes compared byte for byte with a linear take"`
	EventChecks int    `json:"event_checks"`
	HashChecks  int    `json:"hash_checks"`
}

func toDifftestJSON(d enginetest.DiffResult, r *snaptest.Result, elapsed time.Duration) difftestJSON {
	out := difftestJSON{Seed: d.Seed, Commands: d.Commands, Events: d.Events, Trades: d.Trades, Rejects: d.Rejects,
		Ignored: d.Ignored, Resting: d.Resting, Armed: d.Armed, StateHash: fmt.Sprintf("%016x", d.StateHash),
		ElapsedMs: elapsed.Milliseconds()}
	if r != nil {
		out.Snapshots = &difftestSnapshotsJSON{r.Snapshots, r.Linear, r.Parallel, r.Workers, r.Restores, r.Rotated,
			r.MaxOrders, r.Bytes, r.ByteChecks, r.EventChecks, r.HashChecks}
	}
	return out
}

// diffError prints a divergence in full on stderr and returns the one-line
// error main prints.
func diffError(seed int64, err error, stderr io.Writer) error {
	if d := (*snaptest.Divergence)(nil); errors.As(err, &d) {
		fmt.Fprint(stderr, d.Error()) // both sides' events and the reproduce line
		side, what := "the engine and a restored snapshot diverge", d.What
		switch {
		case d.Model != nil:
			side, what = "engine and model diverge", d.Model.What
		case d.Err != nil:
			side = "a snapshot failed"
		}
		return fmt.Errorf("seed %d: %s at command index %d (%s); reproduce with: %s", d.Seed, side, d.Index, what, d.Reproduce())
	}
	if d := (*enginetest.Divergence)(nil); errors.As(err, &d) {
		fmt.Fprint(stderr, d.Error()) // both sides' events
		return fmt.Errorf("seed %d: engine and model diverge at command index %d (%s)", d.Seed, d.Index, d.What)
	}
	return fmt.Errorf("seed %d: %w", seed, err)
}
