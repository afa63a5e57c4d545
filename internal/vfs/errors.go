package vfs

import (
	"fmt"
	"io"
	"os"
)

// pathErr returns err for the operation op on path, prefixed "vfs: " and
// wrapped so that errors.Is sees err.
func pathErr(op, path string, err error) error {
	return fmt.Errorf("vfs: %w", &os.PathError{Op: op, Path: path, Err: err})
}

// linkErr is pathErr for operations on two paths.
func linkErr(op, oldname, newname string, err error) error {
	return fmt.Errorf("vfs: %w", &os.LinkError{Op: op, Old: oldname, New: newname, Err: err})
}

// wrapErr prefixes an operating-system error with "vfs: ". It leaves nil and
// io.EOF alone, since callers compare io.EOF with ==.
func wrapErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return fmt.Errorf("vfs: %w", err)
}
