package enginesvc_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
)

func TestNodeBasic(t *testing.T) {
	cmds, hashes := stream(1, 2000, false)
	mem := vfs.NewMem()
	h := newHarness(t, mem, cluster.Pauseless, 1)
	h.mustOpen()
	if err := h.submit(cmds[:1000]); err != nil {
		t.Fatal(err)
	}
	h.node.RequestSnapshot()
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	if err := h.node.AwaitSnapshot(10e9); err != nil {
		t.Fatal(err)
	}
	if err := h.submit(cmds[1000:]); err != nil {
		t.Fatal(err)
	}
	if got := h.svc.Engine().StateHash(); got != hashes[0] {
		t.Fatalf("live hash %x, want %x", got, hashes[0])
	}
	st := h.node.Stats()
	t.Logf("stats %+v", st)
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	h.mustOpen()
	if got := h.svc.Engine().StateHash(); got != hashes[0] {
		t.Fatalf("restarted hash %x, want %x", got, hashes[0])
	}
	t.Logf("after restart %+v", h.node.Stats())
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	logged, err := logCommands(t, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(cmds) {
		t.Fatalf("log holds %d commands, want %d", len(logged), len(cmds))
	}
	if modelHash(logged) != hashes[0] {
		t.Fatal("model of the log differs")
	}
}

// TestSnapshotMTUSwitch: a node that takes stop-the-world snapshots (at its
// snapshot MTU, 65,504 with 1 MiB terms) and pauseless ones (at the log's
// MTU) in turn, with parallel workers, writes each at its own size through
// a publisher of that size, and a restart from each (a copy of the files
// just after it) has the reference engine's state.
func TestSnapshotMTUSwitch(t *testing.T) {
	cmds, hashes := streamWith(3, 30000, true, enginetest.GenConfig{Deep: true})
	mem := vfs.NewMem()
	h := newHarness(t, mem, cluster.StopTheWorld, 1)
	h.opts.TermLength, h.opts.SegmentLength = 1<<20, 4<<20
	h.svcOpts = enginesvc.Options{Workers: 2, ParallelMin: 1, PartitionOrders: 64}
	h.mustOpen()
	modes := []cluster.SnapshotMode{cluster.StopTheWorld, cluster.Pauseless, cluster.StopTheWorld}
	done := 0
	for i, m := range modes {
		next := (i + 1) * len(cmds) / len(modes)
		if err := h.submit(cmds[done:next]); err != nil {
			t.Fatal(err)
		}
		done = next
		par := h.svc.ParallelTakes
		h.node.RequestSnapshotMode(m)
		if err := h.drain(); err != nil {
			t.Fatal(err)
		}
		if err := h.node.AwaitSnapshot(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		if orders := h.svc.Engine().Clone().Orders(); m == cluster.StopTheWorld && (h.svc.ParallelTakes != par+1 || orders < 3000) {
			t.Fatalf("snapshot %d: %d parallel takes of %d resting orders, want one of more than two 64 KiB frames",
				i, h.svc.ParallelTakes-par, orders)
		}
		r := newHarness(t, mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100}), cluster.StopTheWorld, 1)
		r.opts.TermLength, r.opts.SegmentLength = h.opts.TermLength, h.opts.SegmentLength
		r.mustOpen()
		if got := r.svc.Engine().StateHash(); got != hashes[done] {
			t.Fatalf("snapshot %d (%v): restarted hash %x, want %x", i, m, got, hashes[done])
		}
		if rec := r.node.Recovery(); rec.ReplayedEntries != 0 {
			t.Fatalf("snapshot %d (%v): restart replayed %d entries, want the snapshot alone", i, m, rec.ReplayedEntries)
		}
		if err := r.close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	cat, err := archive.OpenCatalogFile(mem, testDir+"/"+cluster.ArchiveDirName, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	var mtus []int32
	for id := int64(0); ; id++ {
		d, err := cat.Descriptor(id)
		if err != nil {
			break
		}
		if d.StreamID == cluster.ServiceSnapshotStreamID {
			mtus = append(mtus, d.MTULength)
		}
	}
	if want := []int32{65504, 1408, 65504}; !slices.Equal(mtus, want) {
		t.Fatalf("service snapshot recordings with MTUs %v, want %v", mtus, want)
	}
}
