package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/matchlog/matchlog/internal/logbuf"
)

// Segment and frame constants. They are part of the file format: never
// change them.
const (
	// SegmentSuffix ends every segment file name.
	SegmentSuffix = ".rec"
	// MinSegmentLength and MaxSegmentLength bound a segment file length
	// (TERM_MIN_LENGTH, TERM_MAX_LENGTH).
	MinSegmentLength = 64 * 1024
	MaxSegmentLength = 1024 * 1024 * 1024
	// DefaultSegmentLength is Aeron's default segment file length.
	DefaultSegmentLength = 128 * 1024 * 1024

	// FrameHeaderLength is the data frame header length (DATA_OFFSET).
	FrameHeaderLength = logbuf.HeaderLength
	// FrameAlignment is the alignment of frames in a term and a segment.
	FrameAlignment = logbuf.FrameAlignment
	// FrameTypePad and FrameTypeData are the frame types found in segments.
	FrameTypePad  = logbuf.TypePad
	FrameTypeData = logbuf.TypeData
	// FrameFlagsUnfragmented (BEGIN|END, 0xC0) is the flags byte of an
	// unfragmented message and of a padding frame.
	FrameFlagsUnfragmented = logbuf.FlagUnfragmented
	// MaxFrameLength is the longest data frame Aeron can send
	// (MAX_UDP_PAYLOAD_LENGTH, the largest MTU).
	MaxFrameLength = logbuf.MaxMTU

	// pageSize is the page ArchiveTool checks a straddling last frame
	// against.
	pageSize = 4096
)

// FrameHeader is a decoded 32-byte data frame header.
type FrameHeader = logbuf.FrameHeader

// DecodeFrameHeader decodes the header at the start of b (at least 32
// bytes).
func DecodeFrameHeader(b []byte) FrameHeader { return logbuf.ReadFrameHeader(b) }

// EncodeFrameHeader encodes h into the first 32 bytes of b.
func EncodeFrameHeader(b []byte, h FrameHeader) { h.Put(b) }

// AlignedFrameLength is align(frameLength, 32): the space a frame takes.
func AlignedFrameLength(frameLength int32) int64 {
	return alignInt64(int64(frameLength), FrameAlignment)
}

// SegmentFileName is "<recordingID>-<basePosition>.rec".
func SegmentFileName(recordingID, basePosition int64) string {
	return strconv.FormatInt(recordingID, 10) + "-" + strconv.FormatInt(basePosition, 10) + SegmentSuffix
}

// ParseSegmentFileName parses a segment file name as Aeron does: the
// recording id is the text before the first '-', the base position the text
// between that '-' and ".rec". Both must be decimal; the id must not be
// empty and the position must not be negative.
func ParseSegmentFileName(name string) (recordingID, basePosition int64, err error) {
	if !strings.HasSuffix(name, SegmentSuffix) {
		return 0, 0, fmt.Errorf("archive: segment file name %q does not end in %s", name, SegmentSuffix)
	}
	dash := strings.IndexByte(name, '-')
	if dash <= 0 {
		return 0, 0, fmt.Errorf("archive: segment file name %q has no recording id before '-'", name)
	}
	pos := name[dash+1 : len(name)-len(SegmentSuffix)]
	if dash+1 > len(name)-len(SegmentSuffix) || pos == "" {
		return 0, 0, fmt.Errorf("archive: segment file name %q has no position", name)
	}
	if recordingID, err = strconv.ParseInt(name[:dash], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("archive: segment file name %q: bad recording id: %w", name, err)
	}
	if basePosition, err = strconv.ParseInt(pos, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("archive: segment file name %q: bad position: %w", name, err)
	}
	if basePosition < 0 {
		return 0, 0, fmt.Errorf("archive: segment file name %q: negative position", name)
	}
	return recordingID, basePosition, nil
}

// SegmentFileBasePosition is Aeron's AeronArchive.segmentFileBasePosition:
// the base position of the segment holding position, counting segments from
// the term base of startPosition. termLength and segmentLength must be
// powers of two.
func SegmentFileBasePosition(startPosition, position int64, termLength, segmentLength int32) int64 {
	startTermBase := startPosition - (startPosition & int64(termLength-1))
	fromBase := position - startTermBase
	return startTermBase + (fromBase - (fromBase & int64(segmentLength-1)))
}

