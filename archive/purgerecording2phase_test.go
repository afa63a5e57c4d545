package archive

import (
	"errors"
	"testing"
)

// TestPurgeRecordingTwoPhase: a whole stopped recording goes in two phases (its
// entry DELETED, its files renamed and unlinked one per DeleteStep after
// the delay); an active one is refused; after a reopen the renamed files
// are scheduled again, and Verify accepts the archive.
func TestPurgeRecordingTwoPhase(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, fs, dir, removeOptions(1, clock.now))
	r, _ := recordTerms(t, a, 0, 5, nil)
	id := r.ID()
	if _, err := a.PurgeRecording(id); !errors.Is(err, ErrRecordingInUse) {
		t.Fatalf("delete of an active recording: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	n, err := a.PurgeRecording(id)
	if err != nil || n != 3 {
		t.Fatalf("delete recording: %d files, %v", n, err)
	}
	if _, err := a.Descriptor(id); err == nil {
		t.Fatal("the deleted recording is still VALID")
	}
	if exists(fs, dir, SegmentFileName(id, 0)) || !exists(fs, dir, SegmentFileName(id, 0)+DeletedSuffix) {
		t.Fatal("segment not renamed")
	}
	if exists(fs, dir, IndexFileName(id)) {
		t.Fatal("index left")
	}
	// Called again while its files wait, it has nothing left to rename.
	if k, err := a.PurgeRecording(id); k != 0 || err != nil {
		t.Fatalf("a second purge while files wait: %d %v", k, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openTest(t, fs, dir, removeOptions(1, clock.now))
	defer a.Close()
	if p := a.PendingDeletes(); len(p) != 3 {
		t.Fatalf("pending after reopen: %+v", p)
	}
	clock.ms += DefaultDeleteDelay.Milliseconds() + 1
	for i := 0; i < 3; i++ {
		if k, err := a.DeleteStep(); k != 1 || err != nil {
			t.Fatalf("step %d: %d %v", i, k, err)
		}
	}
	if ds, err := DeletedSegments(fs, dir); err != nil || len(ds) != 0 {
		t.Fatalf("left: %+v %v", ds, err)
	}
	// A crash between the catalog change and the renames leaves a DELETED
	// recording with files: called again, PurgeRecording renames them.
	r2, _ := recordTerms(t, a, 0, 1, nil)
	id2 := r2.ID()
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.cat.ChangeState(id2, StateDeleted); err != nil {
		t.Fatal(err)
	}
	if k, err := a.PurgeRecording(id2); k != 1 || err != nil || exists(fs, dir, SegmentFileName(id2, 0)) {
		t.Fatalf("finishing an interrupted delete: %d %v", k, err)
	}
	if k, err := a.PurgeRecording(id); k != 0 || err != nil {
		t.Fatalf("a finished delete again: %d %v", k, err)
	}
	vr, err := Verify(fs, dir, VerifyOptions{})
	if err != nil || !vr.OK() {
		t.Fatalf("verify: %+v %v", vr, err)
	}
}
