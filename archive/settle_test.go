package archive

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettleStopPosition: an active VALID recording (stop -1) settles to
// the end of its last whole frame, as Aeron's archive settles it when it
// opens the catalog; other entries keep their stored stop; nothing is
// written, the catalog and the segment files keep their bytes.
func TestSettleStopPosition(t *testing.T) {
	dir := copyFixture(t)
	c := openRW(t, dir)
	if err := c.ExtendRecording(2, 5, 6, 7); err != nil { // stop -1, as a crash leaves it
		t.Fatal(err)
	}
	c.Close()
	catBefore := catalogBytes(t, dir)
	segBefore := readFile(t, filepath.Join(dir, "2-0.rec"))

	ro, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, e := range ro.Entries() {
		stop, settled, err := SettleStopPosition(osFS{}, dir, e)
		if err != nil {
			t.Fatal(err)
		}
		want, wantSettled := e.Descriptor.StopPosition, false
		if e.Descriptor.RecordingID == 2 {
			want, wantSettled = 480, true
		}
		if stop != want || settled != wantSettled {
			t.Errorf("recording %d: settled %d, %v; want %d, %v", e.Descriptor.RecordingID, stop, settled, want, wantSettled)
		}
	}
	// Not VALID: Aeron's archive leaves it alone.
	e, err := ro.Entry(2)
	if err != nil {
		t.Fatal(err)
	}
	e.State = StateInvalid
	if stop, settled, err := SettleStopPosition(osFS{}, dir, e); err != nil || settled || stop != NullPosition {
		t.Errorf("INVALID entry: %d, %v, %v; want -1 unsettled", stop, settled, err)
	}
	s := SettledCatalog{FS: osFS{}, Dir: dir, Catalog: ro}
	d, err := s.Descriptor(2)
	if err != nil || d.StopPosition != 480 || d.StopTimestamp != NullTimestamp {
		t.Errorf("SettledCatalog.Descriptor(2) = stop %d, stop timestamp %d, %v; want 480, -1", d.StopPosition, d.StopTimestamp, err)
	}
	if d0, err := s.Descriptor(0); err != nil || d0.StopPosition != mustDescriptor(t, ro, 0).StopPosition {
		t.Errorf("SettledCatalog.Descriptor(0) = %+v, %v", d0, err)
	}
	if _, err := s.Descriptor(99); !errors.Is(err, ErrRecordingNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if !bytes.Equal(catalogBytes(t, dir), catBefore) || !bytes.Equal(readFile(t, filepath.Join(dir, "2-0.rec")), segBefore) {
		t.Error("settling wrote to the catalog or a segment")
	}
}

func mustDescriptor(t *testing.T, c *Catalog, id int64) RecordingDescriptor {
	t.Helper()
	d, err := c.Descriptor(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSettleStopPositionUnverified: an active recording whose last frame
// straddles a page with an all-zero part is not settled (Aeron's archive
// refuses to open such a catalog until ArchiveTool verify has decided);
// the error names the segment and the fix.
func TestSettleStopPositionUnverified(t *testing.T) {
	dir := t.TempDir()
	c, err := CreateCatalogFile(osFS{}, dir, CatalogOptions{Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	const term, seg = 65536, 65536
	id, err := c.AddRecording(NewRecording{StartPosition: 0, StopPosition: NullPosition, StopTimestamp: NullTimestamp,
		InitialTermID: 7, SegmentFileLength: seg, TermBufferLength: term, MTULength: 4096, StreamID: 3,
		StrippedChannel: "aeron:ipc", OriginalChannel: "aeron:ipc", SourceIdentity: "aeron:ipc"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	b := make([]byte, seg)
	off := 0
	for _, n := range []int{1000, 1000, 1000, 3000} {
		EncodeFrameHeader(b[off:], FrameHeader{FrameLength: int32(n), Flags: 0xC0, Type: FrameTypeData, TermOffset: int32(off), StreamID: 3, TermID: 7})
		for i := off + 32; i < off+n && i < 4096; i++ {
			b[i] = 0xAA
		}
		off += int(AlignedFrameLength(int32(n)))
	}
	name := SegmentFileName(id, 0)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenCatalogFile(osFS{}, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = SettledCatalog{FS: osFS{}, Dir: dir, Catalog: ro}.Descriptor(id)
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "archive verify") {
		t.Fatalf("err = %v; want ErrUnsettled naming %s and the fix", err, name)
	}
}
