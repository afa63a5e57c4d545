package archive

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openRW(t testing.TB, dir string) *Catalog {
	t.Helper()
	c, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verify(t testing.TB, dir string, opts VerifyOptions) *VerifyReport {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() int64 { return 1_900_000_000_000 }
	}
	rep, err := Verify(osFS{}, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func catalogBytes(t testing.TB, dir string) []byte {
	return readFile(t, filepath.Join(dir, CatalogFileName))
}

func descriptorOf(t testing.TB, dir string, id int64) CatalogEntry {
	t.Helper()
	c, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Entry(id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestVerifyTornTail cuts the log's last segment inside its last frame, by
// truncating the file and by zeroing, and repairs it with Truncate.
func TestVerifyTornTail(t *testing.T) {
	const lastFrame = 100096 // measured: the last frame of 0-131072.rec
	for _, mode := range []string{"truncated", "zeroed"} {
		dir := copyFixture(t)
		seg := filepath.Join(dir, "0-131072.rec")
		b := readFile(t, seg)
		if mode == "truncated" {
			b = b[:lastFrame+40]
		} else {
			clear(b[lastFrame+4:])
		}
		if err := os.WriteFile(seg, b, 0o644); err != nil {
			t.Fatal(err)
		}
		before := catalogBytes(t, dir)

		rep := verify(t, dir, VerifyOptions{})
		r := rep.Recordings[0]
		if r.Status != StatusTornTail || r.Scan.Problem == nil || r.Scan.Problem.Kind != TornTail || r.Scan.Problem.Offset != lastFrame ||
			r.ComputedStop != 131072+lastFrame || r.Truncated || r.StopUpdated || rep.OK() {
			t.Fatalf("%s: %+v", mode, r)
		}
		if rep.Recordings[1].Status != StatusOK || rep.Recordings[2].Status != StatusOK {
			t.Fatalf("%s: others: %+v", mode, rep.Recordings[1:])
		}
		if mode == "truncated" && !slices.Equal(r.WrongSizeSegments, []string{"0-131072.rec"}) {
			t.Fatalf("wrong size: %v", r.WrongSizeSegments)
		}
		if !bytes.Equal(catalogBytes(t, dir), before) || !bytes.Equal(readFile(t, seg), b) {
			t.Fatalf("%s: verify without options wrote", mode)
		}

		rep = verify(t, dir, VerifyOptions{Truncate: true})
		r = rep.Recordings[0]
		if !r.Truncated || r.TruncatedAt != lastFrame || !r.StopUpdated || r.Status != StatusOK || r.MarkedInvalid {
			t.Fatalf("%s: repair: %+v", mode, r)
		}
		got := readFile(t, seg)
		orig := readFile(t, filepath.Join(fixtureArchive(t), "0-131072.rec"))
		if len(got) != 131072 || !bytes.Equal(got[:lastFrame], orig[:lastFrame]) || !allZero(got[lastFrame:]) {
			t.Fatalf("%s: repaired segment: len %d", mode, len(got))
		}
		e := descriptorOf(t, dir, 0)
		if e.State != StateValid || e.Descriptor.StopPosition != 131072+lastFrame || e.Descriptor.StopTimestamp != 1_900_000_000_000 {
			t.Fatalf("%s: catalog after repair: %+v", mode, e)
		}
		// Now clean.
		if rep := verify(t, dir, VerifyOptions{AllSegments: true}); !rep.OK() {
			t.Fatalf("%s: after repair: %+v", mode, rep)
		}
	}
}

func TestVerifyOrphansMissingUnknown(t *testing.T) {
	dir := copyFixture(t)
	// Detach the first segment of the log: 0-0.rec becomes an orphan.
	c := openRW(t, dir)
	if err := c.UpdateStartPosition(0, 131072); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, name := range []string{"7-0.rec", "junk-x.rec", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "1-0.rec")); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, dir, VerifyOptions{AllSegments: true})
	if !slices.Equal(rep.UnknownSegments, []string{"7-0.rec", "junk-x.rec"}) {
		t.Fatalf("unknown: %v", rep.UnknownSegments)
	}
	r0 := rep.Recordings[0]
	if r0.Status != StatusWarning || !slices.Equal(r0.OrphanSegments, []string{"0-0.rec"}) || len(r0.MissingSegments) != 0 {
		t.Fatalf("recording 0: %+v", r0)
	}
	r1 := rep.Recordings[1]
	// No file at all: the stop computes to the start, like ArchiveTool.
	if r1.Status != StatusWarning || !slices.Equal(r1.MissingSegments, []string{"1-0.rec"}) || r1.ComputedStop != 0 || r1.StopUpdated {
		t.Fatalf("recording 1: %+v", r1)
	}
	if descriptorOf(t, dir, 1).State != StateValid {
		t.Fatal("missing file made the recording invalid")
	}
	d, err := Describe(osFS{}, dir)
	if err != nil || !slices.Equal(d.UnknownSegments, rep.UnknownSegments) || len(d.Recordings[1].Segments) != 0 {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

func TestVerifyInvalid(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		id      int64
		all     bool // only found with AllSegments
		message string
	}{
		{"stop past the last segment", func(t *testing.T, dir string) {
			c := openRW(t, dir)
			defer c.Close()
			c.UpdateStopPosition(1, 131072+64)
		}, 1, false, "exceed max segment file position=131071"},
		{"unaligned start", func(t *testing.T, dir string) {
			c := openRW(t, dir)
			defer c.Close()
			c.UpdateStartPosition(2, 16)
		}, 2, false, "non-aligned startPosition=16"},
		{"stop before start", func(t *testing.T, dir string) {
			c := openRW(t, dir)
			defer c.Close()
			c.UpdateStartPosition(2, 512)
		}, 2, false, "is before startPosition=512"},
		{"wrong stream in last segment", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "2-0.rec")
			b := readFile(t, p)
			b[96+16]++ // stream id of the frame at 96
			os.WriteFile(p, b, 0o644)
		}, 2, false, "streamId=108, expected"},
		{"wrong term id in first log segment", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "0-0.rec")
			b := readFile(t, p)
			b[65536+20]++ // term id of the first frame of term 1
			os.WriteFile(p, b, 0o644)
		}, 0, true, "segment 0-0.rec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t)
			tc.setup(t, dir)
			if tc.all {
				if rep := verify(t, dir, VerifyOptions{}); !rep.OK() {
					t.Fatalf("found without AllSegments: %+v", rep)
				}
			}
			before := catalogBytes(t, dir)
			rep := verify(t, dir, VerifyOptions{AllSegments: true})
			r := rep.Recordings[tc.id]
			if r.Status != StatusInvalid || r.MarkedInvalid || !strings.Contains(strings.Join(r.Problems, "; "), tc.message) {
				t.Fatalf("%+v", r)
			}
			if !bytes.Equal(catalogBytes(t, dir), before) {
				t.Fatal("verify without MarkInvalid wrote the catalog")
			}
			// Truncate alone never marks invalid.
			rep = verify(t, dir, VerifyOptions{AllSegments: true, Truncate: true})
			if rep.Recordings[tc.id].MarkedInvalid || descriptorOf(t, dir, tc.id).State != StateValid {
				t.Fatal("Truncate marked invalid")
			}
			rep = verify(t, dir, VerifyOptions{AllSegments: true, MarkInvalid: true})
			if r := rep.Recordings[tc.id]; !r.MarkedInvalid || r.Status != StatusInvalid {
				t.Fatalf("%+v", r)
			}
			if e := descriptorOf(t, dir, tc.id); e.State != StateInvalid {
				t.Fatalf("state %v", e.State)
			}
			for _, r := range rep.Recordings {
				if r.RecordingID != tc.id && (r.Status != StatusOK || r.MarkedInvalid) {
					t.Fatalf("other recording %+v", r)
				}
			}
			// An INVALID entry is verified again but never made VALID.
			rep = verify(t, dir, VerifyOptions{AllSegments: true, MarkInvalid: true})
			if r := rep.Recordings[tc.id]; r.Status != StatusInvalid || r.MarkedInvalid || r.State != StateInvalid {
				t.Fatalf("second pass %+v", r)
			}
		})
	}
}