// CheckSegmentLength reports whether segmentLength is a power of two in
// [64 KiB, 1 GiB] and at least termLength, and termLength a valid term
// length, as Aeron requires.
func CheckSegmentLength(segmentLength, termLength int32) error {
	if err := CheckTermLength(termLength); err != nil {
		return err
	}
	if segmentLength < MinSegmentLength || segmentLength > MaxSegmentLength || bits.OnesCount32(uint32(segmentLength)) != 1 {
		return fmt.Errorf("archive: segment length %d is not a power of two in [%d, %d]", segmentLength, MinSegmentLength, MaxSegmentLength)
	}
	if segmentLength < termLength {
		return fmt.Errorf("archive: segment length %d is shorter than the term length %d", segmentLength, termLength)
	}
	return nil
}

// CheckTermLength reports whether termLength is a power of two in
// [64 KiB, 1 GiB].
func CheckTermLength(termLength int32) error {
	if termLength < logbuf.MinTermLength || termLength > logbuf.MaxTermLength || bits.OnesCount32(uint32(termLength)) != 1 {
		return fmt.Errorf("archive: term length %d is not a power of two in [%d, %d]", termLength, logbuf.MinTermLength, logbuf.MaxTermLength)
	}
	return nil
}

// SegmentParams describe the segment file a scan walks.
type SegmentParams struct {
	// Base is the segment's base position (from its file name).
	Base int64
	// StartPosition is the recording's start position. The scan of the
	// segment holding its term base starts at its term offset, any other
	// segment at 0 (as ArchiveTool).
	StartPosition int64
	TermLength    int32
	SegmentLength int32
	InitialTermID int32
	StreamID      int32
	// Checksums says whether the recording's DATA frames carry
	// FrameChecksum; ChecksumsUnknown lets the scan's first DATA frame
	// decide (ScanResult.Checksums reports the decision, to pass to the
	// scan of the next segment).
	Checksums ChecksumMode
}

// StartOffset is the file offset where frames start in this segment.
func (p SegmentParams) StartOffset() int64 {
	startTermOffset := p.StartPosition & int64(p.TermLength-1)
	if p.Base == p.StartPosition-startTermOffset {
		return startTermOffset
	}
	return 0
}

// ProblemKind classifies what a segment scan found.
type ProblemKind int

const (
	// TornTail is an incomplete last frame, followed only by zeros: its
	// header was cut short (zero from some byte on, every checked field
	// before that byte right), its length is negative, its body runs past
	// the end of the file, or (FrameProblem.Unverified) it straddles a
	// 4 KiB page and its part in a later page is all zero. Truncating the
	// segment at its offset repairs it.
	TornTail ProblemKind = iota + 1
	// InvalidFrame is a frame that does not belong at its place (wrong
	// term offset, term id or stream id, bad type or length), or a torn
	// frame followed by non-zero bytes. ArchiveTool marks such a recording
	// INVALID.
	InvalidFrame
)

func (k ProblemKind) String() string {
	switch k {
	case TornTail:
		return "torn tail"
	case InvalidFrame:
		return "invalid frame"
	}
	return fmt.Sprintf("ProblemKind(%d)", int(k))
}

// FrameProblem is what a scan found wrong at a file offset.
type FrameProblem struct {
	Kind   ProblemKind
	Offset int64 // file offset of the frame
	Reason string
	// Unverified marks a torn tail inferred only from a last frame that
	// straddles a 4 KiB page and has an all-zero page part: a whole frame
	// whose payload ends in zeros looks the same. ArchiveTool asks the
	// operator before truncating such a frame; Verify needs
	// TruncateUnverified.
	Unverified bool
}

func (p *FrameProblem) Error() string {
	return fmt.Sprintf("archive: %s at segment offset %d: %s", p.Kind, p.Offset, p.Reason)
}

// Is makes a FrameProblem satisfy errors.Is(err, ErrCorrupt).
func (p *FrameProblem) Is(target error) bool { return target == ErrCorrupt }

// Frame is one frame a scan visits.
type Frame struct {
	Offset int64 // file offset
	Header FrameHeader
	// Payload is the frame's payload (frameLength - 32 bytes) for DATA
	// frames, nil for padding. It is valid only during the callback.
	Payload []byte
}

