package cluster_test

import (
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server/metrics"
)

// nopService applies nothing and answers every message with one egress
// message.
type nopService struct{ c cluster.Cluster }

func (s *nopService) OnStart(c cluster.Cluster, _ cluster.SnapshotImage) error { s.c = c; return nil }
func (s *nopService) OnSessionOpen(*cluster.ClientSession, int64) error        { return nil }
func (s *nopService) OnSessionClose(*cluster.ClientSession, int64, cluster.CloseReason) error {
	return nil
}
func (s *nopService) OnSessionMessage(cs *cluster.ClientSession, _ int64, msg []byte, _ int64) error {
	s.c.Offer(cs.ID, msg[:8])
	return nil
}
func (s *nopService) OnTimerEvent(int64, int64) error { return nil }
func (s *nopService) OnTakeSnapshot(cluster.SnapshotInfo, cluster.Publication, func() error) error {
	return nil
}
func (s *nopService) OnRoleChange(cluster.Role) error   { return nil }
func (s *nopService) OnTerminate(cluster.Cluster) error { return nil }

// TestSteadyStateAllocs: once its buffers have grown, the node sequences,
// records, applies and releases a message without allocating (Offer
// copies into a reused arena) — also with the metrics' hooks set (the
// duty-cycle histogram and the file system timing every sync, at file sync
// level 1 so that every cycle syncs).
func TestSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts differ under -race")
	}
	t.Run("plain", func(t *testing.T) { steadyStateAllocs(t, nil, 0, cluster.RetentionOptions{}) })
	// With automatic retention on (every rule, a budget never reached):
	// the duty cycle's gate and its checks, which run whenever the log
	// enters a new segment, cost no allocation per message.
	t.Run("retention", func(t *testing.T) {
		steadyStateAllocs(t, nil, 0, cluster.RetentionOptions{MaxBytes: 1 << 40, MaxAge: 24 * time.Hour, MinFreeBytes: 1,
			CheckInterval: time.Hour, Keep: 2})
	})
	t.Run("metrics", func(t *testing.T) {
		m := metrics.New(metrics.Options{})
		steadyStateAllocs(t, m, 1, cluster.RetentionOptions{})
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]uint64{}
		for _, mf := range mfs {
			for _, s := range mf.GetMetric() {
				if h := s.GetHistogram(); h != nil {
					counts[mf.GetName()] += h.GetSampleCount()
				}
			}
		}
		// 701 measured cycles of 3 DoWork, at least one with work each,
		// and at least one data sync per cycle.
		if counts["matchlog_duty_cycle_seconds"] < 700 || counts["matchlog_file_sync_seconds"] < 700 {
			t.Fatalf("histogram sample counts %v: the hooks were not called", counts)
		}
	})
}

func steadyStateAllocs(t *testing.T, m *metrics.Metrics, syncLevel int, ro cluster.RetentionOptions) {
	released := 0
	opts := cluster.Options{FS: vfs.Default, Dir: t.TempDir(), Service: &nopService{},
		TermLength: 64 * 1024, SegmentLength: 1 << 20, FileSyncLevel: archive.SyncLevel(syncLevel),
		Clock: func() int64 { return 1 }, Retention: ro,
		Egress: func(int64, []byte) { released++ }}
	if m != nil {
		m.InstrumentNode(&opts)
	}
	n, err := cluster.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s, _ := n.Connect("aeron:ipc", 102)
	msg := make([]byte, 64)
	cycle := func() {
		for range 16 {
			if err := n.Offer(s, msg); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			if _, err := n.DoWork(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 200 { // grow the arenas and queues; roll a few terms
		cycle()
	}
	checks := n.Stats().RetentionChecks
	allocs := testing.AllocsPerRun(500, cycle)
	if allocs != 0 {
		t.Fatalf("%.2f allocations per cycle of 16 messages, want 0", allocs)
	}
	if ro.Enabled() {
		if checks = n.Stats().RetentionChecks - checks; checks == 0 {
			t.Fatal("no retention check ran while allocations were counted")
		}
		t.Logf("%d retention checks among the 501 measured cycles", checks)
	}
	if released < 16*700 {
		t.Fatalf("released %d", released)
	}
}
