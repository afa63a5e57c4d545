//go:build unix

package main

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/engine"
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
	seed := *kill9Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-kill9.seed to repeat), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 14))
	dir := filepath.Join(t.TempDir(), "node")
	listen := freePort(t)
	const budget = 512 << 10
	nodeArgs := []string{"--sync", "1", "--snapshot-every-bytes", "131072", "--session-timeout", "30s", "--segment-length", "65536",
		"--retention-max-bytes", "524288", "--retention-interval", "50ms", "--delay", "0"}
	if os.Getenv("MATCHLOG_TEST_RETENTION_OFF") == "1" {
		nodeArgs = nodeArgs[:8]
	}
	child := startNodeChild(t, dir, listen, nodeArgs...)
	defer func() {
		if child != nil {
			child.kill()
		}
	}()

	const clientID = 7
	var mu sync.Mutex
	acked := map[uint64]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Addr: child.addr, ClientID: clientID, Reconnect: true,
		ReconnectMin: time.Millisecond, ReconnectMax: 50 * time.Millisecond, ReconnectTimeout: 2 * time.Minute,
		MaxOutstanding: 1 << 16,
		OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRelease {
				mu.Lock()
				acked[ev.Seq] = true
				mu.Unlock()
			}
		},
		OnDuplicate: func(_, seq uint64) {
			mu.Lock()
			acked[seq] = true
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20}); err != nil {
		t.Fatal(err)
	}

	// The load: at most loadRate commands a second, resting and crossing
	// orders, cancels and modifies.
	var paused atomic.Bool
	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() {
		lr := rand.New(rand.NewPCG(seed, 15))
		var id uint64
		const loadRate = 6000
		t0, sent := time.Now(), 0
		for {
			select {
			case <-stop:
				loadDone <- nil
				return
			default:
			}
			if paused.Load() || c.Outstanding() >= 512 {
				time.Sleep(200 * time.Microsecond)
				t0, sent = time.Now(), 0
				continue
			}
			if ahead := time.Duration(sent)*time.Second/loadRate - time.Since(t0); ahead > 0 {
				time.Sleep(ahead)
			}
			sent++
			cmd := kill9Command(lr, &id, false)
			if _, err := c.Send(&cmd); err != nil {
				loadDone <- err
				return
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()

	// No naive model: it could not be re-based on a snapshot (see rebase).
	m := &logModel{eng: engine.New(), inLog: map[uint64]bool{}, detachedOK: true}
	verdicts := map[string]int{}
	var maxBytes, lastA int64
	rebases := 0
	for round := 0; round < rounds; round++ {
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		if out := child.kill(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
			t.Fatalf("round %d: the node child reported:\n%s", round, out)
		}
		child = nil
		paused.Store(true)
		mu.Lock()
		ackedNow := make([]uint64, 0, len(acked))
		for s := range acked {
			ackedNow = append(ackedNow, s)
		}
		mu.Unlock()
		maxBytes = max(maxBytes, archiveDirBytes(t, dir))

		// The verdict on the directory as the kill left it.
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
		checkKilledDir(t, round, dir, ackedNow, clientID, m)

		child = startNodeChild(t, dir, listen, nodeArgs...)
		paused.Store(false)
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		for c.Outstanding() > 256 && wctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		wcancel()
		if err := c.Err(); err != nil {
			t.Fatalf("round %d: client failed: %v", round, err)
		}
	}
	close(stop)
	if err := <-loadDone; err != nil {
		t.Fatalf("load: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	err = c.Wait(wctx)
	wcancel()
	if err != nil {
		t.Fatalf("after the last restart, %d commands unanswered: %v", c.Outstanding(), err)
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
	m.eng, m.end = eng, pos
	if hwm, ok := eng.HighWater(clientID); ok {
		for s := uint64(1); s <= hwm; s++ {
			m.inLog[s] = true
		}
	}
}
