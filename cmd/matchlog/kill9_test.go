//go:build unix

package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var (
	kill9N    = flag.Int("kill9.n", 50, "kill -9 rounds of TestKill9 (10 with -short; 0.5 to 1 s a round, so pass -timeout for hundreds)")
	kill9Seed = flag.Uint64("kill9.seed", 0, "seed of TestKill9 (0: from the clock, printed)")
	kill9Seg  = flag.Int("kill9.segment-length", kill9SegmentLength, "log segment length of TestKill9's node (0: the node's default, 128 MiB); at most 1 MiB (65536 puts a segment roll-over and term-end padding into most rounds) requires the roll-over kill kind")
)

// childArgsEnv makes the test binary run the matchlog command line it
// names (fields separated by \x1f) instead of the tests: the node child of
// TestKill9.
const childArgsEnv = "MATCHLOG_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	nodeChildCommand = func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f"))
		return cmd, nil
	}
	os.Exit(m.Run())
}

// kill9SegmentLength is TestKill9's log segment length unless
// -kill9.segment-length says otherwise. Every start after a kill scans the
// log's last segment (the archive settles the recording the kill left
// active, checking every frame of that segment), and the check reads it
// again (archive verify): that cost grows with the bytes in the last
// segment up to the segment length. With the node's default, 128 MiB, a
// run of 1,000 rounds (about 110 MB of log) never leaves its first
// segment and its rounds slow down throughout; with 4 MiB segments the
// cost is bounded after the first 40 rounds or so, and a round costs the
// same however many came before.
const kill9SegmentLength = 4 << 20

// TestKill9 runs `matchlog node` as a child process under client load and
// kills it with SIGKILL at random moments — while the book is preloaded,
// while snapshots are written (every 64 KiB of log), while the log is
// written — then, before
// restarting it, opens the directory in this process and checks
// (kill9Run, checkKilledDir): the recovered engine's state hash equals
// that of an engine and of the naive model fed the log's commands from the
// start (the durable prefix: what the log recording holds after recovery);
// every command the client got its Release (or Duplicate) for is in that
// log (file sync level 1 or 2, chosen at each start); recording.log and the
// catalog agree (recovery plan, archive verify). The client reconnects to
// each new child, resends what was unanswered and goes on; nothing is
// applied twice (the engine ignores a resent (source, seq) and answers
// Duplicate).
func TestKill9(t *testing.T) {
	rounds := *kill9N
	if testing.Short() {
		rounds = min(rounds, 10)
	}
	cfg := kill9Standard()
	cfg.dir, cfg.seed, cfg.rounds, cfg.preloadRounds = filepath.Join(t.TempDir(), "node"), *kill9Seed, rounds, rounds/5
	if *kill9Seg > 0 {
		cfg.nodeArgs = append(cfg.nodeArgs, "--segment-length", strconv.Itoa(*kill9Seg))
	}
	if *kill9Seg > 0 && *kill9Seg <= 1<<20 {
		cfg.kinds = append(cfg.kinds, killRollOver)
	}
	kill9Run(t, cfg)
}
