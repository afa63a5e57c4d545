package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/matchlog/matchlog/bench"
)

// runBench runs `matchlog bench`: for now one benchmark, `bench engine`,
// which measures the engine through [bench.EngineReport].
func runBench(args []string) error {
	const usageLine = "usage: matchlog bench engine [--json] [--orders N] [--runs K]\n"
	if len(args) == 0 || args[0] != "engine" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(os.Stdout, usageLine)
			return flag.ErrHelp
		}
		fmt.Fprint(os.Stderr, usageLine)
		return errUsage
	}
	fs := flag.NewFlagSet("bench engine", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := fs.Int("orders", bench.BigOrders, "resting orders in the large book (heap, clone, restore figures)")
	runs := fs.Int("runs", 5, "runs of each measurement; the report gives medians")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageLine+"\n"+
			"Measures the matching engine: exchange-core's command mix (throughput, latency\n"+
			"percentiles, allocations), top-10 depth on crowded and uncrowded books, heap per\n"+
			"resting order, clone and restore of a large book built through commands. Progress\n"+
			"goes to stderr, the report to stdout. The default 5M-order book takes a minute or\n"+
			"two and a few GB of memory; --orders 500000 makes a quick run.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:], os.Stderr); err != nil {
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
		enc := json.NewEncoder(os.Stdout)
		return enc.Encode(r)
	}
	return r.WriteTable(os.Stdout)
}
