package enginesvc_test

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestLiveIOFaults fails one file operation of a running node with EIO —
// a log segment's data write or fsync, the archive directory's sync, the
// catalog's update, recording.log's append, a snapshot segment's write —
// while commands and snapshots go on. Each stops the node with the error
// naming the operation's file (no design retries these: after a failed
// write or sync the node cannot tell what the disk holds); nothing is
// released after it, every later DoWork returns it, and a restart, from
// the files as the process left them and from what a crash would leave,
// recovers the state of the commands in the durable log, with every
// acknowledged command in it. A failed fsync that the disk would pass
// the second time is not retried: the node has stopped before any retry.
func TestLiveIOFaults(t *testing.T) {
	cmds := fresh(stream(21, 4000, false))
	logSeg := func(id int64) func(string) bool {
		return func(p string) bool {
			b := path.Base(p)
			return strings.HasPrefix(p, "node/archive/") && strings.HasPrefix(b, fmt.Sprintf("%d-", id)) && strings.Contains(b, ".rec") && !strings.HasSuffix(b, ".deleted")
		}
	}
	snapSeg := func(id int64) func(string) bool {
		return func(p string) bool {
			b := path.Base(p)
			return strings.HasPrefix(p, "node/archive/") && !strings.HasPrefix(b, fmt.Sprintf("%d-", id)) && strings.Contains(b, ".rec") && !strings.HasSuffix(b, ".deleted")
		}
	}
	is := func(name string) func(int64) func(string) bool {
		return func(int64) func(string) bool { return func(p string) bool { return p == name } }
	}
	for _, c := range []struct {
		name   string
		op     vfs.Op
		level  int
		mode   cluster.SnapshotMode
		match  func(logID int64) func(string) bool
		noSnap bool // no snapshots: the fault meets the log's roll-over
	}{
		{"log data write", vfs.OpWrite, 1, cluster.Pauseless, logSeg, false},
		{"log fsync", vfs.OpSync, 1, cluster.Pauseless, logSeg, false},
		{"log fsync at level 0 (roll-over, background or snapshot sync)", vfs.OpSync, 0, cluster.Pauseless, logSeg, false},
		{"log fsync at level 0, roll-over", vfs.OpSync, 0, cluster.Pauseless, logSeg, true},
		{"directory sync at a snapshot", vfs.OpSyncDir, 1, cluster.Pauseless, is("node/archive"), false},
		{"directory sync at the log's roll-over", vfs.OpSyncDir, 1, cluster.Pauseless, is("node/archive"), true},
		{"catalog update", vfs.OpWrite, 1, cluster.Pauseless, is("node/archive/archive.catalog"), false},
		{"recording.log append", vfs.OpWrite, 1, cluster.Pauseless, is("node/cluster/recording.log"), false},
		{"snapshot segment write", vfs.OpWrite, 1, cluster.Pauseless, snapSeg, false},
		{"snapshot segment write, stop the world", vfs.OpWrite, 1, cluster.StopTheWorld, snapSeg, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var armed, fired atomic.Bool
			var match atomic.Pointer[func(string) bool]
			var failedPath atomic.Pointer[string]
			inj := vfs.NewInjector(mem, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(c.op), Before: func(op vfs.Op, p string) error {
				m := match.Load()
				if !armed.Load() || m == nil || !(*m)(p) || !fired.CompareAndSwap(false, true) {
					return nil
				}
				failedPath.Store(&p)
				return &os.PathError{Op: op.String(), Path: p, Err: syscall.EIO}
			}})
			h := newHarness(t, inj, c.mode, c.level)
			h.mustOpen()
			m := c.match(h.node.LogRecordingID())
			match.Store(&m)
			if err := h.submit(cmds[:100]); err != nil {
				t.Fatal(err)
			}
			armed.Store(true)
			var err error
			sent := 100
			for sent < len(cmds) && err == nil {
				err = h.submit(cmds[sent:min(sent+25, len(cmds))])
				sent += 25
				if err == nil && !c.noSnap && sent%400 == 0 {
					h.node.RequestSnapshot()
					if err = h.drain(); err == nil {
						err = h.node.AwaitSnapshot(10 * time.Second)
					}
				}
			}
			if !fired.Load() {
				t.Fatalf("the fault was never reached (%d commands, err %v)", sent, err)
			}
			if err == nil {
				t.Fatalf("EIO on %s: the node went on", *failedPath.Load())
			}
			if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), path.Base(*failedPath.Load())) {
				t.Fatalf("error %q does not name EIO on %s", err, *failedPath.Load())
			}
			released := h.node.Stats().Released
			for range 5 {
				if _, again := h.node.DoWork(); !errors.Is(again, syscall.EIO) {
					t.Fatalf("DoWork after the failure: %v", again)
				}
			}
			if r := h.node.Stats().Released; r != released {
				t.Fatalf("%d messages released after the failure", r-released)
			}
			acked := copyReleased(h.released)
			h.node.Close()
			h.node = nil
			crash := mem.CrashClone(vfs.CrashCloneConfig{})
			checkRecovered(t, "process restart", mem, c.mode, c.level, acked)
			checkRecovered(t, "crash", crash, c.mode, c.level, acked)
			t.Logf("EIO on %s %s after %d commands: %v", c.op, *failedPath.Load(), sent, err)
		})
	}
}
