package recordinglog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// oneRecording is a catalog holding only recording 0, the log, over
// [start, stop].
type oneRecording struct{ start, stop int64 }

func (o oneRecording) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	if id != 0 {
		return archive.RecordingDescriptor{}, archive.ErrRecordingNotFound
	}
	return archive.RecordingDescriptor{RecordingID: 0, StartPosition: o.start, StopPosition: o.stop,
		InitialTermID: 5, TermBufferLength: 1 << 16, MTULength: 1408, SessionID: 42}, nil
}

func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// snapshotSet appends a set for two services the way Aeron takes one:
// services first, the consensus module last.
func snapshotSet(l *recordinglog.Log, firstRec, term, base, pos int64) []error {
	return []error{
		l.AppendSnapshot(firstRec, term, base, pos, pos, 0),
		l.AppendSnapshot(firstRec+1, term, base, pos, pos, 1),
		l.AppendSnapshot(firstRec+2, term, base, pos, pos, -1),
	}
}

func TestPlanFallsBackOnlyAfterInvalidation(t *testing.T) {
	l := mustCreate(t, vfs.NewMem(), recordinglog.Options{})
	defer l.Close()
	mustDo(t, l.AppendTerm(0, 0, 0, 0))
	mustDo(t, snapshotSet(l, 10, 0, 0, 100)...)
	mustDo(t, snapshotSet(l, 20, 0, 0, 200)...)
	recs := oneRecording{0, 300}

	p, err := l.CreateRecoveryPlan(recs, 2)
	if err != nil || p.Err() != nil {
		t.Fatal(err, p.Err())
	}
	want := "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=300, committedLogPosition=200, " +
		"snapshots=[rec22 svc-1 @200, rec20 svc0 @200, rec21 svc1 @200], log=(recordingId 0, startPosition 200, stopPosition 300, " +
		"initialTermId 5, termBufferLength 65536, mtuLength 1408)"
	if p.String() != want {
		t.Errorf("plan\n%s\nwant\n%s", p, want)
	}

	// Service 1's entry of the latest set goes invalid (entry index 5): the
	// plan names it and refuses, and does not fall back by itself.
	mustDo(t, l.InvalidateEntry(5))
	p, err = l.CreateRecoveryPlan(recs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Problems) != 1 || p.Problems[0].ServiceID != 1 || p.Problems[0].EntryIndex != 5 || p.Problems[0].Offset != 320 ||
		!errors.Is(p.Err(), recordinglog.ErrIncompleteSnapshot) ||
		!strings.Contains(p.Err().Error(), "service 1: entry #5 at offset 320: the snapshot (recording 21) is marked invalid") {
		t.Fatalf("problems %+v, err %v", p.Problems, p.Err())
	}
	if len(p.Snapshots) != 2 || p.Snapshots[0].RecordingID != 22 {
		t.Errorf("snapshots %+v", p.Snapshots)
	}

	// invalidate-latest-snapshot: the consensus module's and service 0's
	// entries go (the walk stops at the already invalid one), and the
	// plan takes the previous set.
	ok, err := l.InvalidateLatestSnapshot()
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	wantLog := "[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec11 svc1 logPos 100][SNAPSHOT rec10 svc0 logPos 100][SNAPSHOT rec12 svc-1 logPos 100]" +
		"[SNAPSHOT rec21 svc1 logPos 200 INVALID][SNAPSHOT rec20 svc0 logPos 200 INVALID][SNAPSHOT rec22 svc-1 logPos 200 INVALID]"
	if s := recordinglog.Format(l.Entries()); s != wantLog {
		t.Errorf("log\n%s\nwant\n%s", s, wantLog)
	}
	p, err = l.CreateRecoveryPlan(recs, 2)
	if err != nil || p.Err() != nil || p.ReplayFrom != 100 || p.ReplayTo != 300 || p.CommittedLogPosition != 100 ||
		len(p.Snapshots) != 3 || p.Snapshots[2].RecordingID != 11 {
		t.Fatalf("fallback plan %v (%v, %v)", p, err, p.Err())
	}
}

// A crash in the middle of a snapshot leaves service entries without the
// consensus module's: the previous complete set is still the latest.
func TestPlanIgnoresOrphanServiceSnapshots(t *testing.T) {
	l := mustCreate(t, vfs.NewMem(), recordinglog.Options{})
	defer l.Close()
	mustDo(t, l.AppendTerm(0, 0, 0, 0))
	mustDo(t, snapshotSet(l, 10, 0, 0, 100)...)
	mustDo(t, l.AppendSnapshot(30, 0, 0, 250, 0, 0))
	p, err := l.CreateRecoveryPlan(oneRecording{0, 300}, 2)
	if err != nil || p.Err() != nil || p.Snapshots[0].RecordingID != 12 || p.ReplayFrom != 100 {
		t.Fatalf("plan %v (%v %v)", p, err, p.Err())
	}
}

