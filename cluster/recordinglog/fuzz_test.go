package recordinglog_test

import (
	"errors"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// fakeRecordings knows every recording id in [0, 100).
type fakeRecordings struct{}

func (fakeRecordings) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	if id < 0 || id >= 100 {
		return archive.RecordingDescriptor{}, archive.ErrRecordingNotFound
	}
	return archive.RecordingDescriptor{RecordingID: id, StartPosition: 0, StopPosition: 1 << 20,
		TermBufferLength: 65536, MTULength: 1408}, nil
}

// FuzzRecordingLog feeds arbitrary files to Decode and Open and, when they
// open, runs the plan, the renderers and every update on them. Nothing may
// panic, and a file this package has written to must decode cleanly.
func FuzzRecordingLog(f *testing.F) {
	var seed []byte
	for _, e := range []recordinglog.Entry{termEntry, snapEntry,
		{RecordingID: 2, LogPosition: 64, ServiceID: 0, Type: recordinglog.TypeSnapshot},
		{RecordingID: 3, LeadershipTermID: 1, LogPosition: 99, ServiceID: -1, Type: recordinglog.TypeStandbySnapshot, ArchiveEndpoint: "h:1", Valid: true},
	} {
		seed = recordinglog.AppendEntry(seed, e)
	}
	f.Add(seed)
	f.Add(seed[:100])
	f.Add(append(seed, make([]byte, 64)...))
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := recordinglog.Decode(b)
		if err != nil && !errors.Is(err, recordinglog.ErrCorrupt) {
			t.Fatalf("Decode error not ErrCorrupt: %v", err)
		}
		if err == nil {
			// Re-encoding and decoding again gives the same entries.
			var enc []byte
			for _, e := range entries {
				enc = recordinglog.AppendEntry(enc, e)
			}
			again, err := recordinglog.Decode(enc)
			if err != nil || len(again) != len(entries) {
				t.Fatalf("re-encoded entries do not decode: %v", err)
			}
			for i := range again {
				a, e := again[i], entries[i]
				a.Index, a.Offset, e.Index, e.Offset = 0, 0, 0, 0
				if a != e {
					t.Fatalf("entry %d: %+v after re-encoding, was %+v", i, a, e)
				}
			}
		}

		mem := vfs.NewMem()
		writeFile(t, mem, path, b)
		l, err := recordinglog.Open(mem, "/c", recordinglog.Options{Repair: true})
		if err != nil {
			return
		}
		sorted := l.Entries()
		_ = recordinglog.Format(sorted)
		if _, err := recordinglog.MarshalJSON(sorted); err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 3; n++ {
			if p, err := l.CreateRecoveryPlan(fakeRecordings{}, n); err == nil {
				_ = p.String()
				_ = p.Err()
			}
		}
		rec := int64(0)
		if last, ok := l.FindLastTerm(); ok {
			rec = last.RecordingID
		}
		for _, e := range sorted {
			_ = l.CommitLogPosition(e.LeadershipTermID, e.LogPosition+1)
			_ = l.AppendTerm(rec, e.LeadershipTermID+1, e.LogPosition, 0)
			_ = l.AppendSnapshot(1, e.LeadershipTermID, e.TermBaseLogPosition, e.LogPosition, 0, e.ServiceID)
		}
		_, _ = l.InvalidateLatestSnapshot()
		_ = l.InvalidateEntry(0)
		_ = l.AppendStandbySnapshot(5, 0, 0, 0, 0, -1, "endpoint")
		want := entriesState(l.FileEntries())
		_ = l.Close()
		l2, err := recordinglog.Open(mem, "/c", recordinglog.Options{})
		if err != nil {
			t.Fatalf("reopen after updates: %v", err)
		}
		if got := entriesState(l2.FileEntries()); got != want {
			t.Fatalf("reopened\n%s\nwant\n%s", got, want)
		}
		_ = l2.Close()
	})
}
