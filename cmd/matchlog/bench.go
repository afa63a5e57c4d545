package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/bench"
)

const benchUsage = "usage: matchlog bench engine [--json] [--orders N] [--runs K]\n" +
	"       matchlog bench snapshot [--json] [--orders N] [--workers K] [--takes T] [--mtu M]\n" +
	"       matchlog bench archive [--json] [--bytes B] [--runs K] [--work-dir D]\n" +
	"       matchlog bench cluster [--json] [--orders N[,N...]] [--sync L[,L...]] [--block B[,B...]] [--snapshot-mode pauseless[,stw]] [--rate R]\n" +
	"       matchlog bench aeron [--json] [--orders N] [--nodes 1|3] [--rate R] (real Java Aeron: needs AERON_CLASSPATH)\n" +
	"\nbench cluster runs every combination of its list flags; the other benches take one value.\n" +
	"Progress goes to stderr, the report to stdout (--json: one JSON object).\n"

// runBench runs `matchlog bench engine` ([bench.EngineReport]),
// `matchlog bench snapshot` ([bench.SnapshotReport]) or `matchlog bench
// archive` ([archivebench.BenchReport]), `matchlog bench cluster` and
// `matchlog bench aeron` ([aeronbench.Run]).
func runBench(args []string, stdout, stderr io.Writer) error {
	benches := map[string]func(args []string, stdout, stderr io.Writer) error{
		"engine": benchEngine, "snapshot": benchSnapshot, "archive": benchArchive, "cluster": benchCluster, "aeron": benchAeron,
	}
	name, ok, err := subcommand("bench", args, func(n string) bool { return benches[n] != nil }, benchUsage, stderr)
	if !ok {
		return err
	}
	return benches[name](args[1:], stdout, stderr)
}

func benchEngine(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench engine", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := intList{bench.BigOrders}
	fs.Var(&orders, "orders", "resting orders in the large book (heap, clone, restore figures)")
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
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	n, err := orders.one("orders")
	if err != nil || n <= 0 || *runs <= 0 {
		fmt.Fprintf(stderr, "bench engine: --orders (one value) and --runs must be positive %v\n", errText(err))
		return errUsage
	}
	r, err := bench.EngineReport(bench.ReportOptions{Orders: n, Runs: *runs, Progress: stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	return r.WriteTable(stdout)
}

func benchSnapshot(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench snapshot", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := intList{bench.MOrders}
	fs.Var(&orders, "orders", "resting orders in the book")
	workers := fs.Int("workers", 2, "parallel encoding workers (0: linear takes only)")
	takes := fs.Int("takes", 7, "timed takes of each kind, and restores; the report gives medians")
	mtu := fs.Int("mtu", bench.SnapMTU, "MTU of the log: the node's stop-the-world snapshot MTU by default (pauseless snapshots use the log's, 1408); a multiple of 32 from 64 to 65,504")
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
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	n, err := orders.one("orders")
	if err == nil {
		err = checkWorkers(*workers)
	}
	if err != nil || n <= 0 || *takes <= 0 {
		fmt.Fprintf(stderr, "bench snapshot: --orders (one value) and --takes must be positive, --workers not negative %v\n", errText(err))
		return errUsage
	}
	if *mtu < 64 || *mtu > 65504 || *mtu%32 != 0 {
		fmt.Fprintf(stderr, "bench snapshot: --mtu %d: want a multiple of 32 from 64 to 65504\n", *mtu)
		return errUsage
	}
	r, err := bench.SnapshotReport(bench.SnapOptions{Orders: n, Workers: *workers, Takes: *takes, MTU: *mtu,
		Seed: *seed, Progress: stderr})
	if err != nil {
		return err
	}
	if r.Loaded {
		fmt.Fprintf(stderr, "bench snapshot: WARNING: load average %.2f/%.2f above %d CPUs: figures are upper bounds\n",
			r.LoadAvgStart[0], r.LoadAvg[0], r.NumCPU)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	return r.WriteTable(stdout)
}
