package archive

import (
	"bytes"
	"errors"
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
