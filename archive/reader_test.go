package archive

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestRecordingReaderChecksEveryFrame: the read-only reader delivers every
// DATA frame of a checksummed recording, stops at a frame whose payload
// does not match its checksum (naming position, file and offset), reads an
// Aeron-style recording (no checksums) by structure only, and writes no
// file.
func TestRecordingReaderChecksEveryFrame(t *testing.T) {
	const termLen, segLen = 65536, 65536
	build := func(sums bool) ([]byte, int64) {
		seg := make([]byte, segLen)
		off := 0
		for i := 0; i < 20; i++ {
			payload := bytes.Repeat([]byte{byte(i + 1)}, 100+i)
			h := FrameHeader{FrameLength: int32(32 + len(payload)), Flags: 0xC0, Type: FrameTypeData,
				TermOffset: int32(off), StreamID: 9, TermID: 5}
			if sums {
				h.ReservedValue = FrameChecksum(payload)
			}
			EncodeFrameHeader(seg[off:], h)
			copy(seg[off+32:], payload)
			off += int(AlignedFrameLength(h.FrameLength))
		}
		return seg, int64(off)
	}
	for _, sums := range []bool{true, false} {
		seg, stop := build(sums)
		third := int64(0)
		for i := 0; i < 3; i++ { // the fourth frame's offset
			third += AlignedFrameLength(int32(32 + 100 + i))
		}
		seg[third+40] ^= 0xff
		mem := vfs.NewMem()
		if err := mem.MkdirAll("a"); err != nil {
			t.Fatal(err)
		}
		f, err := mem.Create("a/" + SegmentFileName(3, 0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(seg, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		d := RecordingDescriptor{RecordingID: 3, StartPosition: 0, StopPosition: stop, TermBufferLength: termLen,
			SegmentFileLength: segLen, InitialTermID: 5, StreamID: 9}
		r, err := OpenRecordingReader(mem, "a", d, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, _, _, ok := r.Next()
			if !ok {
				break
			}
			n++
		}
		r.Close()
		if sums {
			err := r.Err()
			if n != 3 || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "3-0.rec offset") ||
				!strings.Contains(err.Error(), "position") {
				t.Fatalf("checksummed: %d frames, error %v; want 3 and the damaged frame named", n, err)
			}
		} else if n != 20 || r.Err() != nil || r.Position() != stop {
			t.Fatalf("without checksums: %d frames to %d, error %v; want all 20 to %d", n, r.Position(), r.Err(), stop)
		}
		if names, _ := mem.List("a"); len(names) != 1 {
			t.Fatalf("the reader wrote files: %v", names)
		}
	}
}

// TestRecordingReaderPaddingAndLimits: padding frames are skipped unless
// IncludePadding is called; a start inside a frame is refused; a limit
// inside a frame ends the read before it, and a stop position inside one
// is damage.
func TestRecordingReaderPaddingAndLimits(t *testing.T) {
	const termLen, segLen = 65536, 2 * 65536
	seg := make([]byte, segLen)
	put := func(off int, typ uint16, length int) int {
		payload := bytes.Repeat([]byte{byte(off)}, length-32)
		h := FrameHeader{FrameLength: int32(length), Flags: 0xC0, Type: typ, TermOffset: int32(off % termLen),
			StreamID: 9, TermID: int32(5 + off/termLen)}
		if typ == FrameTypeData {
			h.ReservedValue = FrameChecksum(payload)
			copy(seg[off+32:], payload)
		}
		EncodeFrameHeader(seg[off:], h)
		return off + int(AlignedFrameLength(h.FrameLength))
	}
	off := put(0, FrameTypeData, 100)         // [0, 128)
	off = put(off, FrameTypeData, 200)        // [128, 352)
	off = put(off, FrameTypePad, termLen-off) // to the term end
	off = put(off, FrameTypeData, 64)         // [65536, 65600)
	stop := int64(off)
	mem := vfs.NewMem()
	if err := mem.MkdirAll("a"); err != nil {
		t.Fatal(err)
	}
	f, err := mem.Create("a/" + SegmentFileName(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(seg, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d := RecordingDescriptor{RecordingID: 3, StartPosition: 0, StopPosition: stop, TermBufferLength: termLen,
		SegmentFileLength: segLen, InitialTermID: 5, StreamID: 9}
	read := func(from, to int64, pad bool) ([]int64, *RecordingReader) {
		t.Helper()
		r, err := OpenRecordingReader(mem, "a", d, from, to)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if pad {
			r.IncludePadding()
		}
		var ends []int64
		for {
			h, payload, end, ok := r.Next()
			if !ok {
				break
			}
			if h.Type == FrameTypePad && len(payload) != 0 {
				t.Fatalf("padding frame with a %d-byte payload", len(payload))
			}
			ends = append(ends, end)
		}
		return ends, r
	}
	if ends, r := read(0, -1, false); r.Err() != nil || !slices.Equal(ends, []int64{128, 352, 65600}) {
		t.Fatalf("without padding: %v, %v", ends, r.Err())
	}
	if ends, r := read(0, -1, true); r.Err() != nil || !slices.Equal(ends, []int64{128, 352, 65536, 65600}) {
		t.Fatalf("with padding: %v, %v", ends, r.Err())
	}
	// From every frame's start, the reader delivers the rest of the
	// recording: also from the padding frame at the term end, where the
	// first read ends just before the next term's frame.
	all, _ := read(0, -1, true)
	for i, from := range append([]int64{0}, all[:len(all)-1]...) {
		if ends, r := read(from, -1, true); r.Err() != nil || !slices.Equal(ends, all[i:]) {
			t.Fatalf("from %d with padding: %v, %v; want %v", from, ends, r.Err(), all[i:])
		}
		want := slices.DeleteFunc(slices.Clone(all[i:]), func(e int64) bool { return e == termLen })
		if ends, r := read(from, -1, false); r.Err() != nil || !slices.Equal(ends, want) {
			t.Fatalf("from %d without padding: %v, %v; want %v", from, ends, r.Err(), want)
		}
	}
	if ends, r := read(128, 200, false); r.Err() != nil || len(ends) != 0 || r.Position() != 128 {
		t.Fatalf("limit inside a frame: %v to %d, %v; want nothing, at 128", ends, r.Position(), r.Err())
	}
	if _, err := OpenRecordingReader(mem, "a", d, 64, -1); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("start inside a frame: %v", err)
	}
	d.StopPosition = 65568 // inside the last frame
	if _, r := read(0, -1, false); !errors.Is(r.Err(), ErrCorrupt) || !strings.Contains(r.Err().Error(), "position 65536") {
		t.Fatalf("stop inside a frame: %v", r.Err())
	}
}
