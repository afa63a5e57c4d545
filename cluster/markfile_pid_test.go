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
