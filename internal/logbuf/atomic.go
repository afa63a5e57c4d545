package logbuf

import (
	"sync/atomic"
	"unsafe"
)

// The frame length word and the tail counters are published with sync/atomic
// over the log's bytes. Offsets used here are multiples of 4 (int32) or 8
// (int64) from a base the allocator aligns to 8 bytes, and the atomics use
// native byte order, which is little-endian on every platform we build for
// (New refuses to run elsewhere).

func loadInt32(b []byte, off int) int32 {
	return atomic.LoadInt32((*int32)(unsafe.Pointer(unsafe.SliceData(b[off : off+4]))))
}

func storeInt32(b []byte, off int, v int32) {
	atomic.StoreInt32((*int32)(unsafe.Pointer(unsafe.SliceData(b[off:off+4]))), v)
}

func casInt32(b []byte, off int, old, v int32) bool {
	return atomic.CompareAndSwapInt32((*int32)(unsafe.Pointer(unsafe.SliceData(b[off:off+4]))), old, v)
}

func loadInt64(b []byte, off int) int64 {
	return atomic.LoadInt64((*int64)(unsafe.Pointer(unsafe.SliceData(b[off : off+8]))))
}

func storeInt64(b []byte, off int, v int64) {
	atomic.StoreInt64((*int64)(unsafe.Pointer(unsafe.SliceData(b[off:off+8]))), v)
}

// alignedBytes allocates n zeroed bytes aligned to 8 (large allocations are
// page-aligned in practice).
func alignedBytes(n int) []byte {
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
