package cluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// hashTree returns a digest of every file under the node directory n:
// name, length and bytes.
func hashTree(t *testing.T, fsys vfs.FS) map[string]string {
	t.Helper()
	out, err := vfs.Digests(fsys, "n/cluster", "n/archive")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %s -> %q", k, v, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "new file "+k)
		}
	}
	return d
}

// snapshotOnce is the work of an offline snapshot: request one and run the
// duty cycle until it is complete (bounded).
func snapshotOnce(n *cluster.Node) error {
	done := n.Stats().Snapshots
	n.RequestSnapshot()
	for i := 0; i < 10_000 && n.Stats().Snapshots == done; i++ {
		if _, err := n.DoWork(); err != nil {
			return err
		}
		if n.SnapshotInProgress() {
			if err := n.AwaitSnapshot(10 * time.Second); err != nil {
				return err
			}
		}
	}
	if n.Stats().Snapshots == done {
		return errors.New("no snapshot")
	}
	return nil
}

// A failed offline snapshot leaves the directory as it found it, whichever
// file operation fails: every operation of RunStopped in turn is failed by
// the injector, and the directory is hashed before and after.
func TestRunStoppedFailureLeavesDirectory(t *testing.T) {
	mem := vfs.NewMem()
	a := newFixture(t, mem)
	a.open()
	sess, err := a.node.Connect("aeron:ipc", 102)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 20; i++ {
		if err := a.node.Offer(sess, msg(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	a.work(20)
	if err := snapshotOnce(a.node); err != nil {
		t.Fatal(err)
	}
	a.work(5)
	a.close()
	base := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	want := hashTree(t, base)

	failures := 0
	for i := int64(0); ; i++ {
		if i > 20_000 {
			t.Fatalf("sweep did not finish after %d failure points", i)
		}
		fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		inj := vfs.NewInjector(fs, vfs.AllOps, i)
		f := newFixture(t, inj)
		f.svc = &timerService{delay: 20_000, egress: true}
		o := f.opts
		o.Service = f.svc
		err := cluster.RunStopped(o, snapshotOnce, nil)
		if inj.Injected() == nil {
			if err != nil {
				t.Fatalf("run without a failure: %v", err)
			}
			if d := diffTrees(want, hashTree(t, fs)); len(d) == 0 {
				t.Fatal("a successful snapshot changed nothing")
			}
			break
		}
		if err == nil {
			continue // the failure was absorbed (a retried or optional step): the command succeeded
		}
		failures++
		if d := diffTrees(want, hashTree(t, fs)); len(d) > 0 {
			t.Fatalf("failure %d (%v): run failed with %v and left the directory changed:\n%v", i, inj.Injected(), err, d)
		}
	}
	if failures == 0 {
		t.Fatal("no injected failure made the run fail")
	}
	t.Logf("%d failure points, each left the directory as it was", failures)
}
