package recordinglog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Expected outputs, from the fixture's README.
const (
	fixtureRecordingLog = "[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744][SNAPSHOT rec2 svc-1 logPos 115744]"
	fixturePlan         = "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264, " +
		"committedLogPosition=115744, snapshots=[rec2 svc-1 @115744, rec1 svc0 @115744], " +
		"log=(recordingId 0, startPosition 115744, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)"
)

func openCatalog(t testing.TB, dir string) *archive.Catalog {
	t.Helper()
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, "archive"), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

func TestFixtureDecode(t *testing.T) {
	dir := fixtures.CopyAeronSingleNode(t)
	l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, "cluster"), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := l.FileEntries()
	want := []recordinglog.Entry{
		{RecordingID: 0, LeadershipTermID: 0, TermBaseLogPosition: 0, LogPosition: -1, ServiceID: -1, Type: recordinglog.TypeTerm, Valid: true, Index: 0, Offset: 0},
		{RecordingID: 1, LeadershipTermID: 0, TermBaseLogPosition: 0, LogPosition: 115744, ServiceID: 0, Type: recordinglog.TypeSnapshot, Valid: true, Index: 1, Offset: 64},
		{RecordingID: 2, LeadershipTermID: 0, TermBaseLogPosition: 0, LogPosition: 115744, ServiceID: -1, Type: recordinglog.TypeSnapshot, Valid: true, Index: 2, Offset: 128},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		w := want[i]
		w.Timestamp = got[i].Timestamp // checked below
		if got[i] != w {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
	// Timestamps are epoch ms (cluster time unit millis) taken during the
	// run: the term's, then both snapshots' (equal).
	if got[0].Timestamp != 0x1a229166430 || got[1].Timestamp != 0x1a229166596 || got[2].Timestamp != got[1].Timestamp {
		t.Errorf("timestamps %#x %#x %#x", got[0].Timestamp, got[1].Timestamp, got[2].Timestamp)
	}
	if s := recordinglog.Format(l.Entries()); s != fixtureRecordingLog {
		t.Errorf("Format:\n got %s\nwant %s", s, fixtureRecordingLog)
	}
	// Re-encoding gives the file back byte for byte.
	raw, err := os.ReadFile(filepath.Join(dir, "cluster", recordinglog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var enc []byte
	for _, e := range got {
		enc = recordinglog.AppendEntry(enc, e)
	}
	if string(enc) != string(raw) {
		t.Errorf("re-encoded fixture differs:\n%x\n%x", enc, raw)
	}
}

func TestFixtureRecoveryPlan(t *testing.T) {
	dir := fixtures.CopyAeronSingleNode(t)
	l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, "cluster"), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := l.CreateRecoveryPlan(openCatalog(t, dir), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.String(); s != fixturePlan {
		t.Errorf("plan:\n got %s\nwant %s", s, fixturePlan)
	}
	if err := p.Err(); err != nil {
		t.Errorf("plan has problems: %v", err)
	}
	if p.ReplayFrom != 115744 || p.ReplayTo != 231264 || p.Log.RecordingStartPosition != 0 || p.Log.SessionID != -1975790911 {
		t.Errorf("replay [%d, %d), want [115744, 231264); log %+v", p.ReplayFrom, p.ReplayTo, p.Log)
	}
}

// After invalidate-latest-snapshot the fixture has no valid snapshot set
// left, so the plan, like Aeron's, replays the whole log from the
// recording's start; the TERM is still open, so committed stays 0.
func TestFixtureInvalidateLatestSnapshot(t *testing.T) {
	dir := fixtures.CopyAeronSingleNode(t)
	cdir := filepath.Join(dir, "cluster")
	l, err := recordinglog.Open(vfs.Default, cdir, recordinglog.Options{SyncLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := l.InvalidateLatestSnapshot()
	if err != nil || !ok {
		t.Fatalf("InvalidateLatestSnapshot = %v, %v", ok, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cdir, recordinglog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(filepath.Join(fixtures.AeronSingleNode(t), "cluster", recordinglog.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// Only the type fields of entries 1 and 2 changed, to 0x80000001.
	for i := range raw {
		want := orig[i]
		switch i {
		case 64 + 44, 128 + 44:
			want = 0x01
		case 64 + 47, 128 + 47:
			want = 0x80
		}
		if raw[i] != want {
			t.Errorf("byte %d = %#x, want %#x", i, raw[i], want)
		}
	}

	l, err = recordinglog.Open(vfs.Default, cdir, recordinglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := "[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744 INVALID][SNAPSHOT rec2 svc-1 logPos 115744 INVALID]"
	if s := recordinglog.Format(l.Entries()); s != want {
		t.Errorf("after invalidation:\n got %s\nwant %s", s, want)
	}
	p, err := l.CreateRecoveryPlan(openCatalog(t, dir), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264, committedLogPosition=0, " +
		"snapshots=[], log=(recordingId 0, startPosition 0, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)"
	if s := p.String(); s != wantPlan || p.Err() != nil || p.ReplayFrom != 0 || p.ReplayTo != 231264 {
		t.Errorf("plan:\n got %s (%v, replay %d..%d)\nwant %s", s, p.Err(), p.ReplayFrom, p.ReplayTo, wantPlan)
	}
	// Nothing is left to invalidate.
	if ok, err := l.InvalidateLatestSnapshot(); ok || err != nil {
		t.Errorf("second InvalidateLatestSnapshot = %v, %v", ok, err)
	}
	// Taking the same snapshot again revalidates the entries in place.
	if err := l.AppendSnapshot(1, 0, 0, 115744, 7, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendSnapshot(2, 0, 0, 115744, 7, -1); err != nil {
		t.Fatal(err)
	}
	if s := recordinglog.Format(l.Entries()); s != fixtureRecordingLog || l.Size() != 192 {
		t.Errorf("after restore: %s, size %d", s, l.Size())
	}
}

// With two services the fixture's snapshot set is incomplete: the plan names
// the entry in service 1's place and refuses.
func TestFixturePlanTwoServices(t *testing.T) {
	dir := fixtures.CopyAeronSingleNode(t)
	l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, "cluster"), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := l.CreateRecoveryPlan(openCatalog(t, dir), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) != 1 || p.Problems[0].ServiceID != 1 || p.Problems[0].EntryIndex != 0 || p.Problems[0].Offset != 0 {
		t.Fatalf("problems %+v", p.Problems)
	}
	err = p.Err()
	if !errors.Is(err, recordinglog.ErrIncompleteSnapshot) || !strings.Contains(err.Error(), "service 1: entry #0 at offset 0: expected this service's SNAPSHOT here, found TERM") ||
		strings.Contains(err.Error(), "invalidate-latest-snapshot") {
		t.Errorf("Err = %v (the set is whole: a stock fall-back remedy does not apply)", err)
	}
	if n := l.SetServiceCount(); n != 1 {
		t.Errorf("SetServiceCount = %d, want 1", n)
	}
	if len(p.Snapshots) != 2 {
		t.Errorf("snapshots %v", p.Snapshots)
	}
}
