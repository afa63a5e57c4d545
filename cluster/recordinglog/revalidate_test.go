package recordinglog_test

import (
	"bytes"
	"testing"

	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Two snapshot sets invalidated one after the other come back in the
// reverse order, each revalidation restoring exactly the bytes its
// invalidation changed (the entry's original type), and the recovery plan
// follows.
func TestRevalidateUndoesInvalidate(t *testing.T) {
	fs := vfs.NewMem()
	l := mustCreate(t, fs, recordinglog.Options{SyncLevel: 1})
	if err := l.AppendTerm(0, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	for i, pos := range []int64{1000, 2000, 3000} {
		if err := l.AppendSnapshot(int64(2*i+1), 0, 0, pos, 10, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.AppendSnapshot(int64(2*i+2), 0, 0, pos, 10, -1); err != nil {
			t.Fatal(err)
		}
	}
	orig := readFile(t, fs, "/c/recording.log")
	latest := func() int64 {
		e, ok := l.LatestSnapshot(recordinglog.ConsensusModuleServiceID)
		if !ok {
			return -1
		}
		return e.LogPosition
	}
	var states [][]byte
	for _, want := range []int64{2000, 1000} {
		states = append(states, readFile(t, fs, "/c/recording.log"))
		if ok, err := l.InvalidateLatestSnapshot(); !ok || err != nil {
			t.Fatalf("invalidate: %v, %v", ok, err)
		}
		if got := latest(); got != want {
			t.Fatalf("after invalidate: latest snapshot at %d, want %d", got, want)
		}
	}
	for k, want := range []int64{2000, 3000} {
		done, err := l.RevalidateLatestInvalidatedSnapshot()
		if err != nil || len(done) != 2 || done[0].ServiceID != -1 || done[1].ServiceID != 0 || done[0].LogPosition != want {
			t.Fatalf("revalidate %d: %v, %v", k, done, err)
		}
		if got := latest(); got != want {
			t.Fatalf("after revalidate: latest snapshot at %d, want %d", got, want)
		}
		if got := readFile(t, fs, "/c/recording.log"); !bytes.Equal(got, states[len(states)-1-k]) {
			t.Fatalf("revalidate %d: file differs from before the matching invalidation", k)
		}
	}
	if got := readFile(t, fs, "/c/recording.log"); !bytes.Equal(got, orig) {
		t.Fatal("file differs from the original")
	}
	// Nothing left to revalidate: no change.
	if done, err := l.RevalidateLatestInvalidatedSnapshot(); len(done) != 0 || err != nil {
		t.Fatalf("nothing to revalidate: %v, %v", done, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A reopened log revalidates too (the state is in the file).
	l2, err := recordinglog.Open(fs, "/c", recordinglog.Options{SyncLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if ok, err := l2.InvalidateLatestSnapshot(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := l2.RevalidateEntry(99); err == nil {
		t.Fatal("unknown entry revalidated")
	}
	for _, e := range l2.Entries() {
		if !e.Valid {
			if err := l2.RevalidateEntry(e.Index); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := readFile(t, fs, "/c/recording.log"); !bytes.Equal(got, orig) {
		t.Fatal("RevalidateEntry did not restore the original bytes")
	}
}
