package enginesvc_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/internal/vfs"
)

// stoppedNode leaves a stopped node directory in a memory FS: a snapshot
// after the first 200 commands, then 200 more in the log. It returns the
// FS, the options to reopen it and the engine's state hash at the end.
func stoppedNode(t *testing.T) (vfs.FS, cluster.Options, uint64) {
	t.Helper()
	fsys := vfs.NewMem()
	h := newHarness(t, fsys, cluster.Pauseless, 1)
	h.mustOpen()
	cmds, hashes := stream(21, 400, true)
	if err := h.submit(cmds[:200]); err != nil {
		t.Fatal(err)
	}
	if err := cluster.TakeSnapshot(h.node, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.submit(cmds[200:]); err != nil {
		t.Fatal(err)
	}
	if got := h.svc.Engine().StateHash(); got != hashes[400] {
		t.Fatalf("state hash %016x, reference %016x", got, hashes[400])
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	opts := h.opts
	opts.Egress = nil
	skew := restarts.Add(int64(2 * cluster.DefaultMarkFileTimeout / time.Millisecond))
	opts.EpochClock = func() int64 { return time.Now().UnixMilli() + skew }
	return fsys, opts, hashes[400]
}

func TestSnapshotStopped(t *testing.T) {
	fsys, opts, want := stoppedNode(t)
	before, err := enginesvc.ReadSnapshot(fsys, testDir, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if before.StateHash == want || !before.Verified {
		t.Fatalf("the first snapshot: %+v (its hash must be the one after 200 commands, not %016x)", before, want)
	}
	res, err := enginesvc.SnapshotStopped(opts, enginesvc.Options{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if res.StateHash != want || res.Engine == nil || res.Engine.StateHash != want || !res.Engine.Verified {
		t.Fatalf("state hash %016x, engine %+v, want %016x verified", res.StateHash, res.Engine, want)
	}
	if len(res.RecordingIDs) != 2 || len(res.Added) < 2 || res.LogPosition <= before.LogPosition || res.Engine.LogPosition != res.LogPosition {
		t.Fatalf("result %+v, first snapshot at %d", res, before.LogPosition)
	}
	if res.Replayed == 0 {
		t.Errorf("the start replayed nothing, but 200 commands follow the first snapshot")
	}
	// The latest snapshot is now the new one; End alone gives the same.
	latest, err := enginesvc.ReadSnapshot(fsys, testDir, -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if latest.StateHash != want || latest.LogPosition != res.LogPosition || latest.Verified {
		t.Fatalf("latest snapshot %+v", latest)
	}
	// A node opened on the directory starts from it and replays nothing.
	svc := enginesvc.New(enginesvc.Options{})
	opts.Service = svc
	n, err := cluster.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if got := svc.Engine().StateHash(); got != want || n.Stats().Replayed != 0 {
		t.Fatalf("reopened: hash %016x (want %016x), replayed %d", got, want, n.Stats().Replayed)
	}
}

// A snapshot that cannot be recorded leaves the directory as it was.
func TestSnapshotStoppedFailureLeavesDirectory(t *testing.T) {
	fsys, opts, _ := stoppedNode(t)
	// Directories where the next recordings' first segments go.
	for id := range 16 {
		name := fmt.Sprintf("%s/archive/%d-0.rec", testDir, id)
		if _, err := fsys.Stat(name); err != nil {
			if err := fsys.MkdirAll(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := treeDigest(t, fsys)
	_, err := enginesvc.SnapshotStopped(opts, enginesvc.Options{}, time.Minute)
	if err == nil || errors.Is(err, cluster.ErrNotRestored) || !strings.Contains(err.Error(), "-0.rec") {
		t.Fatalf("SnapshotStopped: %v, want a failure naming the segment file", err)
	}
	after := treeDigest(t, fsys)
	if !maps.Equal(before, after) {
		for _, k := range slices.Sorted(maps.Keys(after)) {
			if before[k] != after[k] {
				t.Errorf("%s: %s -> %s", k, before[k], after[k])
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("%s removed", k)
			}
		}
	}
}

// treeDigest is the length and FNV-1a digest of every file of the node
// directory.
func treeDigest(t *testing.T, fsys vfs.FS) map[string]string {
	t.Helper()
	out, err := vfs.Digests(fsys, testDir+"/cluster", testDir+"/archive")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
