package snapshot

import "encoding/binary"

// The stream checksum (End.checksum): FNV-1a's constants applied to 64-bit
// words instead of bytes. For each message from MeSnapshotBegin up to and
// excluding End, in stream order, over the message's encoded bytes (its SBE
// header to the end of its last group entry, never a batch's unused tail):
//
//	for each full 8-byte little-endian word w:   h = (h ^ w) * prime
//	the last 0-7 bytes, zero-extended, as w:      h = (h ^ w) * prime
//	then the message length:                      h = (h ^ len) * prime
//
// starting from the FNV-1a 64 offset basis. Each step is a bijection of h
// for a fixed word, so changing any one word of any message always changes
// the result. It costs one multiply per 8 bytes: about 6 per order.
const (
	checksumBasis uint64 = 0xcbf29ce484222325
	checksumPrime uint64 = 0x100000001b3
)

func checksum(h uint64, b []byte) uint64 {
	n := len(b)
	for len(b) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(b)) * checksumPrime
		b = b[8:]
	}
	var w uint64
	for i := len(b) - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	h = (h ^ w) * checksumPrime
	return (h ^ uint64(n)) * checksumPrime
}
