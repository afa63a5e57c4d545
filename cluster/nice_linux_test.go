//go:build linux

package cluster_test

import (
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
	"golang.org/x/sys/unix"
)

// prioTimers records the priority of the thread its snapshot task runs on.
type prioTimers struct {
	*timerService
	prio chan int
}

type prioTask struct {
	frozenTimers
	prio chan int
}

func (p *prioTask) Write(pub cluster.Publication, idle func() error) error {
	pr, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		pr = -1000
	}
	p.prio <- pr
	return p.frozenTimers.Write(pub, idle)
}

func (p *prioTimers) PrepareSnapshot(cluster.SnapshotInfo) (cluster.SnapshotTask, error) {
	return &prioTask{frozenTimers: frozenTimers{s: *p.timerService}, prio: p.prio}, nil
}

// TestSnapshotNice: a pauseless snapshot's writer runs on a thread with
// Options.SnapshotNice; negative leaves it as it was.
func TestSnapshotNice(t *testing.T) {
	base, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct{ nice, delta int }{{7, 7}, {-1, 0}} {
		f := newFixture(t, vfs.NewMem())
		svc := &prioTimers{timerService: &timerService{delay: 20_000}, prio: make(chan int, 1)}
		o := f.opts
		o.Service, o.SnapshotNice = svc, c.nice
		n, err := cluster.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		n.RequestSnapshot()
		for range 3 {
			if _, err := n.DoWork(); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.AwaitSnapshot(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		got := <-svc.prio
		if err := n.Stats().LastSnapshotNiceErr; err != nil {
			t.Fatalf("SnapshotNice %d: %v", c.nice, err)
		}
		n.Close()
		// The raw priority is 20 - nice.
		if base-got != c.delta {
			t.Fatalf("SnapshotNice %d: writer priority %d, process %d; want a nice delta of %d", c.nice, got, base, c.delta)
		}
	}
}
