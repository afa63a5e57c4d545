package vfs

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Op is the kind of an operation, as [Injector] counts and fails them.
type Op uint8

// The operation kinds. Open covers Open and OpenRW, Sync covers Sync and
// SyncAll, Stat covers FS.Stat and File.Size, Mkdir is MkdirAll. Join and
// Name cannot fail and are not counted.
const (
	OpCreate Op = iota
	OpOpen
	OpRead
	OpWrite
	OpSync
	OpPreallocate
	OpTruncate
	OpRename
	OpRemove
	OpList
	OpSyncDir
	OpClose
	OpStat
	OpMkdir
	numOps
)

var opNames = [numOps]string{
	OpCreate:      "create",
	OpOpen:        "open",
	OpRead:        "read",
	OpWrite:       "write",
	OpSync:        "sync",
	OpPreallocate: "preallocate",
	OpTruncate:    "truncate",
	OpRename:      "rename",
	OpRemove:      "remove",
	OpList:        "list",
	OpSyncDir:     "syncdir",
	OpClose:       "close",
	OpStat:        "stat",
	OpMkdir:       "mkdir",
}

// String returns the lower-case name of the kind, as used in errors.
func (op Op) String() string {
	if op < numOps {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", uint8(op))
}

// OpSet is a set of operation kinds.
type OpSet uint32

// Sets of operation kinds.
const (
	// AllOps holds every kind.
	AllOps OpSet = 1<<numOps - 1
	// WriteOps holds the kinds that change the file system or make changes
	// durable.
	WriteOps = OpSet(1<<OpCreate | 1<<OpWrite | 1<<OpSync | 1<<OpPreallocate |
		1<<OpTruncate | 1<<OpRename | 1<<OpRemove | 1<<OpSyncDir | 1<<OpMkdir)
)

// Ops returns the set of the given kinds.
func Ops(ops ...Op) OpSet {
	var s OpSet
	for _, op := range ops {
		if op < numOps {
			s |= 1 << op
		}
	}
	return s
}

// Has reports whether op is in s.
func (s OpSet) Has(op Op) bool { return op < numOps && s&(1<<op) != 0 }

// ErrInjected is the cause of every error an [Injector] injects:
// errors.Is(err, ErrInjected) tells an injected failure from a real one.
var ErrInjected = errors.New("vfs: injected error")

// InjectedError is the error an [Injector] returns from the operation it
// fails. It unwraps to [ErrInjected].
type InjectedError struct {
	Op    Op     // kind of the failed operation
	Path  string // its path; "old -> new" for a rename
	Index int64  // its index among the operations of the injector's set
}

func (e *InjectedError) Error() string {
	return fmt.Sprintf("vfs: injected error: %s %s (operation %d)", e.Op, e.Path, e.Index)
}

func (e *InjectedError) Unwrap() error { return ErrInjected }

// Injector is an [FS] that passes every operation to another FS, counts the
// operations by kind, and fails one chosen operation: the one with the
// configured index (counting from 0) among the operations whose kind is in
// the configured set. The failed operation does nothing, except a failed
// Close, which still closes the underlying file. Only that one operation
// fails; the ones after it run normally.
//
// An Injector is safe for concurrent use, but which operation gets an index
// is then up to the scheduler; sweeps want a single goroutine.
//
// # Sweeps
//
// To check that every failure is reported, run the workload with index
// i = 0, 1, 2, … on a fresh Injector each time. While [Injector.Injected]
// is non-nil after a run, the run must have returned an error satisfying
// errors.Is(err, ErrInjected) (or handled it as designed); the first run
// where Injected is nil reached the end without hitting index i, so every
// failure point has been covered. [Injector.Count] bounds the sweep: a run
// with index -1 injects nothing and counts the points there are.
type Injector struct {
	fs      FS
	ops     OpSet
	index   int64
	matched atomic.Int64 // operations seen whose kind is in ops
	counts  [numOps]atomic.Int64
	fired   atomic.Pointer[InjectedError]
}

// NewInjector returns an Injector over fs (which must not be nil) that fails
// the operation with the given index among those of a kind in ops. A
// negative index, or an empty set, fails nothing, which leaves a counter.
func NewInjector(fs FS, ops OpSet, index int64) *Injector {
	return &Injector{fs: fs, ops: ops & AllOps, index: index}
}

// Count returns how many operations of a kind in ops the injector has seen,
// the failed one included.
func (in *Injector) Count(ops OpSet) int64 {
	var n int64
	for op := range numOps {
		if ops.Has(op) {
			n += in.counts[op].Load()
		}
	}
	return n
}

// Injected returns the error injected so far, or nil if the chosen
// operation has not been reached.
func (in *Injector) Injected() error {
	if e := in.fired.Load(); e != nil {
		return e
	}
	return nil
}

// hit counts an operation and returns the injected error if it is the
// chosen one.
func (in *Injector) hit(op Op, path string) error {
	in.counts[op].Add(1)
	if !in.ops.Has(op) {
		return nil
	}
	i := in.matched.Add(1) - 1
	if i != in.index {
		return nil
	}
	e := &InjectedError{Op: op, Path: path, Index: i}
	in.fired.Store(e)
	return e
}

func (in *Injector) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &injFile{f: f, in: in}, nil
}

