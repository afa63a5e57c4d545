package vfs

import (
	"errors"
	"fmt"
	"io"
)

// ReadFile returns the whole content of the file name. A file shorter than
// its size when read is an error (io.ErrUnexpectedEOF), never a short
// result.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); int64(n) < size {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// CopyFile copies src to dst, a new file (Create must not find one), and
// syncs dst. On failure dst is removed. The directory is not synced: the
// caller syncs it once after its copies.
func CopyFile(fsys FS, src, dst string) (err error) {
	b, err := ReadFile(fsys, src)
	if err != nil {
		return err
	}
	out, err := fsys.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = fsys.Remove(dst)
		}
	}()
	if n, err := out.WriteAt(b, 0); err != nil || n < len(b) {
		if err == nil {
			err = io.ErrShortWrite
		}
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return out.Sync()
}
