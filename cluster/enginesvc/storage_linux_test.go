//go:build linux

package enginesvc_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// tmpfsVolume mounts a tmpfs of size bytes on a temporary directory and
// unmounts it when the test ends; it skips the test, saying why, where
// the process may not mount (not root, or no CAP_SYS_ADMIN).
func tmpfsVolume(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a tmpfs volume for the full-disk test (%v): run as root (CAP_SYS_ADMIN) to run it; the memory FS tests cover the same paths", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestDiskFullTmpfs runs the node on a real, small volume (tmpfs): a
// filler file takes most of it; with the gate the node becomes
// storage-full and refuses commands, and resumes when the filler is
// deleted; with the gate off a write fails with ENOSPC, the node stops,
// and once the filler is gone a restart recovers every acknowledged
// command.
func TestDiskFullTmpfs(t *testing.T) {
	for _, gate := range []bool{true, false} {
		vol := tmpfsVolume(t, 4<<20)
		filler := filepath.Join(vol, "filler")
		cmds := fresh(stream(31, 6000, false))
		h := newHarness(t, vfs.Default, cluster.StopTheWorld, 1)
		h.opts.Dir = filepath.Join(vol, "node")
		h.opts.SegmentLength = 256 * 1024
		h.opts.StorageCheckInterval = time.Nanosecond
		if !gate {
			h.opts.StorageReserve = -1
		}
		refused := 0
		refusedKeys := map[key]bool{} // answered storage_full: never applied
		h.opts.Egress = func(_ int64, msg []byte) {
			var ev engine.Event
			if wire.EventKind(msg) == engine.EvRejected && wire.DecodeEvent(msg, &ev) == nil && ev.Reason == engine.RejStorageFull {
				refused++
				refusedKeys[key{ev.Source, ev.Seq}] = true
			}
			if wire.EventKind(msg) == engine.EvRelease {
				src, seq, _ := wire.DecodeRelease(msg)
				h.released[key{src, seq}] = true
			}
		}
		h.mustOpen()
		if err := h.submit(cmds[:100]); err != nil {
			t.Fatal(err)
		}
		var st unix.Statfs_t
		if err := unix.Statfs(vol, &st); err != nil {
			t.Fatal(err)
		}
		// Leave a segment and a half (256 KiB segments) free.
		free := int64(st.Bavail) * int64(st.Bsize)
		if err := os.WriteFile(filler, make([]byte, free-3*int64(h.opts.SegmentLength)/2), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		sent := 100
		for sent < len(cmds) && err == nil && refused == 0 {
			err = h.submit(cmds[sent:min(sent+25, len(cmds))])
			sent += 25
		}
		if gate {
			if err != nil || refused == 0 || h.node.StorageFull() == nil {
				t.Fatalf("gate: err %v, refused %d, full %v after %d commands", err, refused, h.node.StorageFull(), sent)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			before := refused
			if err := h.submit(cmds[sent:min(sent+25, len(cmds))]); err != nil {
				t.Fatal(err)
			}
			if refused != before || h.node.StorageFull() != nil {
				t.Fatalf("still refusing with the filler deleted: %v", h.node.StorageFull())
			}
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("gate off: error %v after %d commands, want ENOSPC", err, sent)
			}
			h.node.Close()
			h.node = nil
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
		// A restart recovers the durable log, with every acknowledged command.
		r := newHarness(t, vfs.Default, cluster.StopTheWorld, 1)
		r.opts.Dir, r.opts.SegmentLength = h.opts.Dir, h.opts.SegmentLength
		r.mustOpen()
		hash := r.svc.Engine().StateHash()
		if err := r.close(); err != nil {
			t.Fatal(err)
		}
		var logged []engine.Command
		inLog := map[key]bool{}
		if err := cluster.ScanLog(vfs.Default, h.opts.Dir, func(e *cluster.LogEntry) error {
			var c engine.Command
			if e.Template == 1 && wire.DecodeCommand(e.Payload, &c) == nil {
				logged = append(logged, c)
				inLog[key{c.Source, c.Seq}] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if m := modelHash(logged); m != hash {
			t.Fatalf("gate %v: restarted hash %x, model of the %d logged commands %x", gate, hash, len(logged), m)
		}
		for k := range h.released {
			if inLog[k] == refusedKeys[k] {
				t.Fatalf("gate %v: %+v answered (refused: %v), in the log: %v", gate, k, refusedKeys[k], inLog[k])
			}
		}
		t.Logf("gate %v: %d commands sent, %d refused, %d in the log, error %v", gate, sent, refused, len(logged), err)
	}
}
