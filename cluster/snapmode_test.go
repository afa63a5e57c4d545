package cluster_test

import (
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// pauselessTimers is timerService with a pauseless snapshot path that
// counts how each snapshot was taken.
type pauselessTimers struct {
	*timerService
	prepared, stw int
}

func (p *pauselessTimers) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	p.stw++
	return p.timerService.OnTakeSnapshot(info, pub, idle)
}

type frozenTimers struct{ s timerService }

func (f *frozenTimers) Write(pub cluster.Publication, idle func() error) error {
	return f.s.OnTakeSnapshot(cluster.SnapshotInfo{}, pub, idle)
}

func (p *pauselessTimers) PrepareSnapshot(cluster.SnapshotInfo) (cluster.SnapshotTask, error) {
	p.prepared++
	return &frozenTimers{s: *p.timerService}, nil
}

// snapshotsInModes connects a session to n and, for each mode in turn,
// offers one message and takes a snapshot of that mode. It returns the
// session and a few duty cycles' work.
func snapshotsInModes(t *testing.T, n *cluster.Node, modes ...cluster.SnapshotMode) (int64, func()) {
	t.Helper()
	s, err := n.Connect("aeron:ipc", 102)
	if err != nil {
		t.Fatal(err)
	}
	work := func() {
		for range 4 {
			if _, err := n.DoWork(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, m := range modes {
		n.Offer(s, msg(uint64(i)+1, 0))
		work()
		n.RequestSnapshotMode(m)
		work()
		if err := n.AwaitSnapshot(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return s, work
}

// TestRequestSnapshotMode: a node's snapshots follow the mode of each
// request, whatever Options.SnapshotMode is; both kinds restore.
func TestRequestSnapshotMode(t *testing.T) {
	for _, def := range []cluster.SnapshotMode{cluster.Pauseless, cluster.StopTheWorld} {
		mem := vfs.NewMem()
		f := newFixture(t, mem)
		svc := &pauselessTimers{timerService: &timerService{delay: 20_000}}
		o := f.opts
		o.Service, o.SnapshotMode = svc, def
		n, err := cluster.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		s, work := snapshotsInModes(t, n, cluster.StopTheWorld, cluster.Pauseless, cluster.Pauseless, cluster.StopTheWorld)
		// One more by the default mode.
		n.RequestSnapshot()
		work()
		if err := n.AwaitSnapshot(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		wantPrep, wantSTW := 2, 2
		if def == cluster.Pauseless {
			wantPrep++
		} else {
			wantSTW++
		}
		if svc.prepared != wantPrep || svc.stw != wantSTW {
			t.Fatalf("default %v: %d pauseless, %d stop-the-world snapshots; want %d, %d", def, svc.prepared, svc.stw, wantPrep, wantSTW)
		}
		n.Offer(s, msg(99, 0)) // replayed after the last snapshot
		work()
		hash := svc.hash
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if got := len(snapshotEntries(t, mem)); got != 10 {
			t.Fatalf("%d SNAPSHOT entries, want 10", got)
		}
		svc2 := &pauselessTimers{timerService: &timerService{delay: 20_000}}
		o.Service = svc2
		n2, err := cluster.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		if svc2.hash != hash {
			t.Fatalf("restored hash %x, want %x", svc2.hash, hash)
		}
		if r := n2.Recovery(); r.ReplayedEntries < 1 || r.ReplayedBytes <= 0 || r.SnapshotLoad <= 0 || r.Replay <= 0 || r.Total < r.SnapshotLoad+r.Replay {
			t.Fatalf("recovery timings %+v", r)
		}
		n2.Close()
	}
}
