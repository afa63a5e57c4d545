//go:build !linux

package hugepage

import "unsafe"

// advise does nothing: transparent huge pages are a Linux facility.
func advise(unsafe.Pointer, uintptr) {}

// populate does nothing: the memory is faulted in as it is written.
func populate(unsafe.Pointer, uintptr) {}