func TestVerifyStopPosition(t *testing.T) {
	dir := copyFixture(t)
	c := openRW(t, dir)
	c.ExtendRecording(2, 5, 6, 7) // stop -1, as while recording
	c.ChangeState(1, StateDeleted)
	c.Close()
	id := int64(2)
	rep := verify(t, dir, VerifyOptions{RecordingID: &id})
	if len(rep.Recordings) != 1 {
		t.Fatalf("%+v", rep)
	}
	r := rep.Recordings[0]
	// Active: settled to the last whole frame, as Aeron's archive settles
	// it on opening and ArchiveTool verify says OK; the catalog keeps -1.
	if r.Status != StatusOK || !r.Settled || r.StoredStop != -1 || r.ComputedStop != 480 || r.StopUpdated || len(r.Problems) != 0 {
		t.Fatalf("%+v", r)
	}
	if e := descriptorOf(t, dir, 2); e.Descriptor.StopPosition != NullPosition {
		t.Fatalf("read-only verify wrote stop %d", e.Descriptor.StopPosition)
	}
	rep = verify(t, dir, VerifyOptions{Truncate: true})
	if rep.Recordings[1].Status != StatusSkipped {
		t.Fatalf("deleted: %+v", rep.Recordings[1])
	}
	r = rep.Recordings[2]
	if r.Status != StatusOK || !r.StopUpdated || r.Truncated || r.Settled {
		t.Fatalf("%+v", r)
	}
	e := descriptorOf(t, dir, 2)
	if e.Descriptor.StopPosition != 480 || e.Descriptor.StopTimestamp != 1_900_000_000_000 || e.Descriptor.ControlSessionID != 5 ||
		e.Descriptor.CorrelationID != 6 || e.Descriptor.SessionID != 7 {
		t.Fatalf("%+v", e)
	}
	// Files of recordings 0 and 2 untouched.
	for _, name := range []string{"0-0.rec", "0-131072.rec", "2-0.rec"} {
		if !bytes.Equal(readFile(t, filepath.Join(dir, name)), readFile(t, filepath.Join(fixtureArchive(t), name))) {
			t.Fatalf("%s changed", name)
		}
	}
}

