package archive

import "hash/crc32"

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
