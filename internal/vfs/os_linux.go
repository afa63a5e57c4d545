//go:build linux

package vfs

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sync implements [File.Sync] with fdatasync.
func (f *osFile) Sync() error {
	return f.control("sync", unix.Fdatasync)
}

// Preallocate implements [File.Preallocate] with fallocate, mode 0, which
// allocates [0, size) and extends the length to size if it was shorter.
// Where the file system does not support fallocate it extends the file with
// ftruncate instead.
func (f *osFile) Preallocate(size int64) error {
	return f.preallocate(size, unix.Fallocate)
}

// preallocate is Preallocate with the fallocate call as a parameter, so that
// tests can exercise the fallback.
func (f *osFile) preallocate(size int64, fallocate func(fd int, mode uint32, off, n int64) error) error {
	if size < 0 {
		return pathErr("preallocate", f.name, syscall.EINVAL)
	}
	if size == 0 {
		return nil
	}
	err := f.control("preallocate", func(fd int) error { return fallocate(fd, 0, 0, size) })
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.extend(size)
	}
	return err
}

// control runs fn on the file descriptor, holding a reference to it so that
// a concurrent Close cannot recycle it, and retries on EINTR.
func (f *osFile) control(op string, fn func(fd int) error) error {
	rc, err := f.f.SyscallConn()
	if err != nil {
		return pathErr(op, f.name, err)
	}
	var opErr error
	err = rc.Control(func(fd uintptr) {
		for {
			opErr = fn(int(fd))
			if opErr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		// Control fails only when the file is closed or closing.
		return pathErr(op, f.name, os.ErrClosed)
	}
	if opErr != nil {
		return pathErr(op, f.name, opErr)
	}
	return nil
}
