package vfs

import (
	"os"
	"path/filepath"
	"syscall"
)

// Default is the file system of the operating system. Paths are passed to
// the os package unchanged and Join is filepath.Join.
var Default FS = osFS{}

type osFS struct{}

// Create implements [FS.Create] with O_CREATE|O_EXCL|O_RDWR.
func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, wrapErr(err)
	}
	return &osFile{f: f, name: name}, nil
}

// Open implements [FS.Open].
func (osFS) Open(name string) (File, error) { return openOS(name, os.O_RDONLY) }

// OpenRW implements [FS.OpenRW].
func (osFS) OpenRW(name string) (File, error) { return openOS(name, os.O_RDWR) }

// openOS opens an existing file, refusing directories so that the OS and the
// memory FS agree.
func openOS(name string, flag int) (File, error) {
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return nil, wrapErr(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	}
	if err != nil {
		_ = f.Close()
		return nil, wrapErr(err)
	}
	return &osFile{f: f, name: name}, nil
}

// Rename implements [FS.Rename].
func (osFS) Rename(oldname, newname string) error {
	return wrapErr(os.Rename(oldname, newname))
}

// Remove implements [FS.Remove]. It removes files and empty directories.
func (osFS) Remove(name string) error { return wrapErr(os.Remove(name)) }

// List implements [FS.List].
func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, wrapErr(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// MkdirAll implements [FS.MkdirAll].
func (osFS) MkdirAll(dir string) error { return wrapErr(os.MkdirAll(dir, 0o755)) }

// Stat implements [FS.Stat].
func (osFS) Stat(name string) (int64, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return 0, wrapErr(err)
	}
	if fi.IsDir() {
		return 0, pathErr("stat", name, syscall.EISDIR)
	}
	return fi.Size(), nil
}

// SyncDir implements [FS.SyncDir]: it opens the directory and fsyncs it.
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return wrapErr(err)
	}
	fi, err := d.Stat()
	if err == nil && !fi.IsDir() {
		err = &os.PathError{Op: "syncdir", Path: dir, Err: syscall.ENOTDIR}
	}
	if err == nil {
		err = d.Sync()
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return wrapErr(err)
}

// Join implements [FS.Join] with filepath.Join.
func (osFS) Join(elem ...string) string { return filepath.Join(elem...) }

// osFile is a File of [Default]. Sync and Preallocate live in the
// OS-specific files.
type osFile struct {
	f    *os.File
	name string
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, wrapErr(err)
}

func (f *osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, wrapErr(err)
}

func (f *osFile) Close() error { return wrapErr(f.f.Close()) }

func (f *osFile) SyncAll() error { return wrapErr(f.f.Sync()) }

func (f *osFile) Truncate(size int64) error { return wrapErr(f.f.Truncate(size)) }

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, wrapErr(err)
	}
	return fi.Size(), nil
}

func (f *osFile) Name() string { return f.name }

// extend makes the file at least size bytes long with ftruncate; it is
// Preallocate where fallocate is unavailable.
func (f *osFile) extend(size int64) error {
	cur, err := f.Size()
	if err != nil {
		return err
	}
	if cur >= size {
		return nil
	}
	return wrapErr(f.f.Truncate(size))
}
