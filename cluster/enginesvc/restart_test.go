package enginesvc_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestRestartEquivalence feeds random command streams through a node,
// taking snapshots and restarting at random points, pauseless and stop the
// world, and checks that every restart + replay reaches the state hash of
// an uninterrupted run over the same prefix.
func TestRestartEquivalence(t *testing.T) {
	seeds, n := 6, 3000
	if testing.Short() {
		seeds, n = 3, 1500
	}
	for _, mode := range []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld} {
		for seed := int64(1); seed <= int64(seeds); seed++ {
			t.Run(fmt.Sprintf("mode=%d/seed=%d", mode, seed), func(t *testing.T) {
				restartEquivalence(t, mode, seed, n)
			})
		}
	}
}

func restartEquivalence(t *testing.T, mode cluster.SnapshotMode, seed int64, n int) {
	rng := rand.New(rand.NewSource(seed))
	cmds, hashes := stream(seed, n, true)
	h := newHarness(t, vfs.NewMem(), mode, 1+int(seed%2))
	if seed%3 == 0 {
		// Parallel encode of the frozen clone.
		h.svcOpts = enginesvc.Options{Workers: 2, ParallelMin: 1, PartitionOrders: 64}
	}
	h.mustOpen()
	done, snaps, restarts := 0, 0, 0
	for done < n {
		k := min(n-done, 1+rng.Intn(300))
		if err := h.submit(cmds[done : done+k]); err != nil {
			t.Fatal(err)
		}
		done += k
		if got := h.svc.Engine().StateHash(); got != hashes[done] {
			t.Fatalf("after %d commands: hash %x, want %x", done, got, hashes[done])
		}
		op := rng.Intn(4)
		if testing.Verbose() {
			t.Logf("done %d op %d pos %d", done, op, h.node.LogPosition())
		}
		switch op {
		case 0:
			h.node.RequestSnapshot()
			if err := h.drain(); err != nil {
				t.Fatal(err)
			}
			snaps++
		case 1:
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
			h.mustOpen()
			restarts++
			if got := h.svc.Engine().StateHash(); got != hashes[done] {
				t.Fatalf("restart after %d commands: hash %x, want %x", done, got, hashes[done])
			}
		}
	}
	if err := h.node.AwaitSnapshot(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	h.mustOpen()
	if got := h.svc.Engine().StateHash(); got != hashes[n] {
		t.Fatalf("final restart: hash %x, want %x", got, hashes[n])
	}
	st := h.node.Stats()
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snapshots requested, %d restarts, last replay %d entries", snaps, restarts, st.Replayed)
}
