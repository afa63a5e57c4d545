package enginesvc_test

import (
	"bytes"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestDiskFullSnapshotWrite: a node already storage-full (refusing
// commands) takes a snapshot — snapshots are still sequenced, as they are
// what lets retention free the log — and the snapshot's write meets the
// full volume (ENOSPC on its first segment). The node stops: the
// snapshot's error (ENOSPC, naming the segment file) is what DoWork
// returns, then and at every later call; StorageErrors counts it; the log
// says "storage full" with the file and "node stopped". Nothing released
// is lost and the failed snapshot is not used: a restart once space is
// back (from the files as the process left them, and from what a crash
// would leave) has the state of the commands in the log, every released
// command among them and none of the refused ones, and takes commands
// again. Both snapshot modes: stop-the-world fails in the duty cycle,
// pauseless in its writer, whose failure the next duty cycle returns.
func TestDiskFullSnapshotWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode cluster.SnapshotMode
	}{{"stop-the-world", cluster.StopTheWorld}, {"pauseless", cluster.Pauseless}} {
		t.Run(tc.name, func(t *testing.T) {
			mem, fsys := volume()
			cmds := fresh(stream(13, 1200, false))
			h := newHarness(t, fsys, tc.mode, 1)
			h.opts.StorageCheckInterval = time.Nanosecond // every DoWork
			var logBuf bytes.Buffer
			h.opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
			ans := &answers{t: t, by: map[key]*answer{}}
			h.opts.Egress = ans.egress
			h.mustOpen()
			defer h.close()
			if err := h.submit(cmds[:600]); err != nil {
				t.Fatal(err)
			}
			h.node.RequestSnapshot()
			if err := snapshotDone(h, 1); err != nil {
				t.Fatal(err)
			}
			snapBytes := h.node.Stats().LastSnapshotBytes

			// The recorder prepares the log's next segment off the duty
			// cycle from half-way through the current one: let it finish,
			// so that the snapshot, not that preparation, meets the full
			// volume.
			prep := testDir + "/archive/0-131072.rec.prep"
			for deadline := time.Now().Add(10 * time.Second); ; {
				if size, err := mem.Stat(prep); err == nil && size == int64(h.opts.SegmentLength) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the next log segment %s is not prepared", prep)
				}
				if _, err := h.node.DoWork(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
			// Full: less free than a snapshot needs.
			mem.SetCapacity(used(mem) + snapBytes/4)
			if err := h.submit(cmds[600:650]); err != nil {
				t.Fatalf("commands while the volume is full: %v", err)
			}
			if !errors.Is(h.node.StorageFull(), cluster.ErrStorageFull) {
				t.Fatalf("StorageFull() = %v, want storage-full", h.node.StorageFull())
			}
			for i := 600; i < 650; i++ {
				if a := ans.by[key{cmds[i].Source, cmds[i].Seq}]; a == nil || !a.released || a.rejected != engine.RejStorageFull {
					t.Fatalf("command %d on the full node: answer %+v, want Rejected storage_full", i, a)
				}
			}

			// The snapshot meets ENOSPC: the node stops.
			h.node.RequestSnapshot()
			err := snapshotDone(h, 2)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "snapshot") || !strings.Contains(err.Error(), ".rec") {
				t.Fatalf("snapshot on the full volume: %v; want ENOSPC naming the snapshot and its segment file", err)
			}
			if _, again := h.node.DoWork(); !errors.Is(again, syscall.ENOSPC) {
				t.Fatalf("DoWork after the failed snapshot: %v, want the same error", again)
			}
			if st := h.node.Stats(); st.StorageErrors != 1 || st.Snapshots != 1 {
				t.Fatalf("stats: StorageErrors %d, Snapshots %d; want 1 and 1", st.StorageErrors, st.Snapshots)
			}
			if !strings.Contains(logBuf.String(), `msg="storage full" path=node/archive/`) || !strings.Contains(logBuf.String(), `effect="node stopped`) {
				t.Fatalf("no log line naming the file and the stop:\n%s", logBuf.String())
			}
			h.close()

			released := releasedOf(ans)
			clone := mem.CrashClone(vfs.CrashCloneConfig{})
			mem.SetCapacity(0)
			for what, fs := range map[string]*vfs.MemFS{"process restart": mem, "crash": clone} {
				checkRecovered(t, what, fs, tc.mode, 1, released)
				logged, err := logCommands(t, fs)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range logged {
					if a := ans.by[key{c.Source, c.Seq}]; a != nil && a.rejected == engine.RejStorageFull {
						t.Fatalf("%s: command %+v, refused for want of space, is in the log", what, key{c.Source, c.Seq})
					}
				}
			}
			// With space back the restarted node takes commands.
			h2 := newHarness(t, mem, tc.mode, 1)
			h2.mustOpen()
			defer h2.close()
			if err := h2.submit(cmds[650:700]); err != nil {
				t.Fatalf("restarted node: %v", err)
			}
			if h2.node.StorageFull() != nil {
				t.Fatalf("restarted node with space back: %v", h2.node.StorageFull())
			}
		})
	}
}

// releasedOf is the commands whose Release came, but for those refused
// for want of space (answered, and in no log).
func releasedOf(a *answers) map[key]bool {
	m := make(map[key]bool, len(a.by))
	for k, v := range a.by {
		if v.released && v.rejected != engine.RejStorageFull {
			m[k] = true
		}
	}
	return m
}

// snapshotDone runs the duty cycle until the node has taken n snapshots
// and none is in progress, or DoWork fails.
func snapshotDone(h *harness, n int64) error {
	for i := 0; i < 10_000_000; i++ {
		if _, err := h.node.DoWork(); err != nil {
			return err
		}
		if st := h.node.Stats(); st.Snapshots >= n && !st.SnapshotInProgress {
			return nil
		}
		runtime.Gosched()
	}
	return errors.New("the snapshot does not end")
}
