//go:build unix

package archivebench

import "syscall"

// syncAll flushes every file system (sync(2)) so that one bench run's dirty
// pages are not written back during the next.
func syncAll() { syscall.Sync() }
