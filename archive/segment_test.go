package archive

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/logbuf"
)

func TestSegmentFileNames(t *testing.T) {
	if got := SegmentFileName(12, 196608); got != "12-196608.rec" {
		t.Fatal(got)
	}
	for _, tc := range []struct {
		name     string
		id, base int64
		ok       bool
	}{
		{"0-0.rec", 0, 0, true},
		{"0-131072.rec", 0, 131072, true},
		{"123-4567890123.rec", 123, 4567890123, true},
		{"-1-0.rec", 0, 0, false},
		{"1-.rec", 0, 0, false},
		{"1.rec", 0, 0, false},
		{"1-0.dat", 0, 0, false},
		{"1-x.rec", 0, 0, false},
		{"x-0.rec", 0, 0, false},
		{"1--5.rec", 0, 0, false},
		{"1-2-3.rec", 0, 0, false},
		{".rec", 0, 0, false},
		{"-.rec", 0, 0, false},
	} {
		id, base, err := ParseSegmentFileName(tc.name)
		if (err == nil) != tc.ok || (tc.ok && (id != tc.id || base != tc.base)) {
			t.Errorf("%q: %d %d %v", tc.name, id, base, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "archive: ") {
			t.Errorf("%q: error %q", tc.name, err)
		}
	}
}

func TestSegmentFileBasePosition(t *testing.T) {
	const term, seg = 64 << 10, 256 << 10
	// The example of the formats reference: start 0x3_0040.
	start := int64(0x30040)
	for _, tc := range []struct{ pos, want int64 }{
		{start, 0x30000},
		{0x30000 + seg - 32, 0x30000},
		{0x30000 + seg, 458752},
		{0x30000 + 2*seg + 100, 0x30000 + 2*seg},
	} {
		if got := SegmentFileBasePosition(start, tc.pos, term, seg); got != tc.want {
			t.Errorf("base(%#x, %#x) = %d, want %d", start, tc.pos, got, tc.want)
		}
	}
	// Exhaustive against the plain formula.
	for _, start := range []int64{0, 32, 65536 - 32, 65536, 5*65536 + 4096, 1 << 40} {
		for pos := start; pos < start+4*seg; pos += 4096 + 32 {
			tb := start - start%term
			want := tb + (pos-tb)/seg*seg
			if got := SegmentFileBasePosition(start, pos, term, seg); got != want {
				t.Fatalf("base(%d, %d) = %d, want %d", start, pos, got, want)
			}
		}
	}
	p := SegmentParams{Base: 0x30000, StartPosition: start, TermLength: term, SegmentLength: seg}
	if p.StartOffset() != 0x40 {
		t.Fatal(p.StartOffset())
	}
	p.Base = 458752
	if p.StartOffset() != 0 {
		t.Fatal(p.StartOffset())
	}
}

func TestCheckSegmentLength(t *testing.T) {
	for _, tc := range []struct {
		seg, term int32
		ok        bool
	}{
		{64 << 10, 64 << 10, true},
		{128 << 20, 16 << 20, true},
		{1 << 30, 1 << 30, true},
		{64 << 10, 128 << 10, false},
		{32 << 10, 32 << 10, false},
		{96 << 10, 64 << 10, false},
		{-1 << 31, 64 << 10, false},
		{128 << 10, 0, false},
		{128 << 10, 100000, false},
	} {
		if err := CheckSegmentLength(tc.seg, tc.term); (err == nil) != tc.ok {
			t.Errorf("CheckSegmentLength(%d, %d) = %v", tc.seg, tc.term, err)
		}
	}
}

func TestFrameHeaderCodec(t *testing.T) {
	h := FrameHeader{FrameLength: 232, Flags: logbuf.FlagUnfragmented, Type: FrameTypeData, TermOffset: 64, SessionID: -7, StreamID: 100, TermID: 3, ReservedValue: -1}
	b := make([]byte, 32)
	EncodeFrameHeader(b, h)
	want := []byte{232, 0, 0, 0, 0, 0xC0, 1, 0, 64, 0, 0, 0, 0xF9, 0xFF, 0xFF, 0xFF, 100, 0, 0, 0, 3, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	if !bytes.Equal(b, want) || DecodeFrameHeader(b) != h {
		t.Fatalf("%x", b)
	}
	if AlignedFrameLength(232) != 256 || AlignedFrameLength(256) != 256 || AlignedFrameLength(33) != 64 {
		t.Fatal("AlignedFrameLength")
	}
}

// fixtureSegment returns the last segment of the fixture's log recording and
// its scan parameters.
func fixtureSegment(t testing.TB) ([]byte, SegmentParams) {
	t.Helper()
	b := readFile(t, filepath.Join(copyFixture(t), "0-131072.rec"))
	return b, SegmentParams{Base: 131072, StartPosition: 0, TermLength: 65536, SegmentLength: 131072, InitialTermID: 0, StreamID: 100}
}

func frameOffsets(t testing.TB, b []byte, p SegmentParams) []int64 {
	t.Helper()
	var offs []int64
	res, err := ScanSegment(bytes.NewReader(b), int64(len(b)), p, func(f Frame) error { offs = append(offs, f.Offset); return nil })
	if err != nil || res.Problem != nil {
		t.Fatalf("%+v %v", res, err)
	}
	return append(offs, res.End)
}

// TestScanTornTail cuts the fixture's last log segment at many byte offsets,
// by truncating the file and by zeroing its tail, and checks that the scan
// finds the last whole frame and calls the rest a torn tail, never an
// invalid frame.
func TestScanTornTail(t *testing.T) {
	orig, p := fixtureSegment(t)
	bounds := frameOffsets(t, orig, p) // frame starts, then the data end
	dataEnd := bounds[len(bounds)-1]
	if dataEnd != 100192 {
		t.Fatalf("data end %d", dataEnd)
	}
	frameAt := func(x int64) (int64, int64) { // frame [start, end) holding x
		for i := 0; i+1 < len(bounds); i++ {
			if bounds[i] <= x && x < bounds[i+1] {
				return bounds[i], bounds[i+1]
			}
		}
		return dataEnd, dataEnd
	}
	var cuts []int64
	for x := int64(0); x <= dataEnd; x += 97 {
		cuts = append(cuts, x)
	}
	for _, b := range bounds[len(bounds)-6:] {
		for d := int64(-33); d <= 33; d++ {
			if b+d >= 0 && b+d <= dataEnd {
				cuts = append(cuts, b+d)
			}
		}
	}
	for _, x := range cuts {
		start, end := frameAt(x)
		// Truncated file.
		res, err := ScanSegment(bytes.NewReader(orig[:x]), x, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case x == start:
			if res.End != x || res.Problem != nil {
				t.Fatalf("cut %d at a boundary: %+v", x, res)
			}
		default:
			if res.End != start || res.Problem == nil || res.Problem.Kind != TornTail || res.Problem.Offset != start {
				t.Fatalf("cut %d inside frame [%d,%d): %+v %v", x, start, end, res, res.Problem)
			}
		}
		// Zeroed tail, full-length file.
		z := bytes.Clone(orig)
		clear(z[x:])
		res, err = ScanSegment(bytes.NewReader(z), int64(len(z)), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Problem != nil && res.Problem.Kind != TornTail {
			t.Fatalf("zeroed from %d: %v", x, res.Problem)
		}
		switch {
		case x == start:
			if res.End != x || res.Problem != nil {
				t.Fatalf("zeroed from boundary %d: %+v", x, res)
			}
		case headerLost(orig[start:start+32], x-start):
			// The header lost a checked field: torn.
			if res.End != start || res.Problem == nil {
				t.Fatalf("zeroed from %d, header of frame %d: %+v", x, start, res)
			}
		default:
			// Only payload lost: undetectable without a checksum unless a
			// whole page part is zero.
			if (res.End != start || res.Problem == nil) && (res.End != end || res.Problem != nil) {
				t.Fatalf("zeroed from %d in frame [%d,%d): %+v", x, start, end, res)
			}
		}
	}
}

// headerLost reports whether zeroing header h from byte n changes its
// length or a field the scan checks (term offset, stream id, term id).
func headerLost(h []byte, n int64) bool {
	for i := n; i < 24; i++ {
		if (i < 4 || (i >= 8 && i < 12) || i >= 16) && h[i] != 0 {
			return true
		}
	}
	return false
}

// A last data frame straddling a page boundary whose part in the next page
// is zero is a torn tail (ArchiveTool's check).
func TestScanPageStraddle(t *testing.T) {
	p := SegmentParams{Base: 0, StartPosition: 0, TermLength: 65536, SegmentLength: 65536, InitialTermID: 5, StreamID: 9}
	seg := make([]byte, 65536)
	off := 0
	put := func(length int, fill byte) int {
		at := off
		EncodeFrameHeader(seg[at:], FrameHeader{FrameLength: int32(length), Flags: 0xC0, Type: FrameTypeData, TermOffset: int32(at), StreamID: 9, TermID: 5})
		for i := at + 32; i < at+length; i++ {
			seg[i] = fill
		}
		off += int(AlignedFrameLength(int32(length)))
		return at
	}
	for off < 3000 {
		put(1000, 1)
	}
	last := put(3000, 0) // straddles 4096 with an all-zero payload
	res, err := ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem == nil || res.Problem.Kind != TornTail || res.End != int64(last) || res.Problem.Offset != int64(last) {
		t.Fatalf("%+v %v", res, err)
	}
	seg[4096+10] = 1
	res, err = ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem != nil || res.End != int64(off) {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestScanInvalidFrames(t *testing.T) {
	orig, p := fixtureSegment(t)
	bounds := frameOffsets(t, orig, p)
	mid := bounds[100]
	for _, tc := range []struct {
		name   string
		mutate func(b []byte)
		params func(p SegmentParams) SegmentParams
		want   string
	}{
		{"wrong term offset", func(b []byte) { b[mid+8] ^= 0x40 }, nil, "termOffset="},
		{"wrong term id", func(b []byte) { b[mid+20]++ }, nil, "termId="},
		{"wrong stream", nil, func(p SegmentParams) SegmentParams { p.StreamID = 7; return p }, "streamId=100"},
		{"wrong initial term id", nil, func(p SegmentParams) SegmentParams { p.InitialTermID = 1; return p }, "termId=2"},
		{"bad type", func(b []byte) { b[mid+6] = 5 }, nil, "frame type 5"},
		{"short length", func(b []byte) { b[mid] = 8; b[mid+1] = 0 }, nil, "shorter than the 32-byte header"},
		{"length past term", func(b []byte) { b[mid+2] = 0x7f }, nil, "runs past the term end"},
		{"torn in the middle", func(b []byte) { clear(b[mid+12 : mid+24]) }, nil, "non-zero data follows"},
		{"negative length mid-file", func(b []byte) { b[mid+3] = 0xff }, nil, "non-zero data follows"},
	} {
		b := bytes.Clone(orig)
		if tc.mutate != nil {
			tc.mutate(b)
		}
		pp := p
		if tc.params != nil {
			pp = tc.params(p)
		}
		res, err := ScanSegment(bytes.NewReader(b), int64(len(b)), pp, nil)
		if err != nil || res.Problem == nil || res.Problem.Kind != InvalidFrame || !strings.Contains(res.Problem.Error(), tc.want) ||
			!strings.HasPrefix(res.Problem.Error(), "archive: ") || !errors.Is(res.Problem, ErrCorrupt) {
			t.Errorf("%s: %+v %v", tc.name, res.Problem, err)
		}
	}
	// Bad parameters are errors, not problems.
	if _, err := ScanSegment(bytes.NewReader(orig), int64(len(orig)), SegmentParams{TermLength: 1000, SegmentLength: 131072}, nil); err == nil {
		t.Error("term length 1000 accepted")
	}
	if _, err := ScanSegment(bytes.NewReader(orig), int64(len(orig)), SegmentParams{Base: 100, TermLength: 65536, SegmentLength: 131072}, nil); err == nil {
		t.Error("unaligned base accepted")
	}
	// An I/O error is returned as such.
	if _, err := ScanSegment(errReader{}, 131072, p, nil); err == nil {
		t.Error("read error lost")
	}
	// The visitor's error stops the scan.
	stop := errors.New("stop")
	if _, err := ScanSegment(bytes.NewReader(orig), int64(len(orig)), p, func(Frame) error { return stop }); err != stop {
		t.Errorf("visitor error: %v", err)
	}
}

type errReader struct{}

func (errReader) ReadAt([]byte, int64) (int, error) { return 0, os.ErrClosed }

// TestScanChecksummedTail: a last frame with FrameChecksum in its reserved
// value is known whole (even straddling a page with an all-zero part) or
// torn (a verified torn tail, not a suspicion); a middle frame whose
// checksum does not match is an invalid frame at its offset.
func TestScanChecksummedTail(t *testing.T) {
	p := SegmentParams{Base: 0, StartPosition: 0, TermLength: 65536, SegmentLength: 65536, InitialTermID: 5, StreamID: 9}
	build := func(lastPayload []byte) ([]byte, int, int) {
		seg := make([]byte, 65536)
		off := 0
		put := func(payload []byte) int {
			at := off
			EncodeFrameHeader(seg[at:], FrameHeader{FrameLength: int32(32 + len(payload)), Flags: 0xC0, Type: FrameTypeData,
				TermOffset: int32(at), StreamID: 9, TermID: 5, ReservedValue: FrameChecksum(payload)})
			copy(seg[at+32:], payload)
			off += int(AlignedFrameLength(int32(32 + len(payload))))
			return at
		}
		for off < 3000 {
			put(bytes.Repeat([]byte{1}, 968))
		}
		last := put(lastPayload)
		return seg, last, off
	}
	// Whole, ending in zeros across the page boundary at 4096.
	payload := append(bytes.Repeat([]byte{7}, 100), make([]byte, 2868)...)
	seg, last, end := build(payload)
	if last >= 4096 || last+32+len(payload) <= 4096 {
		t.Fatalf("test frame at %d does not straddle 4096", last)
	}
	res, err := ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem != nil || res.End != int64(end) {
		t.Fatalf("whole checksummed frame: %+v %v", res, err)
	}
	// Torn: the writer's page at 4096 never reached the file.
	payload = bytes.Repeat([]byte{9}, 2968)
	seg, last, _ = build(payload)
	clear(seg[4096:])
	res, err = ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem == nil || res.Problem.Kind != TornTail || res.Problem.Unverified || res.End != int64(last) {
		t.Fatalf("torn checksummed frame: %+v %v", res, err)
	}
	// A damaged payload in the middle is damage, found at its frame.
	seg, _, _ = build(bytes.Repeat([]byte{3}, 100))
	seg[40] ^= 0xff
	res, err = ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem == nil || res.Problem.Kind != InvalidFrame || res.Problem.Offset != 0 || res.End != 0 ||
		res.Checksums != ChecksumsPresent {
		t.Fatalf("middle frame: %+v %v", res, err)
	}
	// Without checksums (an Aeron recording) only the structure counts.
	seg, _, end = build(bytes.Repeat([]byte{3}, 100))
	for o := 0; o < end; {
		h := DecodeFrameHeader(seg[o:])
		h.ReservedValue = 0
		EncodeFrameHeader(seg[o:], h)
		o += int(AlignedFrameLength(h.FrameLength))
	}
	seg[40] ^= 0xff
	res, err = ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, nil)
	if err != nil || res.Problem != nil || res.End != int64(end) || res.Checksums != ChecksumsAbsent {
		t.Fatalf("middle frame without checksums: %+v %v", res, err)
	}
	if HasFrameChecksum(0) || !HasFrameChecksum(FrameChecksum(nil)) || HasFrameChecksum(-1) {
		t.Fatal("HasFrameChecksum")
	}
}
