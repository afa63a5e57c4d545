//go:build !linux

package hugepage

import "unsafe"

// advise does nothing: transparent huge pages are a Linux facility.
func advise(unsafe.Pointer, uintptr) {}
