package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/matchlog/matchlog/bench/clusterbench"
	"github.com/matchlog/matchlog/cluster"
)

const benchClusterUsage = "usage: matchlog bench cluster [--orders N[,N...]] [--sync L[,L...]] [--block B[,B...]] [--snapshot-mode pauseless[,stw]] [--rate R] [--workers K] [--runs K] [--work-dir D] [--json]\n"

// clusterBenchReport is what `matchlog bench cluster --json` prints.
type clusterBenchReport struct {
	Results    []*clusterbench.PauseResult `json:"results"`
	NumCPU     int                         `json:"num_cpu"`
	GOMAXPROCS int                         `json:"gomaxprocs"`
	Warnings   []string                    `json:"warnings,omitempty"`
}

// benchCluster runs `matchlog bench cluster` ([clusterbench.PauseReport]): the
// client-visible pause of a snapshot of the embedded node, per book size,
// snapshot mode, sync level and block length (--block: the archive's
// FileIoMaxLength).
func benchCluster(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench cluster", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	orderList, syncList, blockList := intList{1_000_000}, intList{0, 2}, intList{1 << 20, 16 << 20}
	modeNames := modeList{"pauseless", "stw"}
	fs.Var(&orderList, "orders", "resting orders in the book (a comma-separated list: one configuration each)")
	fs.Var(&syncList, "sync", syncFlagHelp)
	fs.Var(&blockList, "block", "archive block lengths (bytes, or with KiB/MiB; comma-separated)")
	fs.Var(&modeNames, "snapshot-mode", snapshotModeFlagHelp)
	rate := fs.Int("rate", 20_000, "commands a second submitted around the snapshot (an integer)")
	workers := fs.Int("workers", 0, "parallel snapshot encoders of the pauseless mode (0: linear)")
	runs := fs.Int("runs", 1, "runs of each configuration (one row each)")
	nice := fs.Int("nice", 0, "nice value of the pauseless snapshot writer's thread (Linux; 0: the node's default, -1: not niced)")
	yieldEvery := fs.Int("yield-every", 0, "pauseless encoder yields every N claims (0: the node's default, -1: never)")
	snapDir := fs.String("snapshot-dir", "", "diagnosis: put snapshot segments under this directory (e.g. a tmpfs, /dev/shm), the log stays in --dir")
	dir := fs.String("work-dir", "", "where the bench makes (and removes) its node directories (default: the temp dir)")
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
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "bench cluster: "+format+"\n", a...)
		return errUsage
	}
	var modes []cluster.SnapshotMode
	for _, m := range modeNames {
		if m == "stw" {
			modes = append(modes, cluster.StopTheWorld)
		} else {
			modes = append(modes, cluster.Pauseless)
		}
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
	if *rate <= 0 || *runs <= 0 {
		return bad("--rate and --runs must be positive")
	}
	if err := checkWorkers(*workers); err != nil {
		return bad("%v", err)
	}
	rep := clusterBenchReport{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	warn := func(format string, a ...any) {
		w := fmt.Sprintf(format, a...)
		rep.Warnings = append(rep.Warnings, w)
		fmt.Fprintf(stderr, "bench cluster: WARNING: %s\n", w)
	}
	for _, o := range orderList {
		for _, s := range syncList {
			for _, b := range blockList {
				for _, m := range modes {
					for range *runs {
						fmt.Fprintf(stderr, "bench cluster: orders %d, %s, sync %d, block %d\n", o, clusterbench.ModeName(m), s, b)
						r, err := clusterbench.PauseReport(clusterbench.PauseOptions{Orders: o, Mode: m, SyncLevel: s, FileIoMaxLength: b,
							Rate: *rate, Workers: *workers, Dir: *dir, Progress: stderr, SnapshotDir: *snapDir, YieldEvery: *yieldEvery, Nice: *nice})
						if err != nil {
							return err
						}
						if lim := float64(rep.NumCPU); r.LoadAvg > lim || r.LoadAvgEnd > lim {
							warn("load average %.2f/%.2f above %d CPUs during orders %d %s sync %d block %d: figures are upper bounds",
								r.LoadAvg, r.LoadAvgEnd, rep.NumCPU, o, r.Mode, s, b)
						}
						rep.Results = append(rep.Results, r)
						clusterbench.WritePauseTable(stderr, []*clusterbench.PauseResult{r})
					}
				}
			}
		}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return clusterbench.WritePauseTable(stdout, rep.Results)
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
