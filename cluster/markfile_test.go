package cluster_test

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// markActivity reads the activity timestamp of n/cluster/cluster-mark.dat.
func markActivity(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	f, err := fs.Open("n/cluster/" + cluster.MarkFileName)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 24)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return int64(binary.LittleEndian.Uint64(b[16:]))
}

// archiveActivity reads the activity timestamp of n/archive/archive-mark.dat.
func archiveActivity(t *testing.T, fs vfs.FS) int64 {
	t.Helper()
	m, err := archive.ReadMarkFileIn(fs, "n/archive")
	if err != nil {
		t.Fatal(err)
	}
	return m.ActivityTimestamp
}

// TestMarkFileActivity: a running node refreshes the activity timestamp of
// cluster-mark.dat from its duty cycle about once a second, in wall-clock
// time (EpochClock), not in the cluster time of Options.Clock; Close
// writes -1.
func TestMarkFileActivity(t *testing.T) {
	mem := vfs.NewMem()
	var epoch atomic.Int64
	epoch.Store(1_800_000_000_000)
	f := newFixture(t, mem)
	f.opts.EpochClock = epoch.Load
	f.open()
	if got := markActivity(t, mem); got != 1_800_000_000_000 {
		t.Fatalf("activity at open %d", got)
	}
	epoch.Add(900)
	f.work(3)
	if got := markActivity(t, mem); got != 1_800_000_000_000 {
		t.Fatalf("activity refreshed within a second: %d", got)
	}
	epoch.Add(200)
	f.work(1)
	if got := markActivity(t, mem); got != 1_800_000_001_100 {
		t.Fatalf("activity after 1.1 s: %d, want %d", got, int64(1_800_000_001_100))
	}
	epoch.Add(5000)
	f.work(1)
	if got := markActivity(t, mem); got != 1_800_000_006_100 {
		t.Fatalf("activity after 6.1 s: %d", got)
	}
	f.close()
	if got := markActivity(t, mem); got != -1 {
		t.Fatalf("activity after Close: %d", got)
	}
}

// TestOpenRefusesLiveNode: Open refuses a directory whose cluster-mark.dat
// shows a live node, without touching its mark files; it opens once the
// node closed, and after a crash once the timeout has passed.
func TestOpenRefusesLiveNode(t *testing.T) {
	mem := vfs.NewMem()
	var epoch atomic.Int64
	epoch.Store(1_800_000_000_000)
	a := newFixture(t, mem)
	a.opts.EpochClock = epoch.Load
	a.open()
	a.work(2)
	arcBefore := archiveActivity(t, mem)

	epoch.Add(3000) // the live node did not refresh for 3 s: still within the timeout
	b := newFixture(t, mem)
	b.opts.EpochClock = epoch.Load
	b.opts.Service = &timerService{delay: 20_000}
	if n, err := cluster.Open(b.opts); !errors.Is(err, cluster.ErrNodeRunning) {
		if n != nil {
			n.Close()
		}
		t.Fatalf("second Open = %v, want ErrNodeRunning", err)
	}
	if got := markActivity(t, mem); got != 1_800_000_000_000 {
		t.Fatalf("refused Open changed cluster-mark.dat activity to %d", got)
	}
	if got := archiveActivity(t, mem); got != arcBefore || got == archive.NullTimestamp {
		t.Fatalf("refused Open stamped archive-mark.dat %d (was %d)", got, arcBefore)
	}

	// A crash leaves the node's last activity: refused within the
	// timeout, opened after it.
	a.work(1) // refreshes: 3 s since the last stamp
	crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	c := newFixture(t, crashed)
	c.opts.EpochClock = epoch.Load
	c.opts.Service = &timerService{delay: 20_000}
	if _, err := cluster.Open(c.opts); !errors.Is(err, cluster.ErrNodeRunning) {
		t.Fatalf("Open of a just-crashed node = %v, want ErrNodeRunning", err)
	}
	epoch.Add(cluster.DefaultMarkFileTimeout.Milliseconds() + 1)
	c.open()
	c.work(2)
	c.close()

	// After a clean Close the directory opens at once.
	a.close()
	b.open()
	b.work(2)
	b.close()
}
