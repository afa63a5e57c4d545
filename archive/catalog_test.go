package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	ac "github.com/lirm/aeron-go/archive/codecs"
)

// fixtureCatalog returns the fixture's catalog bytes and decoded entries.
func fixtureCatalog(t testing.TB) ([]byte, []CatalogEntry) {
	t.Helper()
	dir := copyFixture(t)
	b := readFile(t, filepath.Join(dir, CatalogFileName))
	c, err := OpenCatalog(&memFile{b: bytes.Clone(b), name: "fixture"}, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return b, c.Entries()
}

func newRecordingFrom(d RecordingDescriptor) NewRecording {
	return NewRecording{
		StartPosition:     d.StartPosition,
		StopPosition:      NullPosition,
		StartTimestamp:    d.StartTimestamp,
		StopTimestamp:     NullTimestamp,
		InitialTermID:     d.InitialTermID,
		SegmentFileLength: d.SegmentFileLength,
		TermBufferLength:  d.TermBufferLength,
		MTULength:         d.MTULength,
		SessionID:         d.SessionID,
		StreamID:          d.StreamID,
		StrippedChannel:   d.StrippedChannel,
		OriginalChannel:   d.OriginalChannel,
		SourceIdentity:    d.SourceIdentity,
	}
}

// TestCatalogReproducesFixture writes the fixture's three recordings the way
// the Java archive did (add with null stop, then recordingStopped) and
// compares the whole file byte for byte with the one Aeron wrote.
func TestCatalogReproducesFixture(t *testing.T) {
	want, entries := fixtureCatalog(t)
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		f := &memFile{name: "new"}
		c, err := CreateCatalog(f, CatalogOptions{Capacity: int64(len(want)), SyncLevel: SyncLevel(level)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			id, err := c.AddRecording(newRecordingFrom(e.Descriptor))
			if err != nil || id != e.Descriptor.RecordingID {
				t.Fatalf("add: id %d, %v", id, err)
			}
		}
		for _, e := range entries {
			if err := c.RecordingStopped(e.Descriptor.RecordingID, e.Descriptor.StopPosition, e.Descriptor.StopTimestamp); err != nil {
				t.Fatal(err)
			}
		}
		if i := firstDiff(f.b, want); i >= 0 {
			t.Fatalf("level %d: differs from Aeron's catalog at offset %d: %x vs %x", level, i, f.b[i:min(i+16, len(f.b))], want[i:min(i+16, len(want))])
		}
	})
}

