package enginesvc_test

import (
	randv2 "math/rand/v2"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestLevel0BackgroundSync runs a node at file sync level 0 with a segment
// large enough for the log's background syncs (every 2 MiB of the current
// segment) and a pauseless snapshot that syncs the log up to its position
// on the snapshot goroutine (run with -race), then crashes it keeping only
// what was synced: the restart loads the snapshot, replays the durable log
// and reaches the model's state for it, which holds at least every command
// before the snapshot.
func TestLevel0BackgroundSync(t *testing.T) {
	n := 40_000
	if testing.Short() {
		n = 25_000
	}
	cmds := bookCommands(n, 5)
	mem := vfs.NewMem()
	h := newHarness(t, mem, cluster.Pauseless, 0)
	h.opts.TermLength, h.opts.SegmentLength, h.opts.MaxBatch = 1<<20, 16<<20, 1024
	h.mustOpen()
	half := n / 2
	if err := h.submit(cmds[:half]); err != nil {
		t.Fatal(err)
	}
	h.node.RequestSnapshot()
	if err := h.submit(cmds[half:]); err != nil {
		t.Fatal(err)
	}
	if err := h.node.AwaitSnapshot(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	if h.node.Stats().Snapshots != 1 {
		t.Fatalf("%d snapshots, want 1", h.node.Stats().Snapshots)
	}
	if pos := h.node.LogPosition(); pos < 3<<20 {
		t.Fatalf("log position %d: too short for a background sync", pos)
	}
	crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 0, Rand: randv2.New(randv2.NewPCG(1, 2))})
	h.node = nil // abandoned, as by the crash
	durable, err := logCommands(t, crashed)
	if err != nil {
		t.Fatal(err)
	}
	if len(durable) < half {
		t.Fatalf("%d commands durable, want at least the %d before the snapshot", len(durable), half)
	}
	h2 := newHarness(t, crashed, cluster.Pauseless, 0)
	h2.opts.TermLength, h2.opts.SegmentLength, h2.opts.MaxBatch = 1<<20, 16<<20, 1024
	h2.sess = h.sess
	h2.mustOpen()
	defer h2.close()
	if got, want := h2.svc.Engine().StateHash(), modelHash(durable); got != want {
		t.Fatalf("restored hash %x, model of the %d durable commands %x", got, len(durable), want)
	}
}