// Create implements [FS.Create].
func (in *Injector) Create(name string) (File, error) {
	if err := in.hit(OpCreate, name); err != nil {
		return nil, err
	}
	return in.wrap(in.fs.Create(name))
}

// Open implements [FS.Open].
func (in *Injector) Open(name string) (File, error) {
	if err := in.hit(OpOpen, name); err != nil {
		return nil, err
	}
	return in.wrap(in.fs.Open(name))
}

// OpenRW implements [FS.OpenRW].
func (in *Injector) OpenRW(name string) (File, error) {
	if err := in.hit(OpOpen, name); err != nil {
		return nil, err
	}
	return in.wrap(in.fs.OpenRW(name))
}

// Rename implements [FS.Rename].
func (in *Injector) Rename(oldname, newname string) error {
	if err := in.hit(OpRename, oldname+" -> "+newname); err != nil {
		return err
	}
	return in.fs.Rename(oldname, newname)
}

// Remove implements [FS.Remove].
func (in *Injector) Remove(name string) error {
	if err := in.hit(OpRemove, name); err != nil {
		return err
	}
	return in.fs.Remove(name)
}

// List implements [FS.List].
func (in *Injector) List(dir string) ([]string, error) {
	if err := in.hit(OpList, dir); err != nil {
		return nil, err
	}
	return in.fs.List(dir)
}

// MkdirAll implements [FS.MkdirAll].
func (in *Injector) MkdirAll(dir string) error {
	if err := in.hit(OpMkdir, dir); err != nil {
		return err
	}
	return in.fs.MkdirAll(dir)
}

// Stat implements [FS.Stat].
func (in *Injector) Stat(name string) (int64, error) {
	if err := in.hit(OpStat, name); err != nil {
		return 0, err
	}
	return in.fs.Stat(name)
}

// SyncDir implements [FS.SyncDir].
func (in *Injector) SyncDir(dir string) error {
	if err := in.hit(OpSyncDir, dir); err != nil {
		return err
	}
	return in.fs.SyncDir(dir)
}

// Join implements [FS.Join].
func (in *Injector) Join(elem ...string) string { return in.fs.Join(elem...) }

// injFile is a File of an Injector.
type injFile struct {
	f  File
	in *Injector
}

func (f *injFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.in.hit(OpRead, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *injFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.in.hit(OpWrite, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

func (f *injFile) Close() error {
	if err := f.in.hit(OpClose, f.f.Name()); err != nil {
		_ = f.f.Close() // a failed close(2) still releases the descriptor
		return err
	}
	return f.f.Close()
}

func (f *injFile) Sync() error {
	if err := f.in.hit(OpSync, f.f.Name()); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *injFile) SyncAll() error {
	if err := f.in.hit(OpSync, f.f.Name()); err != nil {
		return err
	}
	return f.f.SyncAll()
}

func (f *injFile) Preallocate(size int64) error {
	if err := f.in.hit(OpPreallocate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Preallocate(size)
}

func (f *injFile) Truncate(size int64) error {
	if err := f.in.hit(OpTruncate, f.f.Name()); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

func (f *injFile) Size() (int64, error) {
	if err := f.in.hit(OpStat, f.f.Name()); err != nil {
		return 0, err
	}
	return f.f.Size()
}

func (f *injFile) Name() string { return f.f.Name() }
