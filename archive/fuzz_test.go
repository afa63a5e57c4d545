package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

func fuzzSeedCatalogs(f *testing.F) {
	if b, ok := fixtureFile(CatalogFileName); ok {
		f.Add(b[:1024])
		f.Add(b[:32+256+100])
		c := bytes.Clone(b[:1024])
		binary.LittleEndian.PutUint32(c[16:], 0) // legacy
		f.Add(c)
		c = bytes.Clone(b[:1024])
		binary.LittleEndian.PutUint64(c[8:], 0)
		f.Add(c)
	}
	m := &memFile{}
	if c, err := CreateCatalog(m, CatalogOptions{Capacity: 256}); err == nil {
		c.AddRecording(NewRecording{StrippedChannel: "a", OriginalChannel: "bb", SourceIdentity: "ccc"})
		c.AddRecording(NewRecording{})
		c.ChangeState(0, StateInvalid)
		f.Add(m.b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 32))
}

// FuzzCatalog opens arbitrary bytes as a catalog. It must never panic; what
// opens must list and look up every entry, and a writable catalog must stay
// openable after an AddRecording, a state change and a field update.
func FuzzCatalog(f *testing.F) {
	fuzzSeedCatalogs(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, ro := range []bool{true, false} {
			mf := &memFile{b: bytes.Clone(b), name: "fuzz"}
			c, err := OpenCatalog(mf, CatalogOptions{ReadOnly: ro})
			if err != nil {
				if !strings.HasPrefix(err.Error(), "archive: ") || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %q", err)
				}
				continue
			}
			entries := c.Entries()
			valid := 0
			for _, e := range entries {
				if e.Offset < CatalogHeaderLength || e.Offset+int64(e.Length)+DescriptorHeaderLength > c.Capacity() {
					t.Fatalf("entry out of bounds: %+v", e)
				}
				if e.State == StateValid {
					valid++
					if d, err := c.Descriptor(e.Descriptor.RecordingID); err != nil || d != e.Descriptor {
						t.Fatalf("Descriptor(%d): %v", e.Descriptor.RecordingID, err)
					}
				}
				if _, err := c.Entry(e.Descriptor.RecordingID); err != nil {
					t.Fatal(err)
				}
			}
			if valid != c.CountValid() || len(c.Recordings()) != valid {
				t.Fatalf("valid %d, CountValid %d", valid, c.CountValid())
			}
			if ro {
				continue
			}
			id, err := c.AddRecording(NewRecording{StartPosition: 0, StopPosition: NullPosition, StrippedChannel: "x"})
			if err != nil {
				continue // legacy, full, or a negative next id
			}
			if err := c.ChangeState(id, StateDeleted); err != nil {
				t.Fatal(err)
			}
			if len(entries) > 0 {
				c.UpdateStopPosition(entries[0].Descriptor.RecordingID, 4096)
			}
			if id == math.MaxInt64 {
				continue
			}
			c2, err := OpenCatalog(&memFile{b: bytes.Clone(mf.b), name: "again"}, CatalogOptions{})
			if err != nil {
				t.Fatalf("reopen after writes: %v", err)
			}
			if len(c2.Entries()) != len(entries)+1 || c2.NextRecordingID() != id+1 {
				t.Fatalf("reopened: %d entries, next %d", len(c2.Entries()), c2.NextRecordingID())
			}
		}
	})
}

