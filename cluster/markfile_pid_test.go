//go:build unix

package cluster_test

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// setMarkPID writes pid into n/cluster/cluster-mark.dat.
func setMarkPID(t *testing.T, fs vfs.FS, pid int) {
	t.Helper()
	f, err := fs.OpenRW("n/cluster/" + cluster.MarkFileName)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(pid))
	if _, err := f.WriteAt(b[:], 32); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAfterKill: a mark file with a recent activity timestamp is a
// live node while its process exists, and none once the process is gone
// (killed), so a killed node restarts without waiting out the timeout.
func TestOpenAfterKill(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	mem := vfs.NewMem()
	var epoch atomic.Int64
	epoch.Store(1_800_000_000_000)
	a := newFixture(t, mem)
	a.opts.EpochClock = epoch.Load
	a.open()
	a.work(2)
	crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	a.close()

	// Another process that is alive (our parent) wrote it: refused.
	setMarkPID(t, crashed, os.Getppid())
	c := newFixture(t, crashed)
	c.opts.EpochClock = epoch.Load
	c.opts.Service = &timerService{delay: 20_000}
	if _, err := cluster.Open(c.opts); !errors.Is(err, cluster.ErrNodeRunning) {
		t.Fatalf("Open with a live writer = %v, want ErrNodeRunning", err)
	}
	// The writer is gone: opened at once, within the timeout.
	setMarkPID(t, crashed, dead.Process.Pid)
	c.open()
	c.work(2)
	c.close()
}

// TestStartScansLogOnce: a start after a crash scans the active log
// recording's last segment once — the plan check's read-only scan is the
// one the archive's recovery settles the recording with — and the
// restarted node holds what the crashed one had made durable.
func TestStartScansLogOnce(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	mem := vfs.NewMem()
	a := newFixture(t, mem)
	a.open()
	s, _ := a.node.Connect("aeron:udp?endpoint=localhost:1", 102)
	for i := uint64(1); i <= 200; i++ {
		if err := a.node.Offer(s, msg(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	a.work(50)
	logID, hash := a.node.LogRecordingID(), a.svc.hash
	crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	a.close()
	setMarkPID(t, crashed, dead.Process.Pid)

	c := newFixture(t, crashed)
	c.open()
	defer c.close()
	var found bool
	for _, r := range c.node.Recovery().Archive {
		if r.RecordingID != logID {
			continue
		}
		found = true
		if !r.ScanReused {
			t.Errorf("the archive's recovery read the log's last segment %s again after the plan check had scanned it", r.LastSegment)
		}
	}
	if !found {
		t.Fatalf("the log recording %d was not settled by the start: %+v", logID, c.node.Recovery().Archive)
	}
	if c.svc.hash != hash {
		t.Errorf("restarted service hash %x, the crashed node's %x", c.svc.hash, hash)
	}
}