// TestCatalogAgainstAeronGo decodes a catalog we wrote with lirm/aeron-go's
// archive codecs and compares every field.
func TestCatalogAgainstAeronGo(t *testing.T) {
	f := &memFile{name: "cat"}
	c, err := CreateCatalog(f, CatalogOptions{Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var want []NewRecording
	for i := range 40 { // enough to grow 4096 -> 6144 -> ... several times
		r := NewRecording{
			StartPosition:     int64(i) * 4096,
			StopPosition:      NullPosition,
			StartTimestamp:    1_700_000_000_000 + int64(i),
			StopTimestamp:     NullTimestamp,
			InitialTermID:     int32(i*7919 - 3),
			SegmentFileLength: 128 << 20,
			TermBufferLength:  64 << 10 << (i % 4),
			MTULength:         1408,
			SessionID:         int32(-i * 31),
			StreamID:          int32(100 + i),
			StrippedChannel:   "aeron:udp?endpoint=localhost:" + fmt.Sprint(20000+i),
			OriginalChannel:   "aeron:udp?endpoint=localhost:" + fmt.Sprint(20000+i) + "|term-length=65536" + strings.Repeat("x", i),
			SourceIdentity:    strings.Repeat("s", i%5),
		}
		want = append(want, r)
		if _, err := c.AddRecording(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ExtendRecording(3, 77, 88, 99); err != nil {
		t.Fatal(err)
	}
	want[3].SessionID = 99
	if err := c.RecordingStopped(5, 5*4096+320, 1_800_000_000_000); err != nil {
		t.Fatal(err)
	}
	want[5].StopPosition, want[5].StopTimestamp = 5*4096+320, 1_800_000_000_000
	if err := c.UpdateStartPosition(6, 8192); err != nil {
		t.Fatal(err)
	}
	want[6].StartPosition = 8192

	// Capacity grew by x1.5 steps from 4096 and the tail is zero.
	wantCap := int64(4096)
	for wantCap < c.EndOffset() {
		wantCap += wantCap >> 1
	}
	if int64(len(f.b)) != wantCap || c.Capacity() != wantCap {
		t.Fatalf("capacity %d (file %d), want %d", c.Capacity(), len(f.b), wantCap)
	}
	if !allZero(f.b[c.EndOffset():]) {
		t.Fatal("space after the last entry is not zero")
	}

	m := ac.NewSbeGoMarshaller()
	var ch ac.CatalogHeader
	if err := ch.Decode(m, bytes.NewReader(f.b[:32]), ch.SbeSchemaVersion(), 32, true); err != nil {
		t.Fatal(err)
	}
	if ch.Version != 0x030100 || ch.Length != 32 || ch.NextRecordingId != 40 || ch.Alignment != 64 {
		t.Fatalf("aeron-go catalog header: %+v", ch)
	}
	off := int64(32)
	for i, w := range want {
		var h ac.RecordingDescriptorHeader
		if err := h.Decode(m, bytes.NewReader(f.b[off:off+32]), h.SbeSchemaVersion(), 32, true); err != nil {
			t.Fatal(err)
		}
		frame := RecordingDescriptorFrameLength(64, w.StrippedChannel, w.OriginalChannel, w.SourceIdentity)
		if int64(h.Length) != frame-32 || h.State != ac.RecordingState.VALID || h.Checksum != 0 {
			t.Fatalf("entry %d header: %+v", i, h)
		}
		var d ac.RecordingDescriptor
		if err := d.Decode(m, bytes.NewReader(f.b[off+32:off+frame]), d.SbeSchemaVersion(), 80, true); err != nil {
			t.Fatal(err)
		}
		csid, corr := int64(0), int64(0)
		if i == 3 {
			csid, corr = 77, 88
		}
		if d.RecordingId != int64(i) || d.ControlSessionId != csid || d.CorrelationId != corr ||
			d.StartPosition != w.StartPosition || d.StopPosition != w.StopPosition ||
			d.StartTimestamp != w.StartTimestamp || d.StopTimestamp != w.StopTimestamp ||
			d.InitialTermId != w.InitialTermID || d.SegmentFileLength != w.SegmentFileLength ||
			d.TermBufferLength != w.TermBufferLength || d.MtuLength != w.MTULength ||
			d.SessionId != w.SessionID || d.StreamId != w.StreamID ||
			string(d.StrippedChannel) != w.StrippedChannel || string(d.OriginalChannel) != w.OriginalChannel ||
			string(d.SourceIdentity) != w.SourceIdentity {
			t.Fatalf("entry %d: aeron-go decoded %+v, want %+v", i, d, w)
		}
		off += frame
	}
	if off != c.EndOffset() {
		t.Fatalf("entries end at %d, catalog says %d", off, c.EndOffset())
	}

	// Round trip: reopen and compare with our own decoder.
	c2, err := OpenCatalog(&memFile{b: bytes.Clone(f.b), name: "re"}, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c2.NextRecordingID() != 40 || c2.EndOffset() != c.EndOffset() || c2.CountValid() != 40 {
		t.Fatalf("reopened: next %d end %d valid %d", c2.NextRecordingID(), c2.EndOffset(), c2.CountValid())
	}
	for i := range want {
		a, err1 := c.Descriptor(int64(i))
		b, err2 := c2.Descriptor(int64(i))
		if err1 != nil || err2 != nil || a != b {
			t.Fatalf("recording %d: %+v vs %+v (%v, %v)", i, a, b, err1, err2)
		}
	}
}

func TestCatalogStateAndIndex(t *testing.T) {
	f := &memFile{name: "cat"}
	c, err := CreateCatalog(f, CatalogOptions{Capacity: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.AddRecording(NewRecording{StopPosition: NullPosition, StopTimestamp: NullTimestamp, SegmentFileLength: 65536, TermBufferLength: 65536, MTULength: 1408}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ChangeState(1, StateDeleted); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Descriptor(1); !errors.Is(err, ErrRecordingNotFound) {
		t.Fatalf("deleted recording found: %v", err)
	}
	if e, err := c.Entry(1); err != nil || e.State != StateDeleted {
		t.Fatalf("Entry(1) = %+v, %v", e, err)
	}
	if got := len(c.Recordings()); got != 2 || c.CountValid() != 2 || len(c.Entries()) != 3 {
		t.Fatalf("recordings %d valid %d entries %d", got, c.CountValid(), len(c.Entries()))
	}
	// Only the state int changed.
	if s := binary.LittleEndian.Uint32(f.b[32+128+4:]); s != 2 {
		t.Fatalf("state on disk %d", s)
	}
	c2, err := OpenCatalog(&memFile{b: bytes.Clone(f.b), name: "re"}, CatalogOptions{})
	if err != nil || c2.CountValid() != 2 || c2.NextRecordingID() != 3 {
		t.Fatalf("reopen: %v", err)
	}
	if err := c.ChangeState(1, StateValid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Descriptor(1); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateStopPosition(7, 0); !errors.Is(err, ErrRecordingNotFound) {
		t.Fatalf("update of unknown id: %v", err)
	}
	ro, err := OpenCatalog(&memFile{b: bytes.Clone(f.b), name: "ro"}, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.AddRecording(NewRecording{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only add: %v", err)
	}
	if err := ro.UpdateStopTimestamp(0, 1); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only update: %v", err)
	}
	if _, err := c.AddRecording(NewRecording{StrippedChannel: "caf\xc3\xa9"}); err == nil {
		t.Fatal("non-ASCII channel accepted")
	}
	c.Close()
	if err := c.UpdateStopPosition(0, 0); err == nil {
		t.Fatal("update after close")
	}
}

// Catalog with nextRecordingId 0: Aeron sets it from the last entry.
func TestCatalogNextRecordingIDRules(t *testing.T) {
	b, _ := fixtureCatalog(t)
	z := bytes.Clone(b)
	binary.LittleEndian.PutUint64(z[8:], 0)
	c, err := OpenCatalog(&memFile{b: z, name: "z"}, CatalogOptions{})
	if err != nil || c.NextRecordingID() != 3 {
		t.Fatalf("next 0: %v %d", err, c.NextRecordingID())
	}
	low := bytes.Clone(b)
	binary.LittleEndian.PutUint64(low[8:], 2)
	if _, err := OpenCatalog(&memFile{b: low, name: "low"}, CatalogOptions{}); err == nil || !strings.Contains(err.Error(), "nextRecordingId") {
		t.Fatalf("next 2 writable: %v", err)
	}
	if c, err := OpenCatalog(&memFile{b: low, name: "low"}, CatalogOptions{ReadOnly: true}); err != nil || c.NextRecordingID() != 2 {
		t.Fatalf("next 2 read-only: %v", err)
	}
	high := bytes.Clone(b)
	binary.LittleEndian.PutUint64(high[8:], 10)
	c, err = OpenCatalog(&memFile{b: high, name: "high"}, CatalogOptions{})
	if err != nil || c.NextRecordingID() != 10 {
		t.Fatal(err)
	}
	if id, err := c.AddRecording(NewRecording{}); err != nil || id != 10 {
		t.Fatalf("add: %d %v", id, err)
	}
}

// A legacy catalog (alignment 0): entries start at 1024 and are 1024-aligned.
func TestCatalogLegacy(t *testing.T) {
	_, entries := fixtureCatalog(t)
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint32(b[0:], uint32(SemanticVersion))
	binary.LittleEndian.PutUint32(b[4:], 32)
	binary.LittleEndian.PutUint64(b[8:], 12345) // ignored in legacy catalogs
	// Build entries with a modern catalog and move them to 1024-aligned slots.
	mf := &memFile{name: "m"}
	mc, _ := CreateCatalog(mf, CatalogOptions{Capacity: 4096})
	for _, e := range entries {
		mc.AddRecording(newRecordingFrom(e.Descriptor))
	}
	for i := range 2 {
		src := mf.b[32+256*i : 32+256*(i+1)]
		dst := b[1024*(i+1):]
		copy(dst, src)
		binary.LittleEndian.PutUint32(dst[0:], 1024-32)
	}
	c, err := OpenCatalog(&memFile{b: b, name: "legacy"}, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Legacy() || c.Alignment() != 1024 || c.NextRecordingID() != 2 || c.EndOffset() != 3072 || c.CountValid() != 2 {
		t.Fatalf("legacy: alignment %d next %d end %d valid %d", c.Alignment(), c.NextRecordingID(), c.EndOffset(), c.CountValid())
	}
	d, err := c.Descriptor(1)
	if err != nil || d.StreamID != 106 {
		t.Fatalf("%+v %v", d, err)
	}
	w, err := OpenCatalog(&memFile{b: bytes.Clone(b), name: "legacy"}, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddRecording(NewRecording{}); err == nil {
		t.Fatal("added to a legacy catalog")
	}
}

// TestCatalogDamaged: every kind of damage gives an error naming the problem
// and satisfying errors.Is(err, ErrCorrupt).
func TestCatalogDamaged(t *testing.T) {
	good, _ := fixtureCatalog(t)
	put32 := func(b []byte, off int, v int32) []byte { binary.LittleEndian.PutUint32(b[off:], uint32(v)); return b }
	put64 := func(b []byte, off int, v int64) []byte { binary.LittleEndian.PutUint64(b[off:], uint64(v)); return b }
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than the 32-byte header"},
		{"short header", good[:31], "shorter than the 32-byte header"},
		{"bad major version", put32(bytes.Clone(good), 0, 2<<16), "incompatible version 2.0.0"},
		{"version 4", put32(bytes.Clone(good), 0, 4<<16|1), "incompatible version 4.0.1"},
		{"zero version", put32(bytes.Clone(good), 0, 0), "version 0: the header was never written"},
		{"bad alignment", put32(bytes.Clone(good), 16, 48), "alignment 48"},
		{"negative alignment", put32(bytes.Clone(good), 16, -64), "alignment -64"},
		{"truncated in entry 3", good[:32+2*256+100], "offset 544: entry length 224 (aligned 256) runs past the end"},
		{"truncated in entry 1 header", good[:32+20], "offset 32: entry header cut off"},
		{"length past end", put32(bytes.Clone(good), 544, 1<<30), "offset 544: entry length 1073741824"},
		{"length max int", put32(bytes.Clone(good), 544, 0x7fffffff), "runs past the end"},
		{"length too short", put32(bytes.Clone(good), 288, 64), "offset 288: entry length 64 is shorter"},
		{"same id", put64(bytes.Clone(good), 288+32+16, 0), "offset 288: VALID recording id 0 does not increase (previous VALID id 0)"},
		{"decreasing id", put64(bytes.Clone(good), 544+32+16, 1), "offset 544: VALID recording id 1 does not increase"},
		{"negative id", put64(bytes.Clone(good), 32+32+16, -5), "offset 32: VALID entry has negative recording id -5"},
		{"string past entry", put32(bytes.Clone(good), 32+32+80, 300), "offset 32: recording 0: strippedChannel string"},
		{"string past entry 3", put32(bytes.Clone(good), 544+32+80+4+47, 200), "offset 544: recording 2: originalChannel"},
	}
	for _, tc := range cases {
		_, err := OpenCatalog(&memFile{b: tc.b, name: "bad"}, CatalogOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "archive: ") || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// Non-increasing ids are fine when the entry is not VALID (Aeron indexes
	// only VALID ones).
	b := put64(bytes.Clone(good), 288+32+16, 0)
	put32(b, 288+4, int32(StateDeleted))
	if c, err := OpenCatalog(&memFile{b: b, name: "ok"}, CatalogOptions{}); err != nil || c.CountValid() != 2 {
		t.Fatalf("deleted duplicate: %v", err)
	}
	// A zero or negative length ends the scan (Aeron's rule).
	b = put32(bytes.Clone(good), 288, -1)
	if c, err := OpenCatalog(&memFile{b: b, name: "ok"}, CatalogOptions{ReadOnly: true}); err != nil || len(c.Entries()) != 1 || c.EndOffset() != 288 {
		t.Fatalf("negative length: %v", err)
	}
}

func TestCatalogOpenExtendsCapacity(t *testing.T) {
	good, _ := fixtureCatalog(t)
	f := &memFile{b: bytes.Clone(good), name: "c"}
	c, err := OpenCatalog(f, CatalogOptions{Capacity: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.b) != 1<<20 || c.Capacity() != 1<<20 || firstDiff(f.b[:len(good)], good) >= 0 || !allZero(f.b[len(good):]) {
		t.Fatalf("capacity %d", len(f.b))
	}
	if _, err := CreateCatalog(f, CatalogOptions{}); err == nil {
		t.Fatal("CreateCatalog over a non-empty file")
	}
	if _, err := CreateCatalog(&memFile{}, CatalogOptions{Capacity: 16}); err == nil {
		t.Fatal("capacity 16 accepted")
	}
}

func TestCatalogOnDisk(t *testing.T) {
	dir := t.TempDir()
	c, err := CreateCatalogFile(osFS{}, dir, CatalogOptions{SyncLevel: 2})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.AddRecording(NewRecording{StartPosition: 64, StopPosition: NullPosition, StopTimestamp: NullTimestamp, SegmentFileLength: 1 << 17, TermBufferLength: 1 << 16, MTULength: 1408, StreamID: 5, StrippedChannel: "aeron:ipc", OriginalChannel: "aeron:ipc", SourceIdentity: "aeron:ipc"})
	if err != nil || id != 0 {
		t.Fatal(id, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, filepath.Join(dir, CatalogFileName))
	if len(b) != DefaultCatalogCapacity {
		t.Fatalf("file length %d", len(b))
	}
	c, err = OpenCatalogFile(osFS{}, dir, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d, err := c.Descriptor(0); err != nil || d.StartPosition != 64 || d.StreamID != 5 {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := CreateCatalogFile(osFS{}, dir, CatalogOptions{}); err == nil {
		t.Fatal("created over an existing catalog")
	}
}

// failFile fails its failAt-th WriteAt (counting from 1).
type failFile struct {
	memFile
	writes, failAt int
}

func (f *failFile) WriteAt(p []byte, off int64) (int, error) {
	f.writes++
	if f.writes == f.failAt {
		return 0, errors.New("injected write failure")
	}
	return f.memFile.WriteAt(p, off)
}

// TestCatalogCrashDuringAdd fails each write of AddRecording in turn: the
// catalog reopens with either no new entry or the whole entry, and a later
// AddRecording over the stale bytes of a half-written one leaves a catalog
// that opens.
func TestCatalogCrashDuringAdd(t *testing.T) {
	long := NewRecording{StopPosition: NullPosition, StrippedChannel: strings.Repeat("a", 300), OriginalChannel: strings.Repeat("b", 300), SourceIdentity: "src"}
	for failAt := 2; failAt <= 5; failAt++ { // write 1 is CreateCatalog's header
		f := &failFile{memFile: memFile{name: "crash"}, failAt: failAt}
		c, err := CreateCatalog(f, CatalogOptions{Capacity: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddRecording(NewRecording{}); err != nil { // writes 2..4 unless failing
			if failAt > 4 {
				t.Fatal(err)
			}
		}
		if failAt <= 4 {
			if _, err := c.AddRecording(NewRecording{}); err == nil {
				t.Fatalf("failAt %d: catalog usable after a failed write", failAt)
			}
		}
		c2, err := OpenCatalog(&memFile{b: bytes.Clone(f.b), name: "re"}, CatalogOptions{})
		if err != nil {
			t.Fatalf("failAt %d: reopen: %v", failAt, err)
		}
		want := 1
		if failAt <= 3 { // body or header write failed: no entry
			want = 0
		}
		if len(c2.Entries()) != want {
			t.Fatalf("failAt %d: %d entries", failAt, len(c2.Entries()))
		}
	}
	// Body written, header not: stale bytes after the end.
	f := &failFile{memFile: memFile{name: "stale"}, failAt: 3}
	c, _ := CreateCatalog(f, CatalogOptions{Capacity: 4096})
	c.AddRecording(long)
	c2, err := OpenCatalog(&memFile{b: bytes.Clone(f.b), name: "re"}, CatalogOptions{})
	if err != nil || len(c2.Entries()) != 0 || c2.NextRecordingID() != 0 {
		t.Fatalf("reopen: %v", err)
	}
	mf := c2.f.(*memFile)
	if allZero(mf.b[32:]) {
		t.Fatal("no stale bytes to test with")
	}
	if _, err := c2.AddRecording(NewRecording{StrippedChannel: "short"}); err != nil {
		t.Fatal(err)
	}
	if !allZero(mf.b[c2.EndOffset():]) {
		t.Fatal("stale bytes left after the new entry")
	}
	if c3, err := OpenCatalog(&memFile{b: bytes.Clone(mf.b), name: "re"}, CatalogOptions{}); err != nil || len(c3.Entries()) != 1 {
		t.Fatalf("reopen after add: %v", err)
	}
}
