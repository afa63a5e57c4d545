package archive

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// The fixture: a stopped single-node Aeron Cluster (Aeron 1.48.0-SNAPSHOT),
// see shared/fixtures/aeron/README.md beside the repository.

type fixtureRec struct {
	id                   int64
	start, stop          int64
	initialTermID        int32
	stream               int32
	files                []string
	strippedChannelStart string
}

var fixtureRecs = []fixtureRec{
	{id: 0, start: 0, stop: 231264, initialTermID: 0, stream: 100, files: []string{"0-0.rec", "0-131072.rec"}, strippedChannelStart: "aeron:udp?"},
	{id: 1, start: 0, stop: 352, initialTermID: -1, stream: 106, files: []string{"1-0.rec"}, strippedChannelStart: "aeron:ipc?"},
	{id: 2, start: 0, stop: 480, initialTermID: -1, stream: 107, files: []string{"2-0.rec"}, strippedChannelStart: "aeron:ipc?"},
}

func TestFixtureCatalog(t *testing.T) {
	dir := copyFixture(t)
	c, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Version() != 0x030100 || c.Alignment() != 64 || c.NextRecordingID() != 3 || c.Capacity() != 65536 || c.Legacy() {
		t.Fatalf("header: version %#x alignment %d next %d capacity %d legacy %v",
			c.Version(), c.Alignment(), c.NextRecordingID(), c.Capacity(), c.Legacy())
	}
	if c.EndOffset() != 32+3*256 || c.CountValid() != 3 {
		t.Fatalf("end offset %d, valid %d", c.EndOffset(), c.CountValid())
	}
	entries := c.Entries()
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	for i, want := range fixtureRecs {
		e := entries[i]
		d := e.Descriptor
		t.Logf("entry %d at %d: length %d state %v checksum %d %+v", i, e.Offset, e.Length, e.State, e.Checksum, d)
		if e.Offset != int64(32+256*i) || e.Length != 224 || e.State != StateValid || e.Checksum != 0 {
			t.Errorf("entry %d header: offset %d length %d state %v checksum %d", i, e.Offset, e.Length, e.State, e.Checksum)
		}
		if d.RecordingID != want.id || d.StartPosition != want.start || d.StopPosition != want.stop ||
			d.TermBufferLength != 65536 || d.SegmentFileLength != 131072 || d.MTULength != 1408 ||
			d.StreamID != want.stream || d.ControlSessionID != 0 || d.CorrelationID != 0 {
			t.Errorf("entry %d: %+v", i, d)
		}
		if want.initialTermID != -1 && d.InitialTermID != want.initialTermID {
			t.Errorf("entry %d: initial term id %d", i, d.InitialTermID)
		}
		if d.StartTimestamp <= 0 || d.StopTimestamp < d.StartTimestamp {
			t.Errorf("entry %d: timestamps %d..%d", i, d.StartTimestamp, d.StopTimestamp)
		}
		if len(d.StrippedChannel) < 10 || d.StrippedChannel[:10] != want.strippedChannelStart || d.SourceIdentity != "aeron:ipc" {
			t.Errorf("entry %d: channels %q %q %q", i, d.StrippedChannel, d.OriginalChannel, d.SourceIdentity)
		}
		if got := RecordingDescriptorFrameLength(64, d.StrippedChannel, d.OriginalChannel, d.SourceIdentity); got != 256 {
			t.Errorf("entry %d: frame length %d", i, got)
		}
		got, err := c.Descriptor(want.id)
		if err != nil || got != d {
			t.Errorf("Descriptor(%d) = %+v, %v", want.id, got, err)
		}
	}
	d0 := entries[0].Descriptor
	if d0.StrippedChannel != "aeron:udp?tags=65|session-id=-1975790911|alias=log" || d0.OriginalChannel != d0.StrippedChannel || d0.SessionID != -1975790911 {
		t.Errorf("recording 0: %q %q session %d", d0.StrippedChannel, d0.OriginalChannel, d0.SessionID)
	}
	if _, err := c.Descriptor(3); err == nil {
		t.Error("Descriptor(3) found")
	}
}

