package snapshot

import "encoding/binary"

// The stream checksum (End.checksum) is FNV-1a's constants applied to 64-bit
// words in four interleaved lanes. For each message from MeSnapshotBegin up to
// and excluding End, in stream order, over the message's encoded bytes (its
// SBE header to the end of its last group entry, never a batch's unused tail),
// with h the running checksum:
//
//	lanes a0..a3 start at h, h^s1, h^s2, h^s3
//	each 32-byte block, words w0..w3:         ai = (ai ^ wi) * prime
//	each remaining full 8-byte word w:          a0 = (a0 ^ w) * prime
//	the last 0-7 bytes, zero-extended, as w:    a0 = (a0 ^ w) * prime
//	fold:   h = ((((a0*prime) ^ a1)*prime ^ a2)*prime ^ a3) * prime
//	then the message length:                    h = (h ^ len) * prime
//
// starting from the FNV-1a 64 offset basis, all words little-endian. Every
// step is a bijection of the value it updates for fixed other inputs, and the
// fold is a bijection of each lane for fixed other lanes, so changing any one
// word of any message always changes the result.
//
// Four lanes rather than one chain: a multiply has a latency of several
// cycles but a throughput of one a cycle, so four independent chains run at
// about one word a cycle: over a full Orders batch four lanes take less
// than half the time of one chain (docs/performance.md has the figures).
const (
	checksumBasis uint64 = 0xcbf29ce484222325
	checksumPrime uint64 = 0x100000001b3

	laneSeed1 uint64 = 0x9E3779B97F4A7C15
	laneSeed2 uint64 = 0xC2B2AE3D27D4EB4F
	laneSeed3 uint64 = 0x165667B19E3779F9
)

// checksum folds b into h by the rule above. The main loop takes two
// 32-byte blocks an iteration through index arithmetic on a bounds-checked
// 64-byte window: the same lanes and the same values as one block an
// iteration, with half the loop's upkeep (docs/performance.md).
func checksum(h uint64, b []byte) uint64 {
	n := len(b)
	a0, a1, a2, a3 := h, h^laneSeed1, h^laneSeed2, h^laneSeed3
	i := 0
	for ; i+64 <= n; i += 64 {
		c := b[i : i+64 : i+64]
		a0 = (a0 ^ binary.LittleEndian.Uint64(c[0:8])) * checksumPrime
		a1 = (a1 ^ binary.LittleEndian.Uint64(c[8:16])) * checksumPrime
		a2 = (a2 ^ binary.LittleEndian.Uint64(c[16:24])) * checksumPrime
		a3 = (a3 ^ binary.LittleEndian.Uint64(c[24:32])) * checksumPrime
		a0 = (a0 ^ binary.LittleEndian.Uint64(c[32:40])) * checksumPrime
		a1 = (a1 ^ binary.LittleEndian.Uint64(c[40:48])) * checksumPrime
		a2 = (a2 ^ binary.LittleEndian.Uint64(c[48:56])) * checksumPrime
		a3 = (a3 ^ binary.LittleEndian.Uint64(c[56:64])) * checksumPrime
	}
	if i+32 <= n {
		c := b[i : i+32 : i+32]
		a0 = (a0 ^ binary.LittleEndian.Uint64(c[0:8])) * checksumPrime
		a1 = (a1 ^ binary.LittleEndian.Uint64(c[8:16])) * checksumPrime
		a2 = (a2 ^ binary.LittleEndian.Uint64(c[16:24])) * checksumPrime
		a3 = (a3 ^ binary.LittleEndian.Uint64(c[24:32])) * checksumPrime
		i += 32
	}
	for ; i+8 <= n; i += 8 {
		a0 = (a0 ^ binary.LittleEndian.Uint64(b[i:i+8])) * checksumPrime
	}
	var w uint64
	for j := n - 1; j >= i; j-- {
		w = w<<8 | uint64(b[j])
	}
	a0 = (a0 ^ w) * checksumPrime
	h = ((((a0*checksumPrime)^a1)*checksumPrime^a2)*checksumPrime ^ a3) * checksumPrime
	return (h ^ uint64(n)) * checksumPrime
}
