//go:build linux && amd64

package engine

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestHashRunVecClamps puts the account table at the very end of a
// readable page, before a page that faults on any access, and hands the
// vector digest account numbers far past the table: it must clamp its
// reads (and report the numbers), never touch the next page.
func TestHashRunVecClamps(t *testing.T) {
	if !vecHash {
		t.Skip("no vector digest on this CPU")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	const na = 4
	accts := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[page-na*8])), na)
	for i := range accts {
		accts[i] = uint64(i + 1)
	}
	run := make([]order, 9)
	for i := range run {
		run[i] = order{pa: pxAcct(1, uint32(i%na)), sk: 1 << skSeqPos, id: uint64(i + 1), qty: 1}
	}
	for bad := range run {
		r := append([]order(nil), run...)
		r[bad].pa = pxAcct(1, na+uint32(bad)*1000)
		if _, ok := hashRunVec(1, 2, r, accts); ok {
			t.Fatalf("account number %d at %d accepted", r[bad].acct(), bad)
		}
	}
}
