package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runSoak is `matchlog soak`: the kill -9 rounds of TestKill9 (kill9Run)
// on a node directory, for a duration.
func runSoak(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	dir := fs.String("dir", "", "node directory the soak creates (required; must not exist or be empty; kept afterwards)")
	duration := fs.Duration("duration", 10*time.Minute, "run rounds until this long has passed")
	every := fs.Duration("kill-every", 2*time.Second, "mean time the load runs before each kill (each wait is drawn between half and one and a half of it)")
	tallyEvery := fs.Duration("tally-every", 10*time.Second, "print the running tally after the first round that ends this long after the last line")
	seed := fs.Uint64("seed", 0, "seed of the kill moments, the restart flags and the load (0: from the clock, printed)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog soak --dir D [--duration 10m] [--kill-every 2s] [flags]\n\n"+
			"Runs `matchlog node` on D as a child process under a client's load and kills it\n"+
			"with SIGKILL again and again (while the book is preloaded, while snapshots are\n"+
			"written, while the log is written). After each kill it opens D and checks it: the\n"+
			"recovered state hash equals that of the engine and of the naive model fed the\n"+
			"log's commands (only each round's new part of the log is read), every command\n"+
			"answered before the kill is in the log, recording.log and the catalog agree, the\n"+
			"archive verifies. Then it restarts the node; the client reconnects and resends\n"+
			"what was unanswered (answered as Duplicate where it had been applied). The node\n"+
			"keeps 2 snapshot generations (--keep 2), so the rounds cost the same however\n"+
			"long it runs.\n\n"+
			"It prints a running tally (--tally-every): rounds, rounds a minute (overall and\n"+
			"since the last line), kills by kind, commands answered, duplicates, the log's\n"+
			"length; and a summary at the end. It stops by itself after --duration (or at\n"+
			"SIGINT/SIGTERM, after the round under way), waits until every command sent is\n"+
			"answered, and kills the last node: D is left as a killed node directory (a\n"+
			"start recovers it). D keeps all of its log (about 2 MB a round at this load):\n"+
			"give it room for the run.\n"+
			"Exit status 0: every round passed; 1: a check failed (the message names the\n"+
			"round and what differed; D is kept as the kill left it).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "soak")
	switch {
	case *dir == "":
		return bad("--dir is required")
	case *duration <= 0:
		return bad("--duration must be positive")
	case *every < 10*time.Millisecond:
		return bad("--kill-every must be at least 10ms")
	case *tallyEvery < 0:
		return bad("--tally-every must not be negative")
	}
	if names, err := os.ReadDir(*dir); err == nil && len(names) > 0 {
		return fmt.Errorf("%s is not empty: the soak creates its node directory; give a new or empty directory", *dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("--dir: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := kill9Standard()
	cfg.dir, cfg.seed, cfg.duration, cfg.stop = *dir, *seed, *duration, ctx.Done()
	// A fifth of the rounds preload (a round takes about a second more
	// than its wait), but for at most about 6 s: the preload sends as
	// fast as the node takes commands, and the log it writes is read
	// back by every check of the segment it is in.
	cfg.preloadRounds = min(int(*duration/(*every+time.Second)/5), int(6*time.Second / *every))
	cfg.sleep = func(rng *rand.Rand) time.Duration {
		return *every/2 + time.Duration(rng.Int64N(int64(*every)))
	}
	var last kill9Tally
	var lastAt time.Duration
	cfg.tally = func(k kill9Tally) {
		if k.Elapsed-lastAt < *tallyEvery {
			return
		}
		fmt.Fprintln(stdout, soakLine(k, last))
		last, lastAt = k, k.Elapsed
		last.Kinds = nil
	}
	st := &soakT{w: stdout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		kill9Run(st, cfg)
	}()
	<-done
	return st.failure()
}

// soakLine is a tally line: k, and the rounds a minute since prev.
func soakLine(k, prev kill9Tally) string {
	rate := func(rounds int, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(rounds) / d.Minutes()
	}
	kinds := make([]string, 0, len(k.Kinds))
	for kind, n := range k.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", kind, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("soak: %d rounds in %v (%.1f a minute; %.1f since the last line); kills: %s; %d commands answered, %d as Duplicate; log %d bytes",
		k.Rounds, k.Elapsed.Round(time.Second), rate(k.Rounds, k.Elapsed), rate(k.Rounds-prev.Rounds, k.Elapsed-prev.Elapsed),
		strings.Join(kinds, ", "), k.Commands, k.Duplicates, k.LogEnd)
}

// soakT is the harness's test for `matchlog soak`: logs go to w, Errorf
// records a failure, Fatal records one and ends the goroutine (deferred
// calls run: the node child is killed, the client closed), as
// testing.T's does.
type soakT struct {
	w    io.Writer
	mu   sync.Mutex
	errs []error
}

func (s *soakT) Helper() {}

func (s *soakT) Logf(format string, args ...any) {
	fmt.Fprintf(s.w, "soak: "+format+"\n", args...)
}

func (s *soakT) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
}

func (s *soakT) Fatal(args ...any) {
	s.Errorf("%s", fmt.Sprint(args...))
	runtime.Goexit()
}

func (s *soakT) Fatalf(format string, args ...any) {
	s.Errorf(format, args...)
	runtime.Goexit()
}

func (s *soakT) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}