func TestFixtureMarkFile(t *testing.T) {
	dir := copyFixture(t)
	m, err := ReadMarkFileIn(osFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *m)
	if m.HeaderOffset != 8 || m.Version != SemanticVersion || m.HeaderLength != 8192 || m.ErrorBufferLength != 1<<20 {
		t.Fatalf("mark: %+v", *m)
	}
	if m.ActivityTimestamp != -1 || m.StartTimestamp <= 0 || m.PID <= 0 || m.ArchiveID != 1 {
		t.Fatalf("mark: %+v", *m)
	}
	if m.ControlStreamID != 10 || m.LocalControlStreamID != 10 || m.EventsStreamID != 30 {
		t.Fatalf("mark streams: %+v", *m)
	}
	if m.ControlChannel != "aeron:udp?endpoint=localhost:9001" || m.LocalControlChannel != "aeron:ipc?term-length=65536" ||
		m.EventsChannel != "" || m.AeronDirectory != "/var/lib/aeronfx/single-node-1/aeron-driver" {
		t.Fatalf("mark strings: %+v", *m)
	}
	if m.IsLive(m.StartTimestamp, 5000) {
		t.Fatal("a cleanly stopped archive (activity -1) is live")
	}
	if size := int64(len(readFile(t, filepath.Join(dir, MarkFileName)))); size != MarkFileLength(m.ErrorBufferLength) {
		t.Fatalf("mark file size %d, want %d", size, MarkFileLength(m.ErrorBufferLength))
	}

	// Re-encoding gives the fixture's header bytes.
	want := readFile(t, filepath.Join(dir, MarkFileName))[:MarkHeaderLength]
	got, err := EncodeMarkHeader(m)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("re-encoded mark header differs at %d: %x vs %x", i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
	}
}

