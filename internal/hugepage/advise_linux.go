package hugepage

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// advise marks n bytes at p, both huge-page aligned, MADV_HUGEPAGE. An
// error (a kernel without transparent huge pages) leaves the memory as it
// was, which is all a hint may do.
func advise(p unsafe.Pointer, n uintptr) {
	_ = unix.Madvise(unsafe.Slice((*byte)(p), n), unix.MADV_HUGEPAGE)
}
