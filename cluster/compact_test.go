package cluster_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// metadata counts the entries of the catalog and recording.log of a
// stopped node directory, and returns the catalog's nextRecordingId.
func metadata(t *testing.T, dir string) (catalog, deleted, rlog int, next int64) {
	t.Helper()
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, cluster.ArchiveDirName), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	c := cat.Counts()
	next = cat.NextRecordingID()
	cat.Close()
	l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return c.Total(), c.Deleted, len(l.Entries()), next
}

// TestRetentionCompacts: a node whose automatic retention deletes a
// snapshot generation every snapshot (64 KiB segments, a snapshot every
// 64 KiB of log, two generations kept), restarted every few batches (a new
// TERM each time), compacts its catalog and recording.log by itself: both
// stay bounded (at most 2 × CompactMinEntries beyond the live entries),
// each compaction is logged with what it dropped and counted in Stats,
// recording ids are never reused, and every restart recovers the state
// hash the node had when it stopped.
func TestRetentionCompacts(t *testing.T) {
	dir := t.TempDir()
	ro := cluster.RetentionOptions{Keep: 2, MaxBytes: 512 << 10, CheckInterval: 10 * time.Millisecond, DeleteDelay: -1}
	var logBuf bytes.Buffer
	var total cluster.Stats
	var hash uint64
	maxCatalog, maxLog := 0, 0
	lastNext := int64(-1)
	for round := 0; round < 40 && (total.CatalogCompactions < 2 || total.RecordingLogCompactions < 2); round++ {
		r := openRetNode(t, dir, cluster.Options{SnapshotEveryBytes: 64 << 10, Retention: ro,
			Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
		if round > 0 {
			if got := r.svc.Engine().StateHash(); got != hash {
				t.Fatalf("round %d: restart to state hash %x, want %x", round, got, hash)
			}
		}
		for range 12 {
			r.batch(200)
		}
		st := r.n.Stats()
		total.CatalogCompactions += st.CatalogCompactions
		total.CatalogEntriesDropped += st.CatalogEntriesDropped
		total.RecordingLogCompactions += st.RecordingLogCompactions
		total.RecordingLogEntriesDropped += st.RecordingLogEntriesDropped
		total.RetentionSnapshotsDeleted += st.RetentionSnapshotsDeleted
		total.RetentionErrors += st.RetentionErrors
		hash = r.svc.Engine().StateHash()
		if err := r.n.Close(); err != nil {
			t.Fatal(err)
		}
		c, _, l, next := metadata(t, dir)
		maxCatalog, maxLog = max(maxCatalog, c), max(maxLog, l)
		if next < lastNext {
			t.Fatalf("round %d: nextRecordingId went back from %d to %d", round, lastNext, next)
		}
		lastNext = next
	}
	c, deleted, l, next := metadata(t, dir)
	t.Logf("%d generations deleted; catalog compacted %d times (%d entries dropped), recording.log %d times (%d dropped); "+
		"now %d catalog entries (%d DELETED), %d recording.log entries, at most %d and %d; nextRecordingId %d; retention errors %d",
		total.RetentionSnapshotsDeleted, total.CatalogCompactions, total.CatalogEntriesDropped, total.RecordingLogCompactions,
		total.RecordingLogEntriesDropped, c, deleted, l, maxCatalog, maxLog, next, total.RetentionErrors)
	if total.CatalogCompactions < 2 || total.RecordingLogCompactions < 2 {
		t.Fatalf("compactions: catalog %d, recording.log %d; want at least 2 each", total.CatalogCompactions, total.RecordingLogCompactions)
	}
	if total.RetentionErrors != 0 {
		t.Errorf("%d retention errors:\n%s", total.RetentionErrors, logBuf.String())
	}
	// Live: the log and two generations of two recordings (and perhaps a
	// snapshot in progress); everything else is bounded by the threshold.
	if bound := 2*cluster.CompactMinEntries + 8; maxCatalog > bound || maxLog > bound {
		t.Errorf("catalog reached %d entries, recording.log %d: over %d", maxCatalog, maxLog, bound)
	}
	if int64(c) >= next {
		t.Errorf("catalog has %d entries and nextRecordingId %d: ids of dropped entries would be reused", c, next)
	}
	// The log lines.
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msg, _ := rec["msg"].(string)
		if msg != "catalog compacted" && msg != "recording.log compacted" {
			continue
		}
		seen[msg]++
		for _, k := range []string{"file", "entries_dropped", "entries_kept", "bytes_before", "bytes_after", "took"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("%s: no %s in %s", msg, k, line)
			}
		}
		if d, _ := rec["entries_dropped"].(float64); d < cluster.CompactMinEntries {
			t.Errorf("%s dropped %v entries, fewer than the threshold %d", msg, d, cluster.CompactMinEntries)
		}
	}
	if int64(seen["catalog compacted"]) != total.CatalogCompactions || int64(seen["recording.log compacted"]) != total.RecordingLogCompactions {
		t.Errorf("log lines %v, counted catalog %d, recording.log %d", seen, total.CatalogCompactions, total.RecordingLogCompactions)
	}
	// The compacted directory passes the archive's verify and restarts.
	rep, err := archive.Verify(vfs.Default, filepath.Join(dir, cluster.ArchiveDirName), archive.VerifyOptions{AllSegments: true})
	if err != nil || !rep.OK() || len(rep.UnknownSegments) > 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.Engine().StateHash(); got != hash {
		t.Errorf("final restart: state hash %x, want %x", got, hash)
	}
	n.Close()
}