func TestPlanEdgeCases(t *testing.T) {
	// No entries: no snapshot, no log.
	p, err := recordinglog.PlanRecovery(nil, oneRecording{}, 1)
	if err != nil || p.String() != "lastLeadershipTermId=-1, lastTermBaseLogPosition=0, appendedLogPosition=0, committedLogPosition=0, snapshots=[], log=null" {
		t.Errorf("empty plan %v %v", p, err)
	}
	if _, err := recordinglog.PlanRecovery(nil, oneRecording{}, -1); err == nil {
		t.Error("negative service count accepted")
	}

	l := mustCreate(t, vfs.NewMem(), recordinglog.Options{})
	defer l.Close()
	// A snapshot without a TERM: InvalidateLatestSnapshot refuses, as Aeron.
	mustDo(t, l.AppendSnapshot(3, 4, 0, 64, 0, -1))
	if _, err := l.InvalidateLatestSnapshot(); err == nil || !strings.Contains(err.Error(), "no matching term for snapshot: leadershipTermId=4") {
		t.Errorf("InvalidateLatestSnapshot without term: %v", err)
	}
	// With no service snapshot before it at all.
	p, err = l.CreateRecoveryPlan(oneRecording{}, 1)
	if err != nil || len(p.Problems) != 1 || p.Problems[0].EntryIndex != -1 ||
		!strings.Contains(p.Err().Error(), "service 0: no entry before the consensus-module snapshot (entry #0)") {
		t.Errorf("plan %v %v", p, err)
	}
	// A log recording that starts after the snapshot cannot be replayed
	// from it.
	mustDo(t, l.AppendTerm(0, 4, 0, 0))
	p, err = l.CreateRecoveryPlan(oneRecording{start: 128, stop: 512}, 0)
	if err != nil || len(p.Problems) != 1 || !strings.Contains(p.Problems[0].Reason, "snapshot position 64 is outside log recording 0 [128, 512]") {
		t.Errorf("plan %v %+v %v", p, p.Problems, err)
	}
	// An unknown log recording is an error.
	if _, err := l.CreateRecoveryPlan(fakeRecordingsNone{}, 0); err == nil || !strings.Contains(err.Error(), "recordinglog: unknown recording id: 0") {
		t.Errorf("unknown recording: %v", err)
	}
}

type fakeRecordingsNone struct{}

func (fakeRecordingsNone) Descriptor(int64) (archive.RecordingDescriptor, error) {
	return archive.RecordingDescriptor{}, archive.ErrRecordingNotFound
}

// Entries written out of Aeron's order are sorted on load: by term, base,
// type (snapshots last), position, descending service id.
func TestSortOrder(t *testing.T) {
	fs := vfs.NewMem()
	var b []byte
	for _, e := range []recordinglog.Entry{
		{RecordingID: 9, LeadershipTermID: 1, TermBaseLogPosition: 10, LogPosition: 20, ServiceID: -1, Type: recordinglog.TypeSnapshot, Valid: true},
		{RecordingID: 8, LeadershipTermID: 1, TermBaseLogPosition: 10, LogPosition: 20, ServiceID: 0, Type: recordinglog.TypeSnapshot, Valid: true},
		{RecordingID: 0, LeadershipTermID: 1, TermBaseLogPosition: 10, LogPosition: -1, ServiceID: -1, Type: recordinglog.TypeTerm, Valid: true},
		{RecordingID: 7, LeadershipTermID: 1, TermBaseLogPosition: 10, LogPosition: 15, ServiceID: 3, Type: recordinglog.TypeSnapshot, Valid: true},
		{RecordingID: 6, LeadershipTermID: 1, TermBaseLogPosition: 10, LogPosition: 15, ServiceID: -1, Type: recordinglog.TypeStandbySnapshot, ArchiveEndpoint: "a:1", Valid: true},
		{RecordingID: 0, LeadershipTermID: 0, TermBaseLogPosition: 0, LogPosition: 10, ServiceID: -1, Type: recordinglog.TypeTerm, Valid: true},
	} {
		b = recordinglog.AppendEntry(b, e)
	}
	writeFile(t, fs, path, b)
	l, err := recordinglog.Open(fs, "/c", recordinglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := "[TERM rec0 term0 base0 logPos 10][TERM rec0 term1 base10 logPos -1][STANDBY_SNAPSHOT rec6 svc-1 logPos 15 endpoint a:1]" +
		"[SNAPSHOT rec7 svc3 logPos 15][SNAPSHOT rec8 svc0 logPos 20][SNAPSHOT rec9 svc-1 logPos 20]"
	if s := recordinglog.Format(l.Entries()); s != want {
		t.Errorf("sorted\n%s\nwant\n%s", s, want)
	}
}