// ScanResult is the outcome of ScanSegment.
type ScanResult struct {
	// End is the file offset just past the last whole frame (aligned): the
	// segment's stop offset.
	End int64
	// Frames, DataFrames and PadFrames count whole frames.
	Frames, DataFrames, PadFrames int
	// LastFrameOffset is the offset of the last whole frame, -1 if none.
	LastFrameOffset int64
	// Problem is nil when the data ends cleanly (a zero frame length, or
	// the end of the segment).
	Problem *FrameProblem
	// UnverifiedEnd, when Problem.Unverified, is the end offset if the
	// suspected frame is whole after all (End excludes it).
	UnverifiedEnd int64
	// Checksums is SegmentParams.Checksums, decided by the first DATA
	// frame if it was ChecksumsUnknown.
	Checksums ChecksumMode
}

// ScanSegment walks the frames of one segment file of size bytes from
// p.StartOffset, as ArchiveTool verify does: each frame must have the term
// offset and term id of its position and the recording's stream id, type
// DATA or PAD, a length of at least 32 that keeps it inside its term, and
// (DATA) at most MaxFrameLength; in a recording that carries checksums
// (p.Checksums, see ChecksumMode) each DATA frame's FrameChecksum must match
// its payload: a mismatch followed only by zeros is a torn tail, one
// followed by data is an InvalidFrame. The walk ends at a zero frame length or the
// end of the segment. visit, if not nil, sees every whole frame; an error it
// returns stops the scan and is returned. The error result is otherwise only
// for I/O errors; problems with the data are in ScanResult.Problem.
func ScanSegment(r io.ReaderAt, size int64, p SegmentParams, visit func(Frame) error) (ScanResult, error) {
	res := ScanResult{LastFrameOffset: -1, Checksums: p.Checksums}
	if err := CheckSegmentLength(p.SegmentLength, p.TermLength); err != nil {
		return res, err
	}
	if p.Base < 0 || p.Base&int64(p.TermLength-1) != 0 {
		return res, fmt.Errorf("archive: segment base %d is not a non-negative multiple of the term length %d", p.Base, p.TermLength)
	}
	limit := min(int64(p.SegmentLength), size)
	w := window{r: r, size: limit}
	shift := logbuf.PositionBitsToShift(int(p.TermLength))
	termMask := int64(p.TermLength - 1)
	off := p.StartOffset()
	res.End = off
	var lastLength int32
	for off < limit {
		if limit-off < FrameHeaderLength {
			b, err := w.read(off, limit-off)
			if err != nil {
				return res, err
			}
			if !allZero(b) {
				res.Problem = &FrameProblem{Kind: TornTail, Offset: off, Reason: fmt.Sprintf("partial frame header: file ends %d bytes after it", limit-off)}
			}
			break
		}
		hb, err := w.read(off, FrameHeaderLength)
		if err != nil {
			return res, err
		}
		h := DecodeFrameHeader(hb)
		if h.FrameLength == 0 {
			if !allZero(hb) {
				res.Problem = &FrameProblem{Kind: TornTail, Offset: off, Reason: "frame length 0 but the rest of the header is not zero"}
			}
			break
		}
		position := p.Base + off
		termOffset := int32(position & termMask)
		termID := logbuf.ComputeTermID(position, shift, p.InitialTermID)
		if h.FrameLength < 0 {
			res.Problem = &FrameProblem{Kind: TornTail, Offset: off, Reason: fmt.Sprintf("negative frame length %d (frame not committed)", h.FrameLength)}
			break
		}
		if h.TermOffset != termOffset || h.TermID != termID || h.StreamID != p.StreamID {
			reason := fmt.Sprintf("header has termOffset=%d termId=%d streamId=%d, expected %d, %d, %d",
				h.TermOffset, h.TermID, h.StreamID, termOffset, termID, p.StreamID)
			kind := InvalidFrame
			if headerCutShort(hb, termOffset, p.StreamID, termID) {
				kind = TornTail
				reason = "frame header partly zero: " + reason
			}
			res.Problem = &FrameProblem{Kind: kind, Offset: off, Reason: reason}
			break
		}
		if h.FrameLength < FrameHeaderLength {
			res.Problem = &FrameProblem{Kind: InvalidFrame, Offset: off, Reason: fmt.Sprintf("frame length %d is shorter than the %d-byte header", h.FrameLength, FrameHeaderLength)}
			break
		}
		if h.Type != FrameTypeData && h.Type != FrameTypePad {
			res.Problem = &FrameProblem{Kind: InvalidFrame, Offset: off, Reason: fmt.Sprintf("frame type %d is neither DATA (1) nor PAD (0)", h.Type)}
			break
		}
		aligned := AlignedFrameLength(h.FrameLength)
		if int64(termOffset)+aligned > int64(p.TermLength) {
			res.Problem = &FrameProblem{Kind: InvalidFrame, Offset: off, Reason: fmt.Sprintf("frame length %d at term offset %d runs past the term end %d", h.FrameLength, termOffset, p.TermLength)}
			break
		}
		if h.Type == FrameTypeData && h.FrameLength > MaxFrameLength {
			res.Problem = &FrameProblem{Kind: InvalidFrame, Offset: off, Reason: fmt.Sprintf("data frame length %d is above the maximum %d", h.FrameLength, MaxFrameLength)}
			break
		}
		if off+aligned > limit {
			res.Problem = &FrameProblem{Kind: TornTail, Offset: off, Reason: fmt.Sprintf("frame of length %d runs past the end of the file (%d bytes)", h.FrameLength, size)}
			break
		}
		var payload []byte
		if h.Type == FrameTypeData {
			b, err := w.read(off, aligned)
			if err != nil {
				return res, err
			}
			payload = b[FrameHeaderLength:h.FrameLength]
			if reason, torn := res.Checksums.check(h, payload); reason != "" {
				kind := InvalidFrame
				if torn {
					kind = TornTail // unless data follows (below)
				}
				res.Problem = &FrameProblem{Kind: kind, Offset: off, Reason: reason}
				break
			}
		}
		if visit != nil {
			if err := visit(Frame{Offset: off, Header: h, Payload: payload}); err != nil {
				return res, err
			}
		}
		res.Frames++
		if h.Type == FrameTypeData {
			res.DataFrames++
		} else {
			res.PadFrames++
		}
		res.LastFrameOffset = off
		lastLength = h.FrameLength
		off += aligned
		res.End = off
	}

	// The last DATA frame straddling a page boundary is not known to be
	// whole: like ArchiveTool without a checksum, require its part in every
	// page after the straddle to be non-zero. Unlike ArchiveTool, only the
	// frame's own bytes count (not the zero alignment after them), so a
	// frame that ends in a page is not doubted for its padding in the next.
	// Padding frames have zero bodies by design and are not checked.
	if res.Problem == nil && res.LastFrameOffset >= 0 {
		hb, err := w.read(res.LastFrameOffset, FrameHeaderLength)
		if err != nil {
			return res, err
		}
		if h := DecodeFrameHeader(hb); h.Type == FrameTypeData && HasFrameChecksum(h.ReservedValue) {
			// A checksummed frame is known whole or torn.
			pb, err := w.read(res.LastFrameOffset+FrameHeaderLength, int64(lastLength)-FrameHeaderLength)
			if err != nil {
				return res, err
			}
			if FrameChecksum(pb) != h.ReservedValue {
				res.Problem = &FrameProblem{Kind: TornTail, Offset: res.LastFrameOffset,
					Reason: fmt.Sprintf("last frame (length %d) does not match the checksum in its reserved value", lastLength)}
				res.End = res.LastFrameOffset
				res.Frames--
				res.DataFrames--
			}
		} else if h.Type == FrameTypeData {
			if z, ok, err := straddleZeroPage(&w, res.LastFrameOffset, int64(lastLength)); err != nil {
				return res, err
			} else if ok {
				res.Problem = &FrameProblem{Kind: TornTail, Offset: res.LastFrameOffset, Unverified: true,
					Reason: fmt.Sprintf("last frame (length %d) straddles a page boundary and its part in the page at %d is all zero", lastLength, z)}
				res.UnverifiedEnd = res.End
				res.End = res.LastFrameOffset
				res.Frames--
				res.DataFrames--
			}
		}
	}

	// A torn frame must be the last thing in the file: anything non-zero
	// after it means damage in the middle, not a torn write.
	if res.Problem != nil && res.Problem.Kind == TornTail {
		from := min(res.Problem.Offset+FrameHeaderLength, limit)
		if hb, err := w.read(res.Problem.Offset, min(FrameHeaderLength, limit-res.Problem.Offset)); err == nil && len(hb) >= 4 {
			if fl := int32(binary.LittleEndian.Uint32(hb)); fl > 0 {
				from = max(from, res.Problem.Offset+AlignedFrameLength(fl))
			}
		}
		if nz, err := firstNonZero(&w, from, limit); err != nil {
			return res, err
		} else if nz >= 0 {
			res.Problem.Kind = InvalidFrame
			res.Problem.Reason += fmt.Sprintf(", and non-zero data follows at offset %d", nz)
		}
	}
	return res, nil
}

