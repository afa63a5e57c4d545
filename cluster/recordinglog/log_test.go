package recordinglog_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

func mustCreate(t testing.TB, fs vfs.FS, opts recordinglog.Options) *recordinglog.Log {
	t.Helper()
	if err := fs.MkdirAll("/c"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	l, err := recordinglog.Create(fs, "/c", opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readFile(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Size()
	b := make([]byte, n)
	if n > 0 {
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func writeFile(t testing.TB, fs vfs.FS, name string, b []byte) {
	t.Helper()
	_ = fs.MkdirAll("/c")
	_ = fs.Remove(name)
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 {
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// fields decodes the entry at off field by field, independently of the
// package.
type fields struct {
	rec, term, base, pos, ts int64
	svc, typ                 int32
}

func fieldsAt(b []byte, off int) fields {
	le := binary.LittleEndian
	return fields{
		rec: int64(le.Uint64(b[off:])), term: int64(le.Uint64(b[off+8:])), base: int64(le.Uint64(b[off+16:])),
		pos: int64(le.Uint64(b[off+24:])), ts: int64(le.Uint64(b[off+32:])),
		svc: int32(le.Uint32(b[off+40:])), typ: int32(le.Uint32(b[off+44:])),
	}
}

const path = "/c/" + recordinglog.FileName

// A node's life: term 0, a snapshot set for two services, term 1 (which
// commits term 0), a commit of term 1, an invalidation. The file must hold
// exactly the bytes Aeron would write, and a reopen must give back the same
// entries.
func TestRoundTrip(t *testing.T) {
	for _, level := range []int{0, 1, 2} {
		fs := vfs.NewMem()
		l := mustCreate(t, fs, recordinglog.Options{SyncLevel: archive.SyncLevel(level)})
		steps := []func() error{
			func() error { return l.AppendTerm(5, 0, 0, 1000) },
			func() error { return l.AppendSnapshot(6, 0, 0, 4096, 1100, 1) },
			func() error { return l.AppendSnapshot(7, 0, 0, 4096, 1100, 0) },
			func() error { return l.AppendSnapshot(8, 0, 0, 4096, 1100, -1) },
			func() error { return l.AppendTerm(5, 1, 8192, 1200) },
			func() error { return l.CommitLogPosition(1, 9000) },
			func() error { return l.AppendStandbySnapshot(9, 1, 8192, 8500, 1300, -1, "host:8010") },
			func() error { return l.InvalidateEntry(1) },
		}
		for i, s := range steps {
			if err := s(); err != nil {
				t.Fatalf("level %d step %d: %v", level, i, err)
			}
		}
		b := readFile(t, fs, path)
		if len(b) != 6*64 {
			t.Fatalf("file is %d bytes, want %d", len(b), 6*64)
		}
		want := []fields{
			{5, 0, 0, 8192, 1000, -1, 0}, // committed by term 1's append
			{6, 0, 0, 4096, 1100, 1, int32(-0x80000000 + 1)},
			{7, 0, 0, 4096, 1100, 0, 1},
			{8, 0, 0, 4096, 1100, -1, 1},
			{5, 1, 8192, 9000, 1200, -1, 0},
			{9, 1, 8192, 8500, 1300, -1, 2},
		}
		for i, w := range want {
			if got := fieldsAt(b, 64*i); got != w {
				t.Errorf("level %d entry %d: %+v, want %+v", level, i, got, w)
			}
			end := 64 * (i + 1)
			if i < 5 && strings.Trim(string(b[64*i+48:end]), "\x00") != "" {
				t.Errorf("entry %d: bytes 48..63 not zero: %x", i, b[64*i+48:end])
			}
		}
		// The standby entry: endpoint length and text at 48, then zeros to 128.
		if n := binary.LittleEndian.Uint32(b[5*64+48:]); n != 9 || string(b[5*64+52:5*64+61]) != "host:8010" ||
			strings.Trim(string(b[5*64+61:6*64]), "\x00") != "" {
			t.Errorf("standby entry bytes %x", b[5*64:])
		}
		before := l.Entries()
		wantFmt := "[TERM rec5 term0 base0 logPos 8192][SNAPSHOT rec6 svc1 logPos 4096 INVALID][SNAPSHOT rec7 svc0 logPos 4096]" +
			"[SNAPSHOT rec8 svc-1 logPos 4096][TERM rec5 term1 base8192 logPos 9000][STANDBY_SNAPSHOT rec9 svc-1 logPos 8500 endpoint host:8010]"
		if s := recordinglog.Format(before); s != wantFmt {
			t.Errorf("Format:\n got %s\nwant %s", s, wantFmt)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := recordinglog.Open(fs, "/c", recordinglog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		after := l2.Entries()
		if len(after) != len(before) {
			t.Fatalf("reopen: %d entries, want %d", len(after), len(before))
		}
		for i := range before {
			if before[i] != after[i] {
				t.Errorf("reopen entry %d: %+v, want %+v", i, after[i], before[i])
			}
		}
		if l2.NextEntryIndex() != 6 || l2.Size() != 6*64 {
			t.Errorf("reopen: next index %d, size %d", l2.NextEntryIndex(), l2.Size())
		}
		if e, ok := l2.LatestSnapshot(0); !ok || e.RecordingID != 7 {
			t.Errorf("LatestSnapshot(0) = %v %v", e, ok)
		}
		if _, ok := l2.LatestSnapshot(1); ok {
			t.Errorf("LatestSnapshot(1) found an invalid entry")
		}
		if e, ok := l2.FindLastTerm(); !ok || e.LeadershipTermID != 1 {
			t.Errorf("FindLastTerm = %v %v", e, ok)
		}
		_ = l2.Close()
	}
}

func TestAppendRules(t *testing.T) {
	fs := vfs.NewMem()
	l := mustCreate(t, fs, recordinglog.Options{})
	defer l.Close()
	for _, c := range []struct {
		err  error
		want string
	}{
		{l.AppendTerm(-1, 0, 0, 0), "recordinglog: invalid recordingId=-1"},
		{l.AppendSnapshot(-1, 0, 0, 0, 0, 0), "recordinglog: invalid recordingId=-1"},
		{l.CommitLogPosition(0, 5), "recordinglog: unknown leadershipTermId=0"},
		{l.AppendTerm(3, 0, 0, 0), ""},
		{l.AppendTerm(3, 0, 0, 0), "recordinglog: duplicate TERM entry for leadershipTermId=0"},
		{l.AppendTerm(4, 1, 0, 0), "recordinglog: invalid TERM recordingId=4, expected recordingId=3"},
		{l.InvalidateEntry(9), "recordinglog: unknown entry index 9"},
		{l.AppendStandbySnapshot(1, 0, 0, 0, 0, 0, ""), "recordinglog: standby snapshot endpoint length 0 outside [1, 4044]"},
		// A term appended out of order takes the next term's base as its
		// log position.
		{l.AppendTerm(3, 2, 500, 0), ""},
		{l.AppendTerm(3, 1, 100, 0), ""},
	} {
		got := ""
		if c.err != nil {
			got = c.err.Error()
		}
		if got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	want := "[TERM rec3 term0 base0 logPos 100][TERM rec3 term1 base100 logPos 500][TERM rec3 term2 base500 logPos -1]"
	if s := recordinglog.Format(l.Entries()); s != want {
		t.Errorf("got %s\nwant %s", s, want)
	}
	// Invalidating a TERM frees its term id.
	if err := l.InvalidateEntry(2); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.TermEntry(1); ok {
		t.Error("invalid TERM still found")
	}
	if err := l.AppendTerm(3, 1, 100, 0); err != nil {
		t.Error(err)
	}
}

func TestReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	l := mustCreate(t, fs, recordinglog.Options{})
	if err := l.AppendTerm(0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if err := l.AppendTerm(0, 1, 0, 0); !errors.Is(err, recordinglog.ErrClosed) {
		t.Errorf("append after close: %v", err)
	}
	r, err := recordinglog.Open(fs, "/c", recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.AppendTerm(0, 1, 0, 0); !errors.Is(err, recordinglog.ErrReadOnly) {
		t.Errorf("append read-only: %v", err)
	}
	if _, err := recordinglog.Open(fs, "/nope", recordinglog.Options{}); !errors.Is(err, vfs.ErrNotExist) ||
		!strings.HasPrefix(err.Error(), "recordinglog: ") {
		t.Errorf("open missing: %v", err)
	}
}

func entryBytes(e recordinglog.Entry) []byte { return recordinglog.AppendEntry(nil, e) }

var (
	termEntry = recordinglog.Entry{RecordingID: 0, LogPosition: -1, ServiceID: -1, Type: recordinglog.TypeTerm, Valid: true}
	snapEntry = recordinglog.Entry{RecordingID: 1, LogPosition: 64, ServiceID: -1, Type: recordinglog.TypeSnapshot, Valid: true}
)

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// Damaged files are errors naming the offset; a torn tail is told apart
// from damage before the end, and only a torn tail is repaired.
func TestDamagedFiles(t *testing.T) {
	two := cat(entryBytes(termEntry), entryBytes(snapEntry))
	badType := entryBytes(snapEntry)
	binary.LittleEndian.PutUint32(badType[44:], 7)
	otherTerm := termEntry
	otherTerm.RecordingID = 9
	removed := entryBytes(snapEntry)
	binary.LittleEndian.PutUint32(removed[44:], 0xffffffff)
	badStandby := entryBytes(recordinglog.Entry{Type: recordinglog.TypeStandbySnapshot, ArchiveEndpoint: "x", Valid: true})
	binary.LittleEndian.PutUint32(badStandby[48:], 5000)
	garbage := []byte(strings.Repeat("\xde\xad\xbe\xef", 32))

	for _, c := range []struct {
		name    string
		file    []byte
		torn    bool
		offset  int64
		msg     string
		entries int // after repair (torn only)
	}{
		{"truncated entry", two[:64+40], true, 64, "partial entry: 40 of at least 64 bytes", 1},
		{"truncated entry past header", two[:64+50], true, 64, "partial entry: 50 of 64 bytes", 1},
		{"zero tail", cat(two, make([]byte, 64)), true, 128, "64 zero bytes up to the end", 2},
		{"zero partial tail", cat(two, make([]byte, 10)), true, 128, "10 zero bytes", 2},
		{"bad type", cat(entryBytes(termEntry), badType), false, 64, "unknown entry type 7", 0},
		{"bad type invalid flag", cat(badType[:44], []byte{7, 0, 0, 0x80}, badType[48:]), false, 0, "unknown entry type 7 (field 0x80000007)", 0},
		{"zeroed entry in the middle", cat(entryBytes(termEntry), make([]byte, 64), entryBytes(snapEntry)), false, 64, "zeroed entry followed by more data", 0},
		{"TERM with a serviceId", entryBytes(recordinglog.Entry{LogPosition: -1, Type: recordinglog.TypeTerm, Valid: true}), false, 0, "TERM entry with serviceId 0", 0},
		{"two TERM recordings", cat(entryBytes(termEntry), entryBytes(otherTerm)), false, 64, "TERM entry of recording 9", 0},
		{"garbage", garbage, false, 0, "unknown entry type", 0},
		{"bad endpoint length", badStandby, false, 0, "endpoint length 5000 outside", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := recordinglog.Decode(c.file)
			var ce *recordinglog.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, recordinglog.ErrCorrupt) || ce.Offset != c.offset ||
				ce.Torn != c.torn || errors.Is(err, recordinglog.ErrTornTail) != c.torn || !strings.Contains(err.Error(), c.msg) ||
				!strings.HasPrefix(err.Error(), "recordinglog: ") {
				t.Fatalf("Decode: %v (%+v), want offset %d torn %v %q", err, ce, c.offset, c.torn, c.msg)
			}
			fs := vfs.NewMem()
			writeFile(t, fs, path, c.file)
			if _, err := recordinglog.Open(fs, "/c", recordinglog.Options{}); !errors.Is(err, recordinglog.ErrCorrupt) ||
				!strings.Contains(err.Error(), "offset") {
				t.Fatalf("Open: %v", err)
			}
			l, err := recordinglog.Open(fs, "/c", recordinglog.Options{Repair: true})
			if !c.torn {
				if err == nil {
					t.Fatal("Repair accepted damage before the end")
				}
				if got := readFile(t, fs, path); string(got) != string(c.file) {
					t.Error("a failed repair changed the file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			r := l.Repaired()
			if r == nil || r.Offset != c.offset || r.Dropped != int64(len(c.file))-c.offset || len(l.Entries()) != c.entries {
				t.Fatalf("repair %+v, %d entries", r, len(l.Entries()))
			}
			if got := readFile(t, fs, path); string(got) != string(c.file[:c.offset]) {
				t.Errorf("file after repair is %d bytes, want %d", len(got), c.offset)
			}
			// Appends go on after the repaired end.
			if err := l.AppendSnapshot(3, 0, 0, 64, 0, 0); err != nil {
				t.Fatal(err)
			}
			if l.Size() != c.offset+64 {
				t.Errorf("size after append %d", l.Size())
			}
		})
	}

	// A removed entry (type -1) is skipped but counted.
	es, err := recordinglog.Decode(cat(entryBytes(termEntry), removed, entryBytes(snapEntry)))
	if err != nil || len(es) != 2 || es[1].Index != 2 || es[1].Offset != 128 {
		t.Errorf("removed entry: %v %v", es, err)
	}
	// Empty files are fine.
	if es, err := recordinglog.Decode(nil); err != nil || len(es) != 0 {
		t.Errorf("empty: %v %v", es, err)
	}
}
