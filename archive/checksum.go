package archive

import (
	"fmt"
	"hash/crc32"
)

// Frame checksums in the reserved value.
//
// A frame header's 8-byte reserved value is the application's (Aeron's
// tools ignore it, and Aeron Cluster leaves it 0). matchlog's writers —
// the node's log and its snapshot recordings — put FrameChecksum of the
// frame's payload there, so that the last frame of a recording can be
// told whole or torn for certain after a crash: a process killed during a
// write leaves the write cut at a page boundary, and a frame whose part
// in the next page is all zero may be torn or may be a whole frame ending
// in zeros. Without a checksum ScanSegment can only suspect it
// (FrameProblem.Unverified); with one it knows.

// checksumMarker tells a reserved value holding a checksum from 0 (and
// from a value of Aeron's): bit 32 set, bits 33..63 clear.
const (
	checksumMarker = int64(1) << 32
	checksumMask   = ^int64(0) << 32
)

// FrameChecksum is the reserved value matchlog's writers give a frame with
// this payload: its CRC-32C in the low 32 bits, bit 32 set.
func FrameChecksum(payload []byte) int64 {
	return checksumMarker | int64(crc32.Checksum(payload, castagnoli))
}

// HasFrameChecksum reports whether a reserved value holds a FrameChecksum.
func HasFrameChecksum(reserved int64) bool { return reserved&checksumMask == checksumMarker }

// Which recordings carry checksums.
//
// A recording carries checksums when its first DATA frame's reserved value
// holds one (HasFrameChecksum): matchlog's writers give every DATA frame of
// the node's log and snapshot recordings a FrameChecksum, and Aeron's
// writers leave the field to the application (Aeron Cluster leaves it 0).
// In a recording that carries checksums every DATA frame must hold one that
// matches its payload; every reader (Replay, RecordingReader, ScanSegment,
// Verify) checks each frame it reads. A frame whose checksum does not
// match, in the middle of the data, is damage (InvalidFrame), never a torn
// write. In a recording that does not (those real Aeron writes) only the
// structure of each frame is checked: its place, type and length. A first
// frame whose marker bit was damaged would make a checksummed recording
// look like Aeron's; a later frame whose reserved value is a matching
// checksum then reports the first frame as damaged (a random reserved
// value matches its payload's CRC-32C with odds of 1 in 2^32).

// ChecksumMode says whether a recording's DATA frames carry FrameChecksum.
type ChecksumMode uint8

const (
	// ChecksumsUnknown decides from the first DATA frame checked.
	ChecksumsUnknown ChecksumMode = iota
	// ChecksumsAbsent: structure checks only (recordings of real Aeron).
	ChecksumsAbsent
	// ChecksumsPresent: every DATA frame holds a matching FrameChecksum.
	ChecksumsPresent
)

func (m ChecksumMode) String() string {
	switch m {
	case ChecksumsAbsent:
		return "no frame checksums"
	case ChecksumsPresent:
		return "frame checksums"
	}
	return "frame checksums not yet known"
}

// Check checks a DATA frame's reserved value against its payload and
// returns "" when it is right, else what is wrong. A ChecksumsUnknown mode
// is decided by the frame. Padding frames are not checked.
func (m *ChecksumMode) Check(h FrameHeader, payload []byte) string {
	reason, _ := m.check(h, payload)
	return reason
}

// check is Check; torn reports a frame whose own checksum does not match
// (what a torn write leaves), as opposed to a reserved value that is wrong
// for the recording.
func (m *ChecksumMode) check(h FrameHeader, payload []byte) (reason string, torn bool) {
	if h.Type != FrameTypeData {
		return "", false
	}
	marked := HasFrameChecksum(h.ReservedValue)
	switch *m {
	case ChecksumsUnknown:
		if !marked {
			*m = ChecksumsAbsent
			return "", false
		}
		*m = ChecksumsPresent
	case ChecksumsAbsent:
		if marked && FrameChecksum(payload) == h.ReservedValue {
			return "frame holds a matching checksum but the recording's first frame holds none: the first frame's reserved value is damaged", false
		}
		return "", false
	}
	if !marked {
		return fmt.Sprintf("reserved value %#x holds no checksum, but the recording's frames carry checksums", uint64(h.ReservedValue)), false
	}
	if sum := FrameChecksum(payload); sum != h.ReservedValue {
		return fmt.Sprintf("payload CRC-32C %#08x does not match %#08x in the reserved value", uint32(sum), uint32(h.ReservedValue)), true
	}
	return "", false
}
