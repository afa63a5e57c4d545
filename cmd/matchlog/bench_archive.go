package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/bench/archivebench"
)

const benchArchiveUsage = "usage: matchlog bench archive [--json] [--bytes B] [--runs K] [--work-dir D]\n"

// benchArchive runs `matchlog bench archive` ([archivebench.BenchReport]): the
// recorder's throughput against raw synced writes, per block size and sync
// level.
func benchArchive(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench archive", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	bytes := fs.Int64("bytes", 256<<20, "bytes recorded (and written raw) per run")
	runs := fs.Int("runs", 4, "runs of each measurement (even balances the order); the report gives medians")
	dir := fs.String("work-dir", "", "directory on the disk under test, where the bench writes and removes its files (default: the temp dir)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchArchiveUsage+"\n"+
			"Records --bytes of 8 KiB frames from an in-memory Aeron log into a new archive on the\n"+
			"OS file system, at 1 MiB and 16 MiB blocks (FileIoMaxLength) and file sync levels 0, 1\n"+
			"and 2, and writes the same bytes raw (positional writes of the same blocks with the same\n"+
			"syncs into a preallocated file), alternating the two. Reports median MB/s of each, their\n"+
			"ratio, and the load average. Progress goes to stderr, the report to stdout.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *bytes <= 0 || *runs <= 0 {
		fmt.Fprint(stderr, "bench archive: --bytes and --runs must be positive\n")
		return errUsage
	}
	r, err := archivebench.BenchReport(archivebench.BenchOptions{Bytes: *bytes, Runs: *runs, Dir: *dir, Progress: stderr})
	if err != nil {
		return err
	}
	if r.LoadAvg[0] > float64(r.NumCPU) {
		fmt.Fprintf(stderr, "bench archive: WARNING: load average %.2f above %d CPUs: figures are unreliable\n", r.LoadAvg[0], r.NumCPU)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	return r.WriteTable(stdout)
}
