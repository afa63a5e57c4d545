package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/matchlog/matchlog/engine/enginetest"
)

// runDiff is [enginetest.RunDiff]; tests replace it.
var runDiff = enginetest.RunDiff

// runDifftest runs `matchlog difftest`: the B-tree engine and the model on
// one seeded random stream, through [enginetest.RunDiff].
func runDifftest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("difftest", flag.ContinueOnError)
	seed := fs.Int64("seed", 1, "seed of the random command stream")
	n := fs.Int("commands", 1_000_000, "number of commands")
	check := fs.Bool("check", false, "also run the engine's structure checker after every command (slow)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog difftest [--seed N] [--commands M] [--check]\n\n"+
			"Feeds one seeded random command stream to the B-tree engine and to the model engine and\n"+
			"compares their events and state hashes. On the first divergence it prints both sides'\n"+
			"events and exits with status 1.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *n <= 0 {
		fmt.Fprint(stderr, "difftest: --commands must be positive\n")
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
	res, err := runDiff(*seed, *n, opts)
	if d := (*enginetest.Divergence)(nil); errors.As(err, &d) {
		fmt.Fprint(stderr, d.Error()) // both sides' events
		return fmt.Errorf("seed %d: engine and model diverge at command index %d (%s)", d.Seed, d.Index, d.What)
	}
	if err != nil {
		return fmt.Errorf("seed %d: %w", *seed, err)
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "difftest: engine and model agree: %v (%.1fs, %.0f commands/s)\n",
		res, elapsed.Seconds(), float64(res.Commands)/elapsed.Seconds())
	return nil
}
