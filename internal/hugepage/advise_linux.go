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

// populate faults in n bytes at p, both huge-page aligned, a huge page at
// a time from the first, with MADV_POPULATE_WRITE (Linux 5.14): the kernel
// maps and zeroes each page as a write would and leaves a page already
// mapped as it is. It stops at the first error (an older kernel: EINVAL).
func populate(p unsafe.Pointer, n uintptr) {
	for off := uintptr(0); off < n; off += Size {
		if unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, off)), min(Size, n-off)), unix.MADV_POPULATE_WRITE) != nil {
			return
		}
	}
}
