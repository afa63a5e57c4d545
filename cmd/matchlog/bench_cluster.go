package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
)

const benchClusterUsage = "usage: matchlog bench cluster [--orders N[,N...]] [--sync L[,L...]] [--block B[,B...]] [--mode pauseless|stw|both] [--rate R] [--workers K] [--runs K] [--dir D] [--json]\n"

// clusterBenchReport is what `matchlog bench cluster --json` prints.
type clusterBenchReport struct {
	Results    []*enginesvc.PauseResult `json:"results"`
	NumCPU     int                      `json:"num_cpu"`
	GOMAXPROCS int                      `json:"gomaxprocs"`
	Warnings   []string                 `json:"warnings,omitempty"`
}

// benchCluster runs `matchlog bench cluster` ([enginesvc.PauseReport]): the
// client-visible pause of a snapshot of the embedded node, per book size,
// snapshot mode, sync level and block length.
func benchCluster(args []string) error {
	fs := flag.NewFlagSet("bench cluster", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orders := fs.String("orders", "1000000", "resting orders in the book (comma-separated list for several)")
	syncs := fs.String("sync", "0,2", "archive file sync levels (comma-separated)")
	blocks := fs.String("block", "1MiB,16MiB", "archive block lengths (bytes, or with KiB/MiB; comma-separated)")
	mode := fs.String("mode", "both", "snapshot mode: pauseless, stw or both")
	rate := fs.Int("rate", 20_000, "commands a second submitted around the snapshot")
	workers := fs.Int("workers", 0, "parallel snapshot encoders of the pauseless mode (0: linear)")
	runs := fs.Int("runs", 1, "runs of each configuration (one row each)")
	nice := fs.Int("nice", 0, "nice value of the pauseless snapshot writer's thread (Linux; 0: the node's default, -1: not niced)")
	yieldEvery := fs.Int("yield-every", 0, "pauseless encoder yields every N claims (0: the node's default, -1: never)")
	snapDir := fs.String("snapshot-dir", "", "diagnosis: put snapshot segments under this directory (e.g. a tmpfs, /dev/shm), the log stays in --dir")
	dir := fs.String("dir", "", "parent directory of the node directories (default: the temp dir)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchClusterUsage+"\n"+
			"Measures the client-visible pause of a snapshot of the embedded cluster node (matching\n"+
			"engine service). For each configuration a fresh node is opened on the OS file system, its\n"+
			"book is grown to --orders resting orders through commands sent through the node's ingress\n"+
			"(batches of 4,096, group commit at the configured sync level; never a snapshot restore),\n"+
			"then commands are submitted at --rate a second on a fixed schedule: first 1 s without a\n"+
			"snapshot (its p99 is the baseline), then from 200 ms before a snapshot request until 200 ms\n"+
			"after the snapshot completed. A command's delay runs from its scheduled send time to the\n"+
			"release of its events (coordinated-omission corrected); the pause is the worst delay.\n"+
			"Targets: pauseless <= no-snapshot p99 + 1 ms; stop-the-world <= take + archive write + 50 ms.\n"+
			"GOGC and GOMEMLIMIT are read from the environment as usual. Progress goes to stderr.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(os.Stderr, "bench cluster: "+format+"\n", a...)
		return errUsage
	}
	orderList, err := parseSizes(*orders)
	if err != nil {
		return bad("--orders: %v", err)
	}
	syncList, err := parseSizes(*syncs)
	if err != nil {
		return bad("--sync: %v", err)
	}
	blockList, err := parseSizes(*blocks)
	if err != nil {
		return bad("--block: %v", err)
	}
	var modes []cluster.SnapshotMode
	switch *mode {
	case "pauseless":
		modes = []cluster.SnapshotMode{cluster.Pauseless}
	case "stw", "stop-the-world":
		modes = []cluster.SnapshotMode{cluster.StopTheWorld}
	case "both":
		modes = []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld}
	default:
		return bad("--mode %q: want pauseless, stw or both", *mode)
	}
	for _, o := range orderList {
		if o <= 0 {
			return bad("--orders must be positive")
		}
	}
	for _, s := range syncList {
		if s < 0 || s > 2 {
			return bad("--sync %d: want 0, 1 or 2", s)
		}
	}
	for _, b := range blockList {
		if b < 64<<10 || b&(b-1) != 0 {
			return bad("--block %d: want a power of two >= 64 KiB", b)
		}
	}
	if *rate <= 0 || *runs <= 0 || *workers < 0 {
		return bad("--rate and --runs must be positive, --workers not negative")
	}
	rep := clusterBenchReport{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	warn := func(format string, a ...any) {
		w := fmt.Sprintf(format, a...)
		rep.Warnings = append(rep.Warnings, w)
		fmt.Fprintf(os.Stderr, "bench cluster: WARNING: %s\n", w)
	}
	for _, o := range orderList {
		for _, s := range syncList {
			for _, b := range blockList {
				for _, m := range modes {
					for range *runs {
						fmt.Fprintf(os.Stderr, "bench cluster: orders %d, %s, sync %d, block %d\n", o, enginesvc.ModeName(m), s, b)
						r, err := enginesvc.PauseReport(enginesvc.PauseOptions{Orders: o, Mode: m, SyncLevel: s, BlockLength: b,
							Rate: *rate, Workers: *workers, Dir: *dir, Progress: os.Stderr, SnapshotDir: *snapDir, YieldEvery: *yieldEvery, Nice: *nice})
						if err != nil {
							return err
						}
						if lim := float64(rep.NumCPU); r.LoadAvg > lim || r.LoadAvgEnd > lim {
							warn("load average %.2f/%.2f above %d CPUs during orders %d %s sync %d block %d: figures are upper bounds",
								r.LoadAvg, r.LoadAvgEnd, rep.NumCPU, o, r.Mode, s, b)
						}
						rep.Results = append(rep.Results, r)
						enginesvc.WritePauseTable(os.Stderr, []*enginesvc.PauseResult{r})
					}
				}
			}
		}
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(rep)
	}
	return enginesvc.WritePauseTable(os.Stdout, rep.Results)
}

// parseSizes parses a comma-separated list of integers with an optional
// KiB, MiB or GiB suffix (or K/M/G for thousands, millions, billions).
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		for _, u := range []struct {
			suffix string
			mult   int
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1_000}, {"M", 1_000_000}, {"G", 1_000_000_000}} {
			if strings.HasSuffix(f, u.suffix) {
				f, mult = strings.TrimSuffix(f, u.suffix), u.mult
				break
			}
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, v*mult)
	}
	return out, nil
}