func TestComputeStopPositionNoFiles(t *testing.T) {
	dir := t.TempDir()
	stop, res, err := ComputeStopPosition(osFS{}, dir, RecordingDescriptor{RecordingID: 3, StartPosition: 4096, TermBufferLength: 65536, SegmentFileLength: 65536})
	if err != nil || stop != 4096 || res.Problem != nil {
		t.Fatal(stop, res, err)
	}
}

// TestVerifyUnverifiedTail builds an archive whose last frame straddles a
// page with an all-zero part: reported, kept by Truncate alone, cut with
// TruncateUnverified.
func TestVerifyUnverifiedTail(t *testing.T) {
	dir := t.TempDir()
	c, err := CreateCatalogFile(osFS{}, dir, CatalogOptions{Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	const term, seg = 65536, 65536
	id, err := c.AddRecording(NewRecording{StartPosition: 64, StopPosition: NullPosition, StopTimestamp: NullTimestamp,
		InitialTermID: 7, SegmentFileLength: seg, TermBufferLength: term, MTULength: 4096, StreamID: 3,
		StrippedChannel: "aeron:ipc", OriginalChannel: "aeron:ipc", SourceIdentity: "aeron:ipc"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	b := make([]byte, seg)
	off := 64
	var last int
	for _, n := range []int{1000, 1000, 1000, 3000} {
		EncodeFrameHeader(b[off:], FrameHeader{FrameLength: int32(n), Flags: 0xC0, Type: FrameTypeData, TermOffset: int32(off), StreamID: 3, TermID: 7})
		for i := off + 32; i < off+n && i < 4096; i++ {
			b[i] = 0xAA
		}
		last = off
		off += int(AlignedFrameLength(int32(n)))
	}
	if err := os.WriteFile(filepath.Join(dir, SegmentFileName(id, 0)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := verify(t, dir, VerifyOptions{}).Recordings[0]
	if r.Status != StatusTornTail || r.Scan.Problem == nil || !r.Scan.Problem.Unverified || r.Scan.Problem.Offset != int64(last) || r.ComputedStop != int64(off) {
		t.Fatalf("%+v", r)
	}
	r = verify(t, dir, VerifyOptions{Truncate: true}).Recordings[0]
	if r.Truncated || !r.StopUpdated || r.Status != StatusTornTail || descriptorOf(t, dir, id).Descriptor.StopPosition != int64(off) {
		t.Fatalf("Truncate alone: %+v", r)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, SegmentFileName(id, 0))), b) {
		t.Fatal("segment changed")
	}
	r = verify(t, dir, VerifyOptions{Truncate: true, TruncateUnverified: true}).Recordings[0]
	if !r.Truncated || r.TruncatedAt != int64(last) || r.Status != StatusOK || descriptorOf(t, dir, id).Descriptor.StopPosition != int64(last) {
		t.Fatalf("TruncateUnverified: %+v", r)
	}
	got := readFile(t, filepath.Join(dir, SegmentFileName(id, 0)))
	if len(got) != seg || !bytes.Equal(got[:last], b[:last]) || !allZero(got[last:]) {
		t.Fatal("truncated segment")
	}
	if rep := verify(t, dir, VerifyOptions{}); !rep.OK() {
		t.Fatalf("%+v", rep)
	}
}

func TestVerifyHugeRange(t *testing.T) {
	dir := copyFixture(t)
	os.Remove(filepath.Join(dir, "1-0.rec"))
	c := openRW(t, dir)
	c.UpdateStopPosition(1, 1<<60)
	c.Close()
	r := verify(t, dir, VerifyOptions{}).Recordings[1]
	if r.Status != StatusWarning || len(r.MissingSegments) != maxListedMissing || !strings.Contains(strings.Join(r.Problems, ";"), "segment files missing") {
		t.Fatalf("%+v", r.Problems)
	}
}
