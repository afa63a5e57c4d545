package logbuf

import (
	"fmt"
	"math/bits"
)

// Log buffer layout constants, as Aeron's LogBufferDescriptor defines them.
// They are part of the .logbuffer format: never change them.
const (
	// PartitionCount is the number of term partitions in a log.
	PartitionCount = 3
	// MetaDataLength is the length of the metadata block after the terms.
	MetaDataLength = 4096

	// Metadata field offsets.
	TermTailCountersOffset         = 0   // 3 x int64 raw tails
	ActiveTermCountOffset          = 24  // int32
	EndOfStreamPositionOffset      = 128 // int64
	IsConnectedOffset              = 136 // int32
	ActiveTransportCountOffset     = 140 // int32
	CorrelationIDOffset            = 256 // int64
	InitialTermIDOffset            = 264 // int32
	DefaultFrameHeaderLengthOffset = 268 // int32
	MTULengthOffset                = 272 // int32
	TermLengthOffset               = 276 // int32
	PageSizeOffset                 = 280 // int32
	PublicationWindowLengthOffset  = 284 // int32
	DefaultFrameHeaderOffset       = 320 // 32 bytes used of 128 reserved
	DefaultFrameHeaderMaxLength    = 128
	tailCounterStride              = 8
)

// Limits on the log's parameters.
const (
	MinTermLength    = 64 * 1024
	MaxTermLength    = 1024 * 1024 * 1024
	MaxMessageLength = 16 * 1024 * 1024 // cap of ComputeMaxMessageLength
	MinMTU           = 64               // smallest valid MTU (> 32, multiple of 32)
	MaxMTU           = 65504            // MAX_UDP_PAYLOAD_LENGTH
	DefaultMTU       = 1408
	PageSize         = 4096
)

// Align rounds v up to a multiple of alignment, which must be a power of two.
func Align(v, alignment int) int { return (v + alignment - 1) &^ (alignment - 1) }

// CheckTermLength reports whether termLength is a power of two in
// [MinTermLength, MaxTermLength].
func CheckTermLength(termLength int) error {
	if termLength < MinTermLength || termLength > MaxTermLength || termLength&(termLength-1) != 0 {
		return fmt.Errorf("logbuf: term length %d is not a power of two in [%d, %d]",
			termLength, MinTermLength, MaxTermLength)
	}
	return nil
}

// CheckMTU reports whether mtu is in (32, 65504] and a multiple of 32.
func CheckMTU(mtu int) error {
	if mtu <= HeaderLength || mtu > MaxMTU || mtu%FrameAlignment != 0 {
		return fmt.Errorf("logbuf: MTU %d is not a multiple of %d in (%d, %d]",
			mtu, FrameAlignment, HeaderLength, MaxMTU)
	}
	return nil
}

// ComputeMaxMessageLength is min(termLength/8, 16 MiB), the longest message
// a publication of that term length accepts.
func ComputeMaxMessageLength(termLength int) int {
	return min(termLength/8, MaxMessageLength)
}

// PositionBitsToShift is log2(termLength) for a valid term length.
func PositionBitsToShift(termLength int) uint8 {
	return uint8(bits.TrailingZeros(uint(termLength)))
}

// ComputePosition returns the stream position of termOffset in termID. The
// term count is computed in int32 so term ids may wrap around.
func ComputePosition(termID int32, termOffset int, shift uint8, initialTermID int32) int64 {
	termCount := int64(termID - initialTermID)
	return termCount<<shift + int64(termOffset)
}

// ComputeTermBeginPosition returns the position where termID starts.
func ComputeTermBeginPosition(termID int32, shift uint8, initialTermID int32) int64 {
	return int64(termID-initialTermID) << shift
}

// ComputeTermID returns the term id holding position.
func ComputeTermID(position int64, shift uint8, initialTermID int32) int32 {
	return int32(position>>shift) + initialTermID
}

// ComputeTermOffset returns the offset of position within its term.
func ComputeTermOffset(position int64, termLength int) int {
	return int(position & int64(termLength-1))
}

// IndexByTermCount returns the partition used by the termCount-th term.
func IndexByTermCount(termCount int64) int { return int(termCount % PartitionCount) }

// IndexByTerm returns the partition that holds termID.
func IndexByTerm(initialTermID, termID int32) int {
	return int(uint32(termID-initialTermID) % PartitionCount)
}

// IndexByPosition returns the partition that holds position.
func IndexByPosition(position int64, shift uint8) int {
	return int((position >> shift) % PartitionCount)
}

// PackTail packs a term id and term offset into a raw tail counter.
func PackTail(termID int32, termOffset int32) int64 {
	return int64(termID)<<32 | int64(uint32(termOffset))
}

// TermIDFromTail returns the term id of a raw tail counter.
func TermIDFromTail(rawTail int64) int32 { return int32(rawTail >> 32) }

// TermOffsetFromTail returns the term offset of a raw tail counter, clamped
// to termLength (the raw offset may run past the end of the term).
func TermOffsetFromTail(rawTail int64, termLength int) int {
	return int(min(rawTail&0xFFFF_FFFF, int64(termLength)))
}

// ComputeLogLength is the total length of a log with the default page size.
func ComputeLogLength(termLength int) int {
	return Align(PartitionCount*termLength+MetaDataLength, PageSize)
}

// maxPossiblePosition is the highest position a log of termLength can
// reach: 2^31 terms.
func maxPossiblePosition(termLength int) int64 { return int64(termLength) << 31 }
