package enginesvc_test

import (
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/snapshot"
)

// gatedService holds every snapshot task until the gate opens, so that the
// test controls what happens while a snapshot is being encoded.
type gatedService struct {
	*enginesvc.Service
	gate    chan struct{}
	started chan struct{}
}

func (g *gatedService) PrepareSnapshot(info cluster.SnapshotInfo) (cluster.SnapshotTask, error) {
	t, err := g.Service.PrepareSnapshot(info)
	if err != nil {
		return nil, err
	}
	return gatedTask{t, g}, nil
}

type gatedTask struct {
	cluster.SnapshotTask
	g *gatedService
}

func (t gatedTask) Write(pub cluster.Publication, idle func() error) error {
	t.g.started <- struct{}{}
	<-t.g.gate
	return t.SnapshotTask.Write(pub, idle)
}

// TestPauselessSnapshotIsStateAtS takes a pauseless snapshot at S, applies
// more commands (and checks their events are released) while the snapshot
// task is held, then lets it encode: the snapshot restores to exactly the
// state hash at S, and a restart reaches the final state.
func TestPauselessSnapshotIsStateAtS(t *testing.T) {
	for _, workers := range []int{0, 2} {
		cmds, hashes := stream(42, 3000, true)
		mem := vfs.NewMem()
		h := newHarness(t, mem, cluster.Pauseless, 1)
		h.svcOpts = enginesvc.Options{Workers: workers, ParallelMin: 1, PartitionOrders: 32}
		g := &gatedService{gate: make(chan struct{}), started: make(chan struct{}, 1)}
		h.wrap = func(s *enginesvc.Service) cluster.Service { g.Service = s; return g }
		h.mustOpen()
		const s = 1500
		if err := h.submit(cmds[:s]); err != nil {
			t.Fatal(err)
		}
		h.node.RequestSnapshot()
		if _, err := h.node.DoWork(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.started:
		case <-time.After(10 * time.Second):
			t.Fatal("snapshot task did not start")
		}
		snapPos := h.node.LogPosition()
		released := len(h.released)
		// Sequencing goes on while the snapshot is held.
		if err := h.submit(cmds[s:]); err != nil {
			t.Fatal(err)
		}
		if !h.node.SnapshotInProgress() {
			t.Fatal("snapshot finished while held")
		}
		if len(h.released) <= released {
			t.Fatal("no events released during the snapshot")
		}
		if got := h.svc.Engine().StateHash(); got != hashes[len(cmds)] {
			t.Fatalf("live hash %x, want %x", got, hashes[len(cmds)])
		}
		close(g.gate)
		if err := h.node.AwaitSnapshot(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
		img, info, closeImg, err := cluster.ServiceSnapshot(mem, testDir, -1)
		if err != nil {
			t.Fatal(err)
		}
		if info.LogPosition != snapPos {
			t.Fatalf("snapshot at %d, want %d", info.LogPosition, snapPos)
		}
		eng, _, err := snapshot.Load(img, snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID})
		closeImg()
		if err != nil {
			t.Fatal(err)
		}
		if got := eng.StateHash(); got != hashes[s] {
			t.Fatalf("workers=%d: snapshot hash %x, want the hash at S %x (final %x)", workers, got, hashes[s], hashes[len(cmds)])
		}
		// Restart from it: snapshot + replay reaches the final state.
		h.wrap = nil
		h.mustOpen()
		if got := h.svc.Engine().StateHash(); got != hashes[len(cmds)] {
			t.Fatalf("restart hash %x, want %x", got, hashes[len(cmds)])
		}
		if h.node.Stats().Replayed < int64(len(cmds)-s) {
			t.Fatalf("replayed %d entries, want at least %d", h.node.Stats().Replayed, len(cmds)-s)
		}
		if err := h.close(); err != nil {
			t.Fatal(err)
		}
	}
}

var _ = engine.New
