//go:build !linux

package vfs

import "syscall"

// Sync implements [File.Sync]. Outside Linux it is fsync, as [File.SyncAll].
func (f *osFile) Sync() error { return wrapErr(f.f.Sync()) }

// Preallocate implements [File.Preallocate]. Outside Linux it extends the
// file with ftruncate, which reserves no blocks.
func (f *osFile) Preallocate(size int64) error {
	if size < 0 {
		return pathErr("preallocate", f.name, syscall.EINVAL)
	}
	return f.extend(size)
}