func TestFixtureDescribe(t *testing.T) {
	dir := copyFixture(t)
	d, err := Describe(osFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Mark == nil || d.MarkErr != nil || d.CatalogVersion != SemanticVersion || d.CatalogAlignment != 64 ||
		d.CatalogCapacity != 65536 || d.NextRecordingID != 3 || len(d.UnknownSegments) != 0 {
		t.Fatalf("describe: %+v", d)
	}
	if len(d.Recordings) != 3 {
		t.Fatalf("%d recordings", len(d.Recordings))
	}
	for i, want := range fixtureRecs {
		r := d.Recordings[i]
		if len(r.Segments) != len(want.files) {
			t.Fatalf("recording %d segments %+v", i, r.Segments)
		}
		for j, s := range r.Segments {
			if s.Name != want.files[j] || s.Size != 131072 {
				t.Errorf("recording %d segment %d: %+v", i, j, s)
			}
		}
	}
	// Nothing was written.
	for _, name := range []string{CatalogFileName, MarkFileName, "0-0.rec", "0-131072.rec", "1-0.rec", "2-0.rec"} {
		if a, b := readFile(t, filepath.Join(dir, name)), readFile(t, filepath.Join(fixtureArchive(t), name)); firstDiff(a, b) >= 0 {
			t.Errorf("%s changed", name)
		}
	}
}

func TestFixtureVerify(t *testing.T) {
	for _, opts := range []VerifyOptions{{}, {AllSegments: true}, {AllSegments: true, Truncate: true, MarkInvalid: true}} {
		dir := copyFixture(t)
		rep, err := Verify(osFS{}, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || len(rep.Recordings) != 3 || len(rep.UnknownSegments) != 0 {
			t.Fatalf("%+v: %+v", opts, rep)
		}
		for i, r := range rep.Recordings {
			want := fixtureRecs[i]
			if r.Status != StatusOK || r.ComputedStop != want.stop || r.StoredStop != want.stop || r.Truncated || r.StopUpdated ||
				r.MarkedInvalid || len(r.OrphanSegments)+len(r.MissingSegments)+len(r.WrongSizeSegments) != 0 || r.Scan.Problem != nil {
				t.Errorf("%+v: recording %d: %+v", opts, i, r)
			}
			t.Logf("recording %d: last %s scan %+v", r.RecordingID, r.LastSegment, r.Scan)
		}
		// Verify of a good archive never writes, even with repair options.
		for _, name := range []string{CatalogFileName, "0-0.rec", "0-131072.rec", "1-0.rec", "2-0.rec"} {
			if a, b := readFile(t, filepath.Join(dir, name)), readFile(t, filepath.Join(fixtureArchive(t), name)); firstDiff(a, b) >= 0 {
				t.Errorf("%+v: %s changed", opts, name)
			}
		}
	}
}

func TestFixtureComputeStopPosition(t *testing.T) {
	dir := copyFixture(t)
	c, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, want := range fixtureRecs {
		d, err := c.Descriptor(want.id)
		if err != nil {
			t.Fatal(err)
		}
		stop, res, err := ComputeStopPosition(osFS{}, dir, d)
		if err != nil || stop != want.stop || res.Problem != nil {
			t.Errorf("recording %d: stop %d, %+v, %v", want.id, stop, res, err)
		}
	}
}

// TestFixtureFrames scans every frame of the fixture's segments and counts
// the log's messages by SBE template id.
func TestFixtureFrames(t *testing.T) {
	dir := copyFixture(t)
	c, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, want := range fixtureRecs {
		d, _ := c.Descriptor(want.id)
		templates := map[uint16]int{}
		schemas := map[uint16]int{}
		pads := 0
		var end int64
		for _, name := range want.files {
			_, base, err := ParseSegmentFileName(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			prev := int64(-1)
			res, err := ScanSegment(f, st.Size(), segmentParams(d, base), func(fr Frame) error {
				if fr.Offset <= prev || fr.Offset%32 != 0 {
					t.Errorf("frame offset %d after %d", fr.Offset, prev)
				}
				prev = fr.Offset
				if fr.Header.Type == FrameTypePad {
					pads++
					if fr.Payload != nil || fr.Header.Flags != 0xC0 || (base+fr.Offset+AlignedFrameLength(fr.Header.FrameLength))%65536 != 0 {
						t.Errorf("pad frame at %d: %+v", fr.Offset, fr.Header)
					}
					return nil
				}
				if fr.Header.Flags != 0xC0 || fr.Header.SessionID != d.SessionID || len(fr.Payload) < 8 {
					t.Errorf("frame at %d: %+v payload %d", fr.Offset, fr.Header, len(fr.Payload))
					return nil
				}
				templates[binary.LittleEndian.Uint16(fr.Payload[2:])]++
				schemas[binary.LittleEndian.Uint16(fr.Payload[4:])]++
				return nil
			})
			f.Close()
			if err != nil || res.Problem != nil {
				t.Fatalf("%s: %+v %v", name, res, err)
			}
			t.Logf("%s: %+v", name, res)
			end = base + res.End
		}
		t.Logf("recording %d: templates %v schemas %v pads %d end %d", want.id, templates, schemas, pads, end)
		if end != want.stop {
			t.Errorf("recording %d: frames end at %d, want %d", want.id, end, want.stop)
		}
		if want.id == 0 {
			wantT := map[uint16]int{24: 1, 21: 1, 1: 800, 23: 1, 22: 1}
			if len(templates) != len(wantT) || pads != 3 || len(schemas) != 1 || schemas[111] != 804 {
				t.Errorf("log: templates %v pads %d schemas %v", templates, pads, schemas)
			}
			for k, v := range wantT {
				if templates[k] != v {
					t.Errorf("log: template %d: %d frames, want %d", k, templates[k], v)
				}
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
