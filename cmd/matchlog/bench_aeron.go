package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/bench/aeronbench"
)

const benchAeronUsage = "usage: matchlog bench aeron [--json] [--orders N] [--nodes 1|3] [--rate R] [--native=false] [--work-dir D] [--timeout T]\n"

// aeronNodeCommand is the command that runs `matchlog aeron-node args...`
// for bench aeron: this executable.
var aeronNodeCommand = func(args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, append([]string{"aeron-node"}, args...)...)
}

// benchAeron runs `matchlog bench aeron` ([aeronbench.Run]): the engine on
// a real Aeron Cluster, beside the native node, on one book size.
func benchAeron(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench aeron", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := intList{100_000}
	fs.Var(&orders, "orders", "resting orders in the book (one value)")
	nodes := fs.Int("nodes", 1, "cluster members: 1 or 3")
	rate := fs.Int("rate", 1000, "probe commands a second, on a fixed schedule, around the snapshot and the kills")
	native := fs.Bool("native", true, "also measure the native node's pauseless snapshot on the same book size (bench cluster's)")
	seed := fs.Uint64("seed", 1, "seed of the book")
	dir := fs.String("work-dir", "", "where the bench makes (and removes) its member directories (default: the temp dir)")
	timeout := fs.Duration("timeout", 15*time.Minute, "stop everything and fail after this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchAeronUsage+"\n"+
			"Measures the matching engine on a real Aeron Cluster: --nodes ClusteredMediaDriver JVMs\n"+
			"(media driver, archive, consensus module; Java Aeron 1.48.x with Agrona 2.x from\n"+
			"AERON_CLASSPATH, which it requires) on 127.0.0.1, 'matchlog aeron-node' as each member's\n"+
			"service, aeron-go's cluster client. The book of --orders resting orders is built through\n"+
			"the client's commands (non-crossing new orders in random arrival order, bench cluster's\n"+
			"book; never a snapshot restore). Then probes at --rate a second (round trips from each\n"+
			"probe's scheduled time) measure: a snapshot (ClusterTool snapshot on the leader): each\n"+
			"service's take, and the probes' worst and p99 round trip from the snapshot's start to\n"+
			"200 ms after the last member's ack; a restart of every member after a stop without a\n"+
			"snapshot (ClusterTool abort): restore, replay to the stop's position, first answer;\n"+
			"with --nodes 3 a follower's kill -9 (JVM and service) and restart 11 s later (Aeron's\n"+
			"mark-file rule) until it is at the leader's position, then the leader's kill -9 until a\n"+
			"new leader answers. Then, with --native, the native node's pauseless snapshot on the\n"+
			"same book size at the same probe rate (bench cluster's figures), printed beside them.\n"+
			"Every process it starts is stopped at the end, on an error, at --timeout or on SIGINT.\n"+
			"Progress goes to stderr, the report to stdout; it warns when the load average exceeds\n"+
			"the CPUs. A 100,000-order run took 15 s with one node, 40-60 s with three, on 2 cores.\n\n"+
			"--json prints one object: orders, nodes, rate; startup_s, build_s, build_per_s; take_ms\n"+
			"(the leader's service), take_max_ms (the slowest member), gap_before_ms, snapshot_ms\n"+
			"(the earliest member's snapshot start to the last member's ack), leader_snapshot_ms (the\n"+
			"leader's alone), tool_ms (ClusterTool's run); no_snapshot_p99_ms,\n"+
			"no_snapshot_max_ms (probes of the second before), pause_max_ms, pause_p99_ms,\n"+
			"pause_probes; stop_s, restart_restored_s, restart_replayed_s, restart_first_answer_s,\n"+
			"restore_ms; with --nodes 3 follower_rejoin_s, follower_restore_ms, failover_leader_s,\n"+
			"failover_session_s, failover_first_answer_s, failover_worst_ms, resent; duplicates,\n"+
			"commands, state_hash; native (bench cluster's JSON result, with --native); load_avg,\n"+
			"load_avg_end (1, 5, 15 min), num_cpu, loaded (a load average above num_cpu), total_s.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	n, err := orders.one("orders")
	if err != nil || n <= 0 {
		fmt.Fprintf(stderr, "bench aeron: --orders must be one positive value %v\n", errText(err))
		return errUsage
	}
	switch {
	case *nodes != 1 && *nodes != 3:
		fmt.Fprintf(stderr, "bench aeron: --nodes %d: want 1 or 3\n", *nodes)
		return errUsage
	case *rate <= 0 || *rate > 100_000:
		fmt.Fprintf(stderr, "bench aeron: --rate %d: want 1 to 100000\n", *rate)
		return errUsage
	case *timeout <= 0:
		fmt.Fprint(stderr, "bench aeron: --timeout must be positive\n")
		return errUsage
	}
	cp := os.Getenv(aeronbench.ClasspathEnv)
	if cp == "" {
		return aeronbench.ErrNoClasspath
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	r, err := aeronbench.Run(ctx, aeronbench.Options{Orders: n, Nodes: *nodes, Rate: *rate, Classpath: cp,
		Service: aeronNodeCommand, Dir: *dir, Seed: *seed, Native: *native, Progress: stderr})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("aeron: interrupted, every process it started stopped: %w", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("aeron: stopped at --timeout %v: %w", *timeout, err)
		}
		return fmt.Errorf("aeron: %w", err)
	}
	if r.Loaded {
		fmt.Fprintf(stderr, "bench aeron: WARNING: load average %.2f/%.2f above %d CPUs: figures are upper bounds\n",
			r.LoadAvg[0], r.LoadAvgEnd[0], r.NumCPU)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	return r.WriteTable(stdout)
}
