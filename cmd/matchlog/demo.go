package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cmd/matchlog/internal/demo"
)

// runDemo is `matchlog demo`: the main job on an embedded default.
func runDemo(args []string, stdout, stderr io.Writer) error {
	var o demo.Options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&o.Dir, "dir", "", "node directory (default: a temporary directory, removed afterwards)")
	orders, syncLevel := intList{1_000_000}, intList{1}
	fs.Var(&orders, "orders", "resting orders to preload (one value)")
	fs.IntVar(&o.Instruments, "instruments", 8, "instruments the orders are spread over")
	rate := fs.Int("rate", 5000, "probe orders a second (an integer)")
	fs.Var(&syncLevel, "sync", syncFlagHelp+"; one value here")
	fs.DurationVar(&o.Baseline, "baseline", 3*time.Second, "probes before the first snapshot")
	fs.DurationVar(&o.Gap, "gap", 1500*time.Millisecond, "probes after each snapshot and after the restart")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the preloaded book")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	plotFile := fs.String("plot", "", "write probe latency over time to FILE.svg or FILE.html")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog demo [flags]\n\n"+
			"Starts a node in a temporary directory, preloads resting orders through its TCP\n"+
			"ingress, runs a fixed-rate probe stream, takes a pauseless and a stop-the-world\n"+
			"snapshot, restarts the node from its snapshot and log, and reports take times,\n"+
			"client pauses, probe latency, restart time and whether the state hash survived.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "demo")
	var err error
	if o.Orders, err = orders.one("orders"); err != nil {
		return bad("%v", err)
	}
	level, err := syncLevel.one("sync")
	if err != nil {
		return bad("%v", err)
	}
	o.SyncLevel = new(archive.SyncLevel(level))
	o.Rate = float64(*rate)
	switch {
	case o.Orders < 1:
		return bad("--orders must be at least 1")
	case o.Instruments < 1 || o.Instruments > 1<<16:
		return bad("--instruments must be 1 to 65536")
	case o.Rate <= 0 || o.Rate > 1_000_000:
		return bad("--rate must be above 0 and at most 1000000")
	case level < 0 || level > 2:
		return bad("--sync must be 0, 1 or 2")
	case o.Baseline <= 0 || o.Gap <= 0:
		return bad("--baseline and --gap must be positive")
	}
	if *plotFile != "" {
		switch strings.ToLower(filepath.Ext(*plotFile)) {
		case ".svg", ".html", ".htm":
		default:
			return bad("--plot %q: the file must end in .svg or .html", *plotFile)
		}
		// Found now, not after the run: the plot is written last.
		if err := checkWritable(*plotFile); err != nil {
			return fmt.Errorf("--plot %s: %w", *plotFile, err)
		}
	}
	if !*quiet {
		o.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := demo.Run(ctx, o)
	if err != nil {
		return err
	}
	if *plotFile != "" {
		if err := rep.Chart().WriteFile(*plotFile); err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stderr, "plot: %s\n", *plotFile)
		}
	}
	if *asJSON {
		err = writeJSON(stdout, rep)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !rep.StateHashEqual {
		return fmt.Errorf("demo: state hash after the restart %s differs from %s before it", rep.StateHashAfter, rep.StateHashBefore)
	}
	return nil
}

// checkWritable reports whether path can be written as a new or replaced
// file, changing nothing: an existing file must be a regular file open for
// writing, and its directory must exist and take a new file (a temporary
// one, removed at once).
func checkWritable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return errors.New("not a regular file")
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("its directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".matchlog-plot-*")
	if err != nil {
		return fmt.Errorf("its directory is not writable: %w", err)
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}