// headerCutShort reports whether header hb is a good header whose tail was
// lost: it is zero from some byte on, and the checked fields (term offset,
// stream id, term id) match before that byte.
func headerCutShort(hb []byte, termOffset, streamID, termID int32) bool {
	z := len(hb)
	for z > 0 && hb[z-1] == 0 {
		z--
	}
	var want [FrameHeaderLength]byte
	binary.LittleEndian.PutUint32(want[logbuf.TermOffsetFieldOffset:], uint32(termOffset))
	binary.LittleEndian.PutUint32(want[logbuf.StreamIDFieldOffset:], uint32(streamID))
	binary.LittleEndian.PutUint32(want[logbuf.TermIDFieldOffset:], uint32(termID))
	for _, f := range []int{logbuf.TermOffsetFieldOffset, logbuf.StreamIDFieldOffset, logbuf.TermIDFieldOffset} {
		for i := f; i < f+4 && i < z; i++ {
			if hb[i] != want[i] {
				return false
			}
		}
	}
	return true
}

// straddleZeroPage reports the first page, after the first page boundary
// inside the frame bytes [off, off+length), whose part inside them is all
// zero.
func straddleZeroPage(w *window, off, length int64) (int64, bool, error) {
	end := off + length
	if off/pageSize == (end-1)/pageSize {
		return 0, false, nil
	}
	for page := (off/pageSize + 1) * pageSize; page < end; page += pageSize {
		b, err := w.read(page, min(page+pageSize, end)-page)
		if err != nil {
			return 0, false, err
		}
		if allZero(b) {
			return page, true, nil
		}
	}
	return 0, false, nil
}

