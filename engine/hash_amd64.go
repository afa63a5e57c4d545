package engine

import "golang.org/x/sys/cpu"

// hashRun8 (hash_amd64.s) returns the sum of the resting-order digests of
// the n >= 1 orders from orders, whose first mix step gave h0 and whose
// price is px, with their accounts read from accts at their dense numbers
// clamped to lastAcct; it also returns the largest dense number it met, so
// the caller can tell a clamped read from a true one. It needs AVX-512
// (F, DQ, VL): see vecHash.
//
//go:noescape
func hashRun8(h0, px uint64, orders *order, n int, accts *uint64, lastAcct uint64) (sum, maxAcct uint64)

// vecHash reports whether hashRun8 may run here: the CPU has the
// instructions and the operating system saves the registers.
var vecHash = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL

// hashRunVec is hashRun8 behind the checks of its contract: it reports
// false (and the caller digests the run in Go) when it cannot run or when
// an account number lies outside accts, so a bad number fails as it would
// in Go.
func hashRunVec(h0, px uint64, orders []order, accts []uint64) (uint64, bool) {
	if !vecHash || len(orders) == 0 || len(accts) == 0 {
		return 0, false
	}
	sum, maxAcct := hashRun8(h0, px, &orders[0], len(orders), &accts[0], uint64(len(accts)-1))
	return sum, maxAcct < uint64(len(accts))
}
