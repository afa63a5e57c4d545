package aeronhost

import (
	"unsafe"

	"github.com/lirm/aeron-go/aeron/atomic"
)

// bytesOf returns buf[off:off+n] as a Go slice over the same memory (an
// Aeron term buffer, or the container's reassembly buffer), valid only as
// long as the caller of the fragment handler allows. It checks the bounds
// itself: aeron-go's own accessors end the process (log.Fatal) when they
// are out of range.
func bytesOf(buf *atomic.Buffer, off, n int32) ([]byte, bool) {
	if buf == nil || off < 0 || n < 0 || int64(off)+int64(n) > int64(buf.Capacity()) {
		return nil, false
	}
	if n == 0 {
		return []byte{}, true
	}
	p := buf.Ptr()
	if p == nil {
		return nil, false
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, int(off))), int(n)), true
}

// emptyPayload backs zero-length offers: aeron-go wants a buffer with an
// address even for an empty message.
var emptyPayload [1]byte

// wrapBytes points buf at msg without copying.
func wrapBytes(buf *atomic.Buffer, msg []byte) {
	if len(msg) == 0 {
		buf.Wrap(unsafe.Pointer(&emptyPayload[0]), 0)
		return
	}
	buf.Wrap(unsafe.Pointer(unsafe.SliceData(msg)), int32(len(msg)))
}
