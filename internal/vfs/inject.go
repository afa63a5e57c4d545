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
// # Hooks
//
// [Injector.Hook] adds a [Hook] that runs around every operation of a kind
// in its set, whatever the index: to delay an operation (a slow sync), to
// crash a memory file system between two operations (take a
// [MemFS.CrashClone] in Before), to fail a chosen operation by path, or to
// watch what a file holds after each write. [Injector.WithFreeBytes] makes
// the injector tell a free space of the test's choosing. With an empty set
// and a negative index an injector fails nothing and only runs its hooks.
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
	hooks   []Hook
}

// Hook runs around the operations of an [Injector] whose kind is in Ops.
// Before, if set, runs first, on the operation's goroutine: a non-nil error
// fails the operation with that error, which then does nothing, is not
// counted and runs no After. After, if set, runs once the operation has
// returned, with its error; for an operation on an open file f is that
// file, unwrapped (reading it through f is not counted), else nil. Path is
// the file's name, the directory, or "old -> new" for a rename. Hooks run
// in the order they were added; they must be safe for concurrent use if
// the file system is used concurrently.
type Hook struct {
	Ops    OpSet
	Before func(op Op, path string) error
	After  func(op Op, path string, f File, err error)
}

// Hook adds h to in and returns in. Add hooks before the first operation.
func (in *Injector) Hook(h Hook) *Injector {
	in.hooks = append(in.hooks, h)
	return in
}

// WithFreeBytes returns in as an FS that also has the method
// FreeBytes(dir string) (uint64, error), answered by free: a test's free
// space for the archive's retention rule.
func (in *Injector) WithFreeBytes(free func(dir string) (uint64, error)) FS {
	return &freeInjector{Injector: in, free: free}
}

// freeInjector is an Injector with a FreeBytes method.
type freeInjector struct {
	*Injector
	free func(dir string) (uint64, error)
}

// FreeBytes returns what the test's function says.
func (f *freeInjector) FreeBytes(dir string) (uint64, error) { return f.free(dir) }

// before runs the Before hooks of op; the first error stops them.
func (in *Injector) before(op Op, path string) error {
	for _, h := range in.hooks {
		if h.Before != nil && h.Ops.Has(op) {
			if err := h.Before(op, path); err != nil {
				return err
			}
		}
	}
	return nil
}

// after runs the After hooks of op.
func (in *Injector) after(op Op, path string, f File, err error) {
	for _, h := range in.hooks {
		if h.After != nil && h.Ops.Has(op) {
			h.After(op, path, f, err)
		}
	}
}

// do runs one operation: the Before hooks, the injection, the operation
// and the After hooks.
func (in *Injector) do(op Op, path string, f File, run func() error) error {
	if len(in.hooks) == 0 {
		if err := in.hit(op, path); err != nil {
			return err
		}
		return run()
	}
	if err := in.before(op, path); err != nil {
		return err
	}
	err := in.hit(op, path)
	if err == nil {
		err = run()
	}
	in.after(op, path, f, err)
	return err
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

// open runs an operation that opens a file.
func (in *Injector) open(op Op, name string, open func(string) (File, error)) (File, error) {
	var f File
	err := in.do(op, name, nil, func() (err error) {
		f, err = in.wrap(open(name))
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Create implements [FS.Create].
func (in *Injector) Create(name string) (File, error) { return in.open(OpCreate, name, in.fs.Create) }

// Open implements [FS.Open].
func (in *Injector) Open(name string) (File, error) { return in.open(OpOpen, name, in.fs.Open) }

// OpenRW implements [FS.OpenRW].
func (in *Injector) OpenRW(name string) (File, error) { return in.open(OpOpen, name, in.fs.OpenRW) }

// Rename implements [FS.Rename].
func (in *Injector) Rename(oldname, newname string) error {
	return in.do(OpRename, oldname+" -> "+newname, nil, func() error { return in.fs.Rename(oldname, newname) })
}

// Remove implements [FS.Remove].
func (in *Injector) Remove(name string) error {
	return in.do(OpRemove, name, nil, func() error { return in.fs.Remove(name) })
}

// List implements [FS.List].
func (in *Injector) List(dir string) ([]string, error) {
	var names []string
	err := in.do(OpList, dir, nil, func() (err error) {
		names, err = in.fs.List(dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}

// MkdirAll implements [FS.MkdirAll].
func (in *Injector) MkdirAll(dir string) error {
	return in.do(OpMkdir, dir, nil, func() error { return in.fs.MkdirAll(dir) })
}

// Stat implements [FS.Stat].
func (in *Injector) Stat(name string) (int64, error) {
	var n int64
	err := in.do(OpStat, name, nil, func() (err error) {
		n, err = in.fs.Stat(name)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// SyncDir implements [FS.SyncDir].
func (in *Injector) SyncDir(dir string) error {
	return in.do(OpSyncDir, dir, nil, func() error { return in.fs.SyncDir(dir) })
}

// Join implements [FS.Join].
func (in *Injector) Join(elem ...string) string { return in.fs.Join(elem...) }

// injFile is a File of an Injector.
type injFile struct {
	f  File
	in *Injector
}

func (f *injFile) do(op Op, run func() error) error { return f.in.do(op, f.f.Name(), f.f, run) }

func (f *injFile) ReadAt(p []byte, off int64) (n int, err error) {
	err = f.do(OpRead, func() (err error) {
		n, err = f.f.ReadAt(p, off)
		return err
	})
	return n, err
}

func (f *injFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.do(OpWrite, func() (err error) {
		n, err = f.f.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *injFile) Close() error {
	closed := false
	err := f.do(OpClose, func() error { closed = true; return f.f.Close() })
	if !closed {
		_ = f.f.Close() // a failed close(2) still releases the descriptor
	}
	return err
}

func (f *injFile) Sync() error { return f.do(OpSync, f.f.Sync) }

func (f *injFile) SyncAll() error { return f.do(OpSync, f.f.SyncAll) }

func (f *injFile) Preallocate(size int64) error {
	return f.do(OpPreallocate, func() error { return f.f.Preallocate(size) })
}

func (f *injFile) Truncate(size int64) error {
	return f.do(OpTruncate, func() error { return f.f.Truncate(size) })
}

func (f *injFile) Size() (n int64, err error) {
	err = f.do(OpStat, func() (err error) {
		n, err = f.f.Size()
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (f *injFile) Name() string { return f.f.Name() }
