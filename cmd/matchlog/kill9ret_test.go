//go:build unix

package main

import (
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/snapshot"
)

// TestKill9Retention is TestKill9 with automatic retention on a tight
// budget: `matchlog node` with 64 KiB segments, snapshots every 128 KiB of
// log and a 512 KiB budget for its archive directory — less than the kept
// snapshots and their log need, so that most proposals are lowered to C or
// refused, and log and snapshot generations are deleted all the time, with
// no delay before the unlinks — is killed with SIGKILL at random moments
// (10 rounds, or -kill9.n). After each kill, before anything opens the
// directory, retention.Decide on its files must give normal-restart
// (full-replay before the first snapshot, while the log starts at 0); then
// the directory must restart with the right state hash — that of an
// engine fed the log's commands, re-based on the oldest kept snapshot
// (loaded strictly) whenever retention purged the log past where the
// previous scan ended — with every acknowledged command in it,
// recording.log and the catalog agreeing (checkKilledDir).
func TestKill9Retention(t *testing.T) {
	rounds := 10
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "kill9.n" {
			rounds = *kill9N
		}
	})
	const budget = 512 << 10
	nodeArgs := []string{"--sync", "1", "--snapshot-every-bytes", "131072", "--session-timeout", "30s", "--segment-length", "65536",
		"--retention-max-bytes", "524288", "--retention-interval", "50ms", "--delay", "0"}
	if os.Getenv("MATCHLOG_TEST_RETENTION_OFF") == "1" {
		nodeArgs = nodeArgs[:8]
	}
	const clientID = 7 // kill9Run's
	verdicts := map[string]int{}
	var maxBytes, lastA int64
	rebases := 0
	var dir string
	m := kill9Run(t, kill9Config{
		dir: filepath.Join(t.TempDir(), "node"), seed: *kill9Seed, deletes: true,
		rounds: rounds, stream: 14, loadRate: 6000, nodeArgs: nodeArgs,
		kinds: []string{killSnapshot, killLogWrite, killRollOver, killRetention},
		sleep: func(rng *rand.Rand) time.Duration { return time.Duration(50+rng.IntN(400)) * time.Millisecond },
		// The verdict on the directory as the kill left it.
		beforeCheck: func(round int, d string, m *logModel) {
			dir = d
			maxBytes = max(maxBytes, archiveDirBytes(t, dir))
			f, err := retention.Gather(vfs.Default, retention.Member{ID: 0, Dir: dir}, retention.Options{Services: 1, Commit: -1})
			if err != nil {
				t.Fatalf("round %d: gather: %v", round, err)
			}
			v := retention.Decide(f)
			verdicts[v.Verdict]++
			if v.Verdict != retention.NormalRestart && !(v.Verdict == retention.FullReplay && f.A == 0) {
				t.Fatalf("round %d: verdict %s after kill -9 (reasons %v; A %d, P %d)", round, v.Verdict, v.Reasons, f.A, f.P)
			}
			lastA = f.A
			if f.A > m.end {
				rebase(t, round, dir, f, m, clientID)
				rebases++
			}
		},
	})
	if keep := os.Getenv("MATCHLOG_KILL9_KEEP"); keep != "" && dir != "" {
		// For a look at the directory after the run (it is removed with
		// the test's temporary directory).
		if out, err := exec.Command("cp", "-a", dir, keep).CombinedOutput(); err != nil {
			t.Errorf("keep the directory in %s: %v %s", keep, err, out)
		}
	}
	t.Logf("%d kills, verdicts %v; model re-based on a snapshot %d times; last log start %d, log end %d; archive directory at most %d bytes after a kill (budget %d)",
		rounds, verdicts, rebases, lastA, m.end, maxBytes, int64(budget))
	if rounds >= 10 && lastA == 0 {
		t.Errorf("the log was never purged: the test did not exercise retention")
	}
}

// archiveDirBytes is the size of a node directory's archive/ (every file
// at its length).
func archiveDirBytes(t *testing.T, dir string) int64 {
	adir := filepath.Join(dir, cluster.ArchiveDirName)
	names, err := vfs.Default.List(adir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range names {
		if s, err := vfs.Default.Stat(filepath.Join(adir, n)); err == nil {
			total += s
		}
	}
	return total
}

// rebase restarts the model from the oldest snapshot set the killed node
// kept (retention purged the log past where the model had read it): the
// engine snapshot is loaded strictly and its state hash checked against
// its End, and every client command at or below the source's high-water
// mark in it counts as in the log.
func rebase(t *testing.T, round int, dir string, f *retention.Facts, m *logModel, clientID uint64) {
	t.Helper()
	var pos int64 = -1
	for _, s := range f.Sets {
		if s.Complete && s.Loadable && s.Usable {
			pos = s.LogPosition // oldest last
		}
	}
	if pos < 0 {
		t.Fatalf("round %d: the log starts at %d, after the model's %d, and no usable snapshot set is kept", round, f.A, m.end)
	}
	img, info, closeImg, err := cluster.ServiceSnapshot(vfs.Default, dir, pos)
	if err != nil {
		t.Fatalf("round %d: snapshot at %d: %v", round, pos, err)
	}
	defer closeImg()
	eng, _, err := snapshot.Load(img, snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: info.AppVersion})
	if err != nil {
		t.Fatalf("round %d: load the snapshot at %d: %v", round, pos, err)
	}
	m.eng, m.end, m.prevEnd = eng, pos, -1
	if hwm, ok := eng.HighWater(clientID); ok {
		m.base = max(m.base, hwm)
	}
}
