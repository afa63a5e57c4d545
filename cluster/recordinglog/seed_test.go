package recordinglog_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// SeedEntries walks back from the last valid consensus-module snapshot
// while each entry is the next service's valid snapshot, as
// ClusterToolOperator.seedRecordingLogFromSnapshot does.
func TestSeedEntries(t *testing.T) {
	snap := func(rec, term, pos, ts int64, svc int32, valid bool) recordinglog.Entry {
		return recordinglog.Entry{RecordingID: rec, LeadershipTermID: term, TermBaseLogPosition: 64, LogPosition: pos, Timestamp: ts,
			ServiceID: svc, Type: recordinglog.TypeSnapshot, Valid: valid}
	}
	term := recordinglog.Entry{RecordingID: 0, LeadershipTermID: 1, TermBaseLogPosition: 64, LogPosition: -1, ServiceID: -1, Type: recordinglog.TypeTerm, Valid: true}
	for _, c := range []struct {
		name    string
		entries []recordinglog.Entry
		want    []int64 // recording ids, file order; nil: none
	}{
		{"two services", []recordinglog.Entry{term, snap(1, 1, 100, 5, 1, true), snap(2, 1, 100, 5, 0, true), snap(3, 1, 100, 5, -1, true)}, []int64{1, 2, 3}},
		{"latest CM invalid: the one before", []recordinglog.Entry{term, snap(1, 1, 100, 5, 0, true), snap(2, 1, 100, 5, -1, true),
			snap(3, 1, 200, 6, 0, true), snap(4, 1, 200, 6, -1, false)}, []int64{1, 2}},
		{"a gap stops the walk", []recordinglog.Entry{term, snap(1, 1, 100, 5, 1, true), snap(3, 1, 100, 5, -1, true)}, []int64{3}},
		{"an invalid service snapshot stops it", []recordinglog.Entry{term, snap(1, 1, 100, 5, 1, true), snap(2, 1, 100, 5, 0, false), snap(3, 1, 100, 5, -1, true)}, []int64{3}},
		{"no CM snapshot", []recordinglog.Entry{term, snap(1, 1, 100, 5, 0, true)}, nil},
	} {
		got, ok := recordinglog.SeedEntries(c.entries)
		if ok != (c.want != nil) || len(got) != len(c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, ok, got, c.want)
			continue
		}
		for i, e := range got {
			if e.RecordingID != c.want[i] || e.TermBaseLogPosition != 0 || e.LogPosition != 0 || !e.Valid || e.Type != recordinglog.TypeSnapshot ||
				e.LeadershipTermID != 1 || e.Index != i || e.Offset != int64(64*i) {
				t.Errorf("%s: entry %d = %+v", c.name, i, e)
			}
		}
	}
}

// SeedFromSnapshot refuses, changing nothing, a log with no valid
// consensus-module snapshot and a directory holding a backup or the
// temporary file already; it writes the backup, byte for byte, and the
// seeded entries otherwise.
func TestSeedFromSnapshot(t *testing.T) {
	fs := vfs.NewMem()
	l := mustCreate(t, fs, recordinglog.Options{SyncLevel: 1})
	if err := l.AppendTerm(0, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendSnapshot(1, 0, 0, 4096, 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := recordinglog.SeedFromSnapshot(fs, "/c"); !errors.Is(err, recordinglog.ErrNoSnapshotToSeed) {
		t.Fatalf("no CM snapshot: %v", err)
	}
	if err := l.AppendSnapshot(2, 0, 0, 4096, 2, -1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	old := readFile(t, fs, "/c/recording.log")
	for _, name := range []string{"recording.log.bak", "recording.log.tmp"} {
		f, err := fs.Create("/c/" + name)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		before, _ := vfs.Digests(fs, "/c")
		if _, err := recordinglog.SeedFromSnapshot(fs, "/c"); !errors.Is(err, recordinglog.ErrBackupExists) {
			t.Fatalf("%s there: %v", name, err)
		}
		if after, _ := vfs.Digests(fs, "/c"); len(after) != len(before) || after["/c/recording.log"] != before["/c/recording.log"] {
			t.Fatalf("%s there: the directory changed: %v -> %v", name, before, after)
		}
		if err := fs.Remove("/c/" + name); err != nil {
			t.Fatal(err)
		}
	}
	s, err := recordinglog.SeedFromSnapshot(fs, "/c")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, fs, "/c/recording.log.bak"), old) || len(s.New) != 2 || len(s.Old) != 3 {
		t.Fatalf("seeded %+v", s)
	}
	got, err := recordinglog.Decode(readFile(t, fs, "/c/recording.log"))
	if err != nil || len(got) != 2 || got[0].RecordingID != 1 || got[1].RecordingID != 2 || got[1].LogPosition != 0 {
		t.Fatalf("new file: %v %v", got, err)
	}
	if _, err := fs.Stat("/c/recording.log.tmp"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("recording.log.tmp left: %v", err)
	}
}
