package vfs

import (
	"io"
	"os"
)

// File is an open file. Reads and writes are positional; a File has no
// cursor. Implementations are safe for concurrent ReadAt calls, but writes,
// Sync and Truncate must not run concurrently with each other.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's data durable (fdatasync). It does not
	// necessarily make a changed length or a new directory entry durable.
	Sync() error
	// SyncAll makes data and metadata durable (fsync).
	SyncAll() error
	// Preallocate reserves space for [0, size) without changing the bytes
	// already there; the file's length becomes at least size.
	Preallocate(size int64) error
	// Truncate sets the length of the file.
	Truncate(size int64) error
	// Size returns the current length.
	Size() (int64, error)
	// Name returns the path the file was opened with.
	Name() string
}

// FS is a file system.
type FS interface {
	// Create creates a new file, failing if it already exists.
	Create(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	// OpenRW opens an existing file for reading and writing.
	OpenRW(name string) (File, error)
	// Rename renames a file, replacing newname if it exists.
	Rename(oldname, newname string) error
	// Remove removes a file.
	Remove(name string) error
	// List returns the names (not paths) of the entries of a directory,
	// sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string) error
	// Stat returns the size of a file, or an error satisfying
	// errors.Is(err, os.ErrNotExist) when it does not exist. Stat of a
	// directory is an error; use List to look into directories.
	Stat(name string) (int64, error)
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
	// Join joins path elements.
	Join(elem ...string) string
}

// ErrNotExist is returned, wrapped, for missing files.
var ErrNotExist = os.ErrNotExist

// ErrExist is returned, wrapped, when Create finds an existing file.
var ErrExist = os.ErrExist

var (
	_ FS = osFS{}
	_ FS = (*MemFS)(nil)
	_ FS = (*Injector)(nil)
)