// FuzzSegmentScan scans arbitrary bytes as a segment. It must never panic,
// and its result must be consistent: End on the frame grid between the start
// offset and the file end, and, with no problem reported, nothing but zeros
// in the header at End.
func FuzzSegmentScan(f *testing.F) {
	for _, name := range []string{"1-0.rec", "2-0.rec"} {
		if b, ok := fixtureFile(name); ok {
			f.Add(b[:1024], int64(0), int32(0), int32(0), uint8(0))
		}
	}
	if b, ok := fixtureFile("0-0.rec"); ok {
		f.Add(b[:2048], int64(0), int32(0), int32(100), uint8(1))
		f.Add(b[0xff00:0x10100], int64(0), int32(0), int32(100), uint8(1))
	}
	f.Add([]byte{}, int64(64), int32(5), int32(9), uint8(2))
	f.Fuzz(func(t *testing.T, seg []byte, start int64, initialTermID, streamID int32, shape uint8) {
		const term = 64 << 10
		p := SegmentParams{
			Base:          0,
			StartPosition: start & (term - 1) &^ 31,
			TermLength:    term,
			SegmentLength: term << (shape % 2),
			InitialTermID: initialTermID,
			StreamID:      streamID,
		}
		if shape&2 != 0 {
			p.Base = int64(p.SegmentLength)
		}
		// Seeds from the fixture carry their own ids: take them from the
		// first header when asked, so the scan gets past the first frame.
		if shape&4 == 0 && len(seg) >= 32 {
			h := DecodeFrameHeader(seg)
			p.StreamID, p.InitialTermID = h.StreamID, h.TermID
		}
		frames := 0
		res, err := ScanSegment(bytes.NewReader(seg), int64(len(seg)), p, func(fr Frame) error {
			frames++
			if fr.Header.Type == FrameTypeData && len(fr.Payload) != int(fr.Header.FrameLength)-32 {
				t.Fatalf("payload %d for length %d", len(fr.Payload), fr.Header.FrameLength)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("scan error: %v", err)
		}
		so := p.StartOffset()
		limit := min(int64(p.SegmentLength), int64(len(seg)))
		if res.End < so || (res.End > limit && res.End != so) || (res.End-so)%32 != 0 {
			t.Fatalf("end %d, start offset %d, limit %d", res.End, so, limit)
		}
		if frames < res.Frames || res.Frames != res.DataFrames+res.PadFrames {
			t.Fatalf("frames %d visited, %+v", frames, res)
		}
		if res.Problem == nil && res.End+32 <= limit && !allZero(seg[res.End:res.End+32]) {
			t.Fatalf("clean end %d but header there is %x", res.End, seg[res.End:res.End+32])
		}
		if res.Problem != nil && !strings.HasPrefix(res.Problem.Error(), "archive: ") {
			t.Fatal(res.Problem)
		}
	})
}

// FuzzMarkFile decodes arbitrary bytes as a mark file; what decodes must
// re-encode and decode to the same fields.
func FuzzMarkFile(f *testing.F) {
	if b, ok := fixtureFile(MarkFileName); ok {
		f.Add(b[:512])
		f.Add(b[8:512])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMarkFile(b)
		if err != nil {
			return
		}
		enc, err := EncodeMarkHeader(m)
		if err != nil {
			return
		}
		m2, err := DecodeMarkFile(enc)
		if err != nil {
			t.Fatal(err)
		}
		m.HeaderOffset = 8
		if *m != *m2 {
			t.Fatalf("%+v != %+v", m, m2)
		}
	})
}

// FuzzRecordingReader builds a recording from a fuzzed list of frames
// (data frames of fuzzed lengths, padding to the term end where a frame
// does not fit or where asked) over terms of 64 KiB or 2 MiB (where reads
// stop at 1 MiB inside a term) and segments of one or two terms, and
// checks the reader's contract: from every frame's start, with and without
// padding, it delivers exactly the rest of the recording and ends at the
// stop position with no error; a limit at any frame's end ends the read
// there.
func FuzzRecordingReader(f *testing.F) {
	f.Add([]byte{1, 2, 3, 255, 7}, uint8(0))
	f.Add([]byte{200, 200, 200, 3, 9, 9}, uint8(1))
	f.Add(bytes.Repeat([]byte{252}, 40), uint8(3))
	f.Fuzz(func(t *testing.T, spec []byte, shape uint8) {
		termLen := int64(64 << 10)
		if shape&1 != 0 {
			termLen = 2 << 20
		}
		segLen := termLen << ((shape >> 1) & 1)
		if len(spec) > 24 {
			spec = spec[:24]
		}
		mem := vfs.NewMem()
		if err := mem.MkdirAll("a"); err != nil {
			t.Fatal(err)
		}
		segs := map[int64][]byte{}
		put := func(pos int64, typ uint16, length int64) int64 {
			base := pos - pos%segLen
			if segs[base] == nil {
				segs[base] = make([]byte, segLen)
			}
			seg, off := segs[base], pos-base
			h := FrameHeader{FrameLength: int32(length), Flags: 0xC0, Type: typ, TermOffset: int32(pos % termLen),
				StreamID: 9, TermID: int32(5 + pos/termLen)}
			if typ == FrameTypeData {
				payload := seg[off+32 : off+length]
				for i := range payload {
					payload[i] = byte(pos) + byte(i)
				}
				h.ReservedValue = FrameChecksum(payload)
			}
			EncodeFrameHeader(seg[off:], h)
			return pos + AlignedFrameLength(h.FrameLength)
		}
		var pos int64
		for _, b := range spec {
			rest := termLen - pos%termLen
			length := 32 + int64(b>>2)*int64(termLen/(64<<10))*250
			length = min(length, MaxFrameLength)
			if b&3 == 3 || AlignedFrameLength(int32(length)) > rest {
				pos = put(pos, FrameTypePad, rest)
				if b&3 == 3 {
					continue
				}
			}
			pos = put(pos, FrameTypeData, length)
		}
		if pos == 0 {
			return
		}
		for base, seg := range segs {
			f, err := mem.Create("a/" + SegmentFileName(3, base))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(seg, 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		d := RecordingDescriptor{RecordingID: 3, StartPosition: 0, StopPosition: pos, TermBufferLength: int32(termLen),
			SegmentFileLength: int32(segLen), InitialTermID: 5, StreamID: 9, MTULength: MaxFrameLength}
		type frame struct {
			end int64
			pad bool
		}
		read := func(from, to int64, pad bool) []frame {
			t.Helper()
			r, err := OpenRecordingReader(mem, "a", d, from, to)
			if err != nil {
				t.Fatalf("open [%d, %d): %v", from, to, err)
			}
			defer r.Close()
			if pad {
				r.IncludePadding()
			}
			var got []frame
			for {
				h, _, end, ok := r.Next()
				if !ok {
					break
				}
				got = append(got, frame{end, h.Type == FrameTypePad})
			}
			if r.Err() != nil {
				t.Fatalf("read [%d, %d): %v", from, to, r.Err())
			}
			if want := to; want >= 0 && r.Position() != want {
				t.Fatalf("read [%d, %d) ended at %d", from, to, r.Position())
			}
			return got
		}
		all := read(0, -1, true)
		if n := len(all); n == 0 || all[n-1].end != pos {
			t.Fatalf("frames %v, stop %d", all, pos)
		}
		starts := []int64{0}
		for _, fr := range all[:len(all)-1] {
			starts = append(starts, fr.end)
		}
		for i, from := range starts {
			if got := read(from, pos, true); !slices.Equal(got, all[i:]) {
				t.Fatalf("from %d with padding: %v, want %v", from, got, all[i:])
			}
			want := slices.DeleteFunc(slices.Clone(all[i:]), func(fr frame) bool { return fr.pad })
			if got := read(from, pos, false); !slices.Equal(got, want) {
				t.Fatalf("from %d without padding: %v, want %v", from, got, want)
			}
			if got := read(0, all[i].end, true); !slices.Equal(got, all[:i+1]) {
				t.Fatalf("to %d: %v, want %v", all[i].end, got, all[:i+1])
			}
		}
	})
}