// firstNonZero returns the offset of the first non-zero byte in [from, to),
// or -1.
func firstNonZero(w *window, from, to int64) (int64, error) {
	for from < to {
		n := min(to-from, windowSize)
		b, err := w.read(from, n)
		if err != nil {
			return 0, err
		}
		for i, c := range b {
			if c != 0 {
				return from + int64(i), nil
			}
		}
		from += n
	}
	return -1, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// windowSize is the most a window reads at a time; firstWindow the most
// its first read does.
const (
	windowSize  = 1 << 20
	firstWindow = 64 << 10
)

// window reads a file through a 1 MiB buffer. Its first read is 64 KiB
// and each later one twice the one before, up to 1 MiB: a scan that stops
// at the first frames (RecordingChecksums, at every reader's open) reads
// and faults in 64 KiB of its fresh buffer, not 1 MiB, and a whole scan
// reads 1 MiB at a time after four shorter reads.
type window struct {
	r    io.ReaderAt
	size int64 // readable limit
	buf  []byte
	off  int64 // file offset of buf[0]
	next int   // the size of the next read (0: firstWindow)
}

// read returns n bytes at off (n <= windowSize, off+n <= size), valid until
// the next read.
func (w *window) read(off, n int64) ([]byte, error) {
	if n < 0 || n > windowSize || off < 0 || off+n > w.size {
		return nil, fmt.Errorf("archive: internal read [%d, %d) outside [0, %d)", off, off+n, w.size)
	}
	if w.buf != nil && off >= w.off && off+n <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off : off-w.off+n], nil
	}
	size := min(max(w.next, firstWindow, int(n)), windowSize)
	w.next = min(2*size, windowSize)
	if cap(w.buf) < windowSize {
		w.buf = make([]byte, windowSize)
	}
	m := min(int64(size), w.size-off)
	w.buf = w.buf[:m]
	got, err := w.r.ReadAt(w.buf, off)
	if int64(got) < m {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		w.buf = nil
		return nil, fmt.Errorf("archive: read segment at %d: %w", off, err)
	}
	w.off = off
	return w.buf[:n], nil
}
