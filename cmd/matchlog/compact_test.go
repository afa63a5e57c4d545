package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// validEntryBytes maps each VALID recording id of the catalog in adir to
// its entry's bytes (header, descriptor, padding).
func validEntryBytes(t *testing.T, adir string) (map[int64][]byte, int64) {
	t.Helper()
	b, err := vfs.ReadFile(vfs.Default, filepath.Join(adir, archive.CatalogFileName))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := archive.OpenCatalogFile(vfs.Default, adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	out := map[int64][]byte{}
	es := cat.Entries()
	for i, e := range es {
		if e.State != archive.StateValid {
			continue
		}
		end := cat.EndOffset()
		if i+1 < len(es) {
			end = es[i+1].Offset
		}
		out[e.Descriptor.RecordingID] = b[e.Offset:end]
	}
	return out, cat.NextRecordingID()
}

// TestArchiveCompactAeronPurged: `matchlog archive compact` on real Aeron's
// member 0 after `matchlog retention purge` (the oldest generation,
// recordings 1 and 2, purged: DELETED in the catalog; their recording.log
// entries stay valid, as Aeron's purge leaves them) drops exactly those two catalog entries and their two
// recording.log entries, keeps every VALID catalog entry byte for byte and
// nextRecordingId, and leaves the recovery plan, the retention verdict and
// the retention plan as they were; a second run drops nothing. With
// AERON_CLASSPATH, real ArchiveTool and ClusterTool accept the result
// (TestAeronToolsAcceptCompaction).
func TestArchiveCompactAeronPurged(t *testing.T) {
	d := purgedAeronMember0(t)
	answers := func() []string {
		return []string{
			mustCLI(t, "cluster", "recovery-plan", "--json", "--dir", d),
			mustCLI(t, "retention", "verdict", "--json", "--member", "0="+d, "--live", archiveDir(d)),
			mustCLI(t, "retention", "plan", "--json", "--member", "0="+d, "--live", archiveDir(d)),
		}
	}
	before := answers()
	valid0, next0 := validEntryBytes(t, archiveDir(d))
	var res compactJSON
	out := mustCLI(t, "archive", "compact", "--json", "--dir", d)
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var catIDs, logIDs []int64
	for _, e := range res.Catalog.Dropped {
		if e.State != "DELETED" {
			t.Errorf("dropped a %s entry", e.State)
		}
		catIDs = append(catIDs, e.RecordingID)
	}
	if res.RecordingLog == nil {
		t.Fatalf("recording.log not compacted:\n%s", out)
	}
	for _, e := range res.RecordingLog.Dropped {
		if e.Type != "SNAPSHOT" || e.LogPosition >= 865568 { // the oldest kept set's position (FACTS.md)
			t.Errorf("dropped %+v", e)
		}
		logIDs = append(logIDs, e.RecordingID)
	}
	slices.Sort(logIDs)
	if !slices.Equal(catIDs, aeronPurgedRecordings) || !slices.Equal(logIDs, aeronPurgedRecordings) ||
		res.RecordingLog.Kept != aeronMember0Record-2 || res.Catalog.Kept != aeronMember0Record-2 {
		t.Fatalf("dropped catalog %v, recording.log %v (kept %d, %d); want %v from both:\n%s", catIDs, logIDs,
			res.Catalog.Kept, res.RecordingLog.Kept, aeronPurgedRecordings, out)
	}
	valid1, next1 := validEntryBytes(t, archiveDir(d))
	if next1 != next0 || len(valid1) != len(valid0) {
		t.Fatalf("nextRecordingId %d -> %d, VALID entries %d -> %d", next0, next1, len(valid0), len(valid1))
	}
	for id, b := range valid0 {
		if !bytes.Equal(valid1[id], b) {
			t.Errorf("VALID entry of recording %d changed", id)
		}
	}
	after := answers()
	for i, what := range []string{"cluster recovery-plan", "retention verdict", "retention plan"} {
		if after[i] != before[i] {
			t.Errorf("%s changed by the compaction:\nbefore\n%s\nafter\n%s", what, before[i], after[i])
		}
	}
	mustCLI(t, "archive", "verify", "--all", "--dir", d)
	out = mustCLI(t, "archive", "compact", "--dir", d)
	if !strings.Contains(out, "recording.log: dropped 0 entries") || !strings.Contains(out, "catalog: dropped 0 entries") {
		t.Errorf("second compaction:\n%s", out)
	}
}
