// Package hugepage asks the kernel to back large, long-lived allocations
// with transparent huge pages.
//
// The first touch of a page of fresh anonymous memory is a page fault.
// With 4 KiB pages a restore of 1M resting orders takes about 13,000 of
// them for its chunk buffers and index tables, and on a virtual machine
// (this project's measurement host) each costs 11-14 µs: most of a
// restart's time (docs/performance.md). The Go runtime advises none of
// its heap, so on a kernel whose transparent huge pages are in the
// default "madvise" mode that memory is always faulted in 4 KiB at a time.
// [Make] returns a slice that starts and ends on huge page boundaries and
// is advised for huge pages, so that it faults in 2 MiB at a time;
// [Advise] advises the aligned part of an allocation made otherwise.
// [Prefault] faults such memory in on another goroutine, ahead of the
// caller's writes.
//
// Contract:
//   - The advice is a hint: the memory's contents, size and lifetime are
//     unchanged, and nothing fails if the kernel ignores it (no
//     transparent huge pages, mode "never", another operating system:
//     then only the alignment remains).
//   - It covers only memory of the allocation it is given or makes.
//   - Make's alignment costs a huge page more than the huge pages the
//     slice needs: the head before the slice and the capacity past them,
//     which Make hands to the caller to use or leave. Fresh memory that
//     is never written is never faulted in, so what the caller leaves
//     unused costs the process no memory, but the Go heap counts it
//     (runtime.MemStats.HeapAlloc); Prefault faults in what it is given.
//   - It is meant for allocations that are written soon after and live
//     long (a huge page stays whole only while all of it is in use): the
//     caller decides which.
//   - The advice belongs to the address range, not to the allocation: once
//     the Go heap frees the allocation and reuses its memory, the kernel
//     may still back that range with huge pages (khugepaged collapses
//     partly used ones), so the process's resident memory over it can
//     reach the range's whole size. The range is one the caller filled
//     once, so this is bounded by what it used.
package hugepage

import "unsafe"

// Size is the huge page size Make aligns to: the 2 MiB of a PMD-level
// page with 4 KiB base pages.
const Size = 2 << 20

// Make returns a zeroed slice s of n Ts and head, the memory of the same
// allocation before s. When n Ts fill at least one huge page (and a T's
// size divides one), the allocation is a huge page larger than the whole
// huge pages n Ts need; s starts on the first huge page boundary in it,
// and those huge pages are advised. s's capacity runs to the end of the
// allocation (past the advised pages, at most a huge page), and head is
// what precedes s (less than a huge page): Make never touches either, and
// the caller may use them (as 4 KiB pages) or leave them. Otherwise s is
// make([]T, n) and head is nil.
func Make[T any](n int) (s, head []T) {
	var z T
	sz := unsafe.Sizeof(z)
	if sz == 0 || Size%sz != 0 || uintptr(n) < Size/sz || uintptr(n) > (1<<46)/sz {
		return make([]T, n), nil
	}
	per := int(Size / sz)          // Ts a huge page
	c := (n + per - 1) / per * per // whole huge pages
	all := make([]T, c+per)        // a huge page of room to align in
	p := uintptr(unsafe.Pointer(&all[0]))
	if p%sz != 0 {
		return all[:n], nil
	}
	off := int(((p+Size-1)&^(Size-1) - p) / sz)
	s = all[off : off+n]
	advise(unsafe.Pointer(&s[0]), uintptr(c)*sz)
	return s, all[:off:off]
}

// Prefault faults the 2 MiB-aligned part of s's backing array (its whole
// capacity) in on a goroutine of its own, a huge page at a time from the
// first, and returns at once; wait returns once it is done. The kernel
// maps and zeroes each page as a first write would, and leaves a page the
// caller has written already as it is, so the caller may write s
// meanwhile: the goroutine changes no byte of it. Zeroing a huge page of
// memory the host has not yet backed takes milliseconds on a virtual
// machine; Prefault moves that work to another core, ahead of a caller
// that fills s from its start. It does nothing where the kernel cannot
// (another operating system, Linux before 5.14).
func Prefault[T any](s []T) (wait func()) {
	done := make(chan struct{})
	wait = func() { <-done }
	// The goroutine holds base, a pointer into the allocation, so the
	// allocation lives until it is done.
	base, n := aligned(s)
	if n == 0 {
		close(done)
		return wait
	}
	go func() {
		defer close(done)
		populate(base, n)
	}()
	return wait
}

// Advise marks the 2 MiB-aligned part of s's backing array (its whole
// capacity) for huge pages. The memory outside that part, up to 2 MiB at
// each end, is left as it is; an array smaller than two huge pages may
// have no such part.
func Advise[T any](s []T) {
	if base, n := aligned(s); n > 0 {
		advise(base, n)
	}
}

// aligned returns the start and the length of the 2 MiB-aligned part of
// s's backing array, its whole capacity; n is 0 if it has none.
func aligned[T any](s []T) (base unsafe.Pointer, n uintptr) {
	if cap(s) == 0 {
		return nil, 0
	}
	var z T
	s = s[:cap(s)]
	p := uintptr(unsafe.Pointer(&s[0]))
	beg := (p + Size - 1) &^ (Size - 1)
	end := (p + uintptr(len(s))*unsafe.Sizeof(z)) &^ (Size - 1)
	if beg >= end {
		return nil, 0
	}
	return unsafe.Add(unsafe.Pointer(&s[0]), beg-p), end - beg
}
