package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/matchlog/matchlog/bench"
)

const benchUsage = "usage: matchlog bench engine [--json] [--orders N] [--runs K]\n" +
	"       matchlog bench snapshot [--json] [--orders N] [--workers K] [--takes T] [--mtu M]\n" +
	"       matchlog bench archive [--json] [--bytes B] [--runs K] [--dir D]\n" +
	"       matchlog bench cluster [--json] [--orders N] [--sync L] [--block B] [--mode pauseless|stw|both] [--rate R]\n"

// runBench runs `matchlog bench engine` ([bench.EngineReport]),
// `matchlog bench snapshot` ([bench.SnapshotReport]) or `matchlog bench
// archive` ([archive.BenchReport]).
func runBench(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "engine":
			return benchEngine(args[1:])
		case "snapshot":
			return benchSnapshot(args[1:])
		case "archive":
			return benchArchive(args[1:])
		case "cluster":
			return benchCluster(args[1:])
		case "-h", "-help", "--help":
			fmt.Fprint(os.Stdout, benchUsage)
			return flag.ErrHelp
		}
	}
	fmt.Fprint(os.Stderr, benchUsage)
	return errUsage
}

func benchEngine(args []string) error {
	fs := flag.NewFlagSet("bench engine", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := fs.Int("orders", bench.BigOrders, "resting orders in the large book (heap, clone, restore figures)")
	runs := fs.Int("runs", 5, "runs of each measurement; the report gives medians")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog bench engine [--json] [--orders N] [--runs K]\n\n"+
			"Measures the matching engine: exchange-core's command mix (throughput, latency\n"+
			"percentiles, allocations), top-10 depth on crowded and uncrowded books, heap per\n"+
			"resting order, clone and restore of a large book built through commands. Progress\n"+
			"goes to stderr, the report to stdout. The default 5M-order book takes a minute or\n"+
			"two and a few GB of memory; --orders 500000 makes a quick run.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return err
	}
	if *orders <= 0 || *runs <= 0 {
		fmt.Fprint(os.Stderr, "bench engine: --orders and --runs must be positive\n")
		return errUsage
	}
	r, err := bench.EngineReport(bench.ReportOptions{Orders: *orders, Runs: *runs, Progress: os.Stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	return r.WriteTable(os.Stdout)
}

func benchSnapshot(args []string) error {
	fs := flag.NewFlagSet("bench snapshot", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := fs.Int("orders", bench.MOrders, "resting orders in the book")
	workers := fs.Int("workers", 2, "parallel encoding workers (0: linear takes only)")
	takes := fs.Int("takes", 7, "timed takes of each kind, and restores; the report gives medians")
	mtu := fs.Int("mtu", 1408, "MTU of the log (a multiple of 32 from 64 to 65,504)")
	seed := fs.Uint64("seed", 1, "seed of the book")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog bench snapshot [--json] [--orders N] [--workers K] [--takes T] [--mtu M]\n\n"+
			"Builds a book the way a live one grows (orders in random arrival order through the\n"+
			"engine's commands: 8 instruments, about 2,000 ticks a side), then takes snapshots of it\n"+
			"into an in-memory Aeron log read by a drain-only reader: linear and, with --workers,\n"+
			"parallel, alternating in one run. Each round also reads one parallel take frame by frame\n"+
			"and compares it with the linear stream. Restore is timed in a separate pass. Progress\n"+
			"goes to stderr, the report to stdout; it warns when the load average exceeds the CPUs.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return err
	}
	if *orders <= 0 || *takes <= 0 || *workers < 0 {
		fmt.Fprint(os.Stderr, "bench snapshot: --orders and --takes must be positive, --workers not negative\n")
		return errUsage
	}
	if *mtu < 64 || *mtu > 65504 || *mtu%32 != 0 {
		fmt.Fprintf(os.Stderr, "bench snapshot: --mtu %d: want a multiple of 32 from 64 to 65504\n", *mtu)
		return errUsage
	}
	r, err := bench.SnapshotReport(bench.SnapOptions{Orders: *orders, Workers: *workers, Takes: *takes, MTU: *mtu,
		Seed: *seed, Progress: os.Stderr})
	if err != nil {
		return err
	}
	if r.Loaded {
		fmt.Fprintf(os.Stderr, "bench snapshot: WARNING: load average %.2f/%.2f above %d CPUs: figures are upper bounds\n",
			r.LoadAvgStart[0], r.LoadAvg[0], r.NumCPU)
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	return r.WriteTable(os.Stdout)
}
