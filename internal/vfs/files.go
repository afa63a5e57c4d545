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

// ReplaceFile replaces dir/name with data, crash-safely: it writes data to
// dir/tmp (a new file: Create must not find one), syncs it (SyncAll), renames
// it over dir/name and syncs dir. A crash at any point leaves dir/name
// either as it was or holding data, never a mix; what it can leave besides
// is dir/tmp (a crash before the rename), which the caller's next open must
// remove (it is not dir/name's content yet). On a failure before the rename
// dir/tmp is removed and dir/name is untouched; renamed reports whether
// the rename happened (then dir/name holds data, even if the directory sync
// failed, and only that sync's durability is in doubt).
//
// The file is size bytes long (at least len(data)): zeros follow data,
// made by Truncate before the write (sparse where the file system allows).
//
// With keep, the file written (now dir/name) is returned open for reading
// and writing, so that an owner holding the old file can switch to it;
// otherwise it is closed and nil is returned.
func ReplaceFile(fsys FS, dir, name, tmp string, data []byte, size int64, keep bool) (f File, renamed bool, err error) {
	tmpPath, path := fsys.Join(dir, tmp), fsys.Join(dir, name)
	out, err := fsys.Create(tmpPath)
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", tmpPath, err)
	}
	fail := func(err error) (File, bool, error) {
		_ = out.Close()
		if rerr := fsys.Remove(tmpPath); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", tmpPath, rerr))
		} else if serr := fsys.SyncDir(dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("sync %s: %w", dir, serr))
		}
		return nil, false, err
	}
	if size > int64(len(data)) {
		if err := out.Truncate(size); err != nil {
			return fail(fmt.Errorf("truncate %s to %d bytes: %w", tmpPath, size, err))
		}
	}
	if n, err := out.WriteAt(data, 0); err != nil || n < len(data) {
		if err == nil {
			err = io.ErrShortWrite
		}
		return fail(fmt.Errorf("write %s: %w", tmpPath, err))
	}
	if err := out.SyncAll(); err != nil {
		return fail(fmt.Errorf("sync %s: %w", tmpPath, err))
	}
	if !keep {
		if err := out.Close(); err != nil {
			return fail(fmt.Errorf("close %s: %w", tmpPath, err))
		}
	}
	if err := fsys.Rename(tmpPath, path); err != nil {
		if !keep {
			out = nopCloser{}
		}
		return fail(fmt.Errorf("rename %s to %s: %w", tmpPath, path, err))
	}
	if !keep {
		out = nil
	}
	if err := fsys.SyncDir(dir); err != nil {
		return out, true, fmt.Errorf("%s is in place, but syncing %s failed: %w", path, dir, err)
	}
	return out, true, nil
}

// nopCloser stands for a file already closed.
type nopCloser struct{ File }

func (nopCloser) Close() error { return nil }
