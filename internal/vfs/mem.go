package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/matchlog/matchlog/internal/invariants"
)

// maxMemSize bounds the length of a file in a [MemFS]; writes, truncations
// and preallocations beyond it fail with EFBIG instead of exhausting memory.
// It fits an int on 32-bit platforms.
const maxMemSize = 1<<31 - 1

// MemFS is an in-memory [FS] that records what has been synced, so that
// [MemFS.CrashClone] can produce the state a crash would leave (see the
// package documentation for the model). Create one with [NewMem]. A MemFS is
// safe for concurrent use; one mutex guards all of it.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
	// capacity bounds the bytes of all files (SetCapacity); 0: no bound.
	capacity int64
}

// SetCapacity makes m a volume of n bytes (n <= 0: unbounded, the
// default): from then on a WriteAt, Preallocate or Truncate that would
// make the files reachable from the root hold more than n bytes together
// (each file counted at its current length, sparse or not) fails with an
// error satisfying errors.Is(err, syscall.ENOSPC) that names the file and
// the bytes it lacked, and changes nothing, as a full disk fails write(2)
// and fallocate(2). Lowering the capacity below what the files hold
// deletes nothing; raising it is space returning. A removed file still
// open no longer counts. Crash clones are unbounded.
func (m *MemFS) SetCapacity(n int64) {
	m.mu.Lock()
	m.capacity = max(n, 0)
	m.mu.Unlock()
}

// Free returns the bytes the files may still grow by under the capacity
// (SetCapacity; never negative), or -1 when m is unbounded. Tests hand it
// to [Injector.WithFreeBytes] as the volume's free space.
func (m *MemFS) Free() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.capacity == 0 {
		return -1
	}
	return max(m.capacity-m.usedLocked(), 0)
}

// usedLocked is the bytes of the files reachable from the root, each
// counted once.
func (m *MemFS) usedLocked() int64 {
	var used int64
	seen := map[*memNode]bool{}
	var walk func(d *memNode)
	walk = func(d *memNode) {
		for _, c := range d.children {
			switch {
			case c.dir:
				walk(c)
			case !seen[c]:
				seen[c] = true
				used += int64(len(c.data))
			}
		}
	}
	walk(m.root)
	return used
}

// growLocked checks that f may grow to size bytes under the capacity.
func (f *memFile) growLocked(op string, size int64) error {
	m := f.fs
	grow := size - int64(len(f.n.data))
	if m.capacity == 0 || grow <= 0 {
		return nil
	}
	free := m.capacity - m.usedLocked()
	if grow <= free {
		return nil
	}
	return pathErr(op, f.name, &noSpaceError{need: grow, free: max(free, 0)})
}

// noSpaceError is ENOSPC with the bytes an operation lacked.
type noSpaceError struct{ need, free int64 }

func (e *noSpaceError) Error() string {
	return fmt.Sprintf("%v: needs %d bytes, %d free", syscall.ENOSPC, e.need, e.free)
}

func (e *noSpaceError) Unwrap() error { return syscall.ENOSPC }

// NewMem returns an empty memory file system.
func NewMem() *MemFS { return &MemFS{root: newMemDir()} }

// memNode is a file or a directory. All fields are guarded by the owning
// MemFS's mutex.
type memNode struct {
	dir bool

	// Directories.
	children map[string]*memNode // current entries
	durable  map[string]*memNode // entries as of the last SyncDir
	dirLog   []dirOp             // entry changes since the last SyncDir, oldest first

	// Files.
	data    []byte   // current contents
	synced  []byte   // contents as of the last Sync or SyncAll
	fileLog []fileOp // changes since the last sync, oldest first
}

func newMemDir() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// dirOp is one change to a directory's entries: del is removed (if not ""),
// then set is pointed at node (if not "").
type dirOp struct {
	del  string
	set  string
	node *memNode
}

func (o dirOp) apply(entries map[string]*memNode) {
	if o.del != "" {
		delete(entries, o.del)
	}
	if o.set != "" {
		entries[o.set] = o.node
	}
}

// changeLocked applies an entry change and records it as unsynced.
func (d *memNode) changeLocked(o dirOp) {
	o.apply(d.children)
	d.dirLog = append(d.dirLog, o)
}

// syncDirLocked makes the current entries durable.
func (d *memNode) syncDirLocked() {
	if invariants.Enabled {
		replayed := maps.Clone(d.durable)
		for _, o := range d.dirLog {
			o.apply(replayed)
		}
		if !maps.Equal(replayed, d.children) {
			panic("vfs: directory log does not reproduce the current entries")
		}
	}
	d.durable = maps.Clone(d.children)
	d.dirLog = nil
}

type fileOpKind uint8

const (
	opWriteAt  fileOpKind = iota // write data at off
	opTruncate                   // set the length to off
	opGrow                       // extend the length to off if shorter
)

// fileOp is one change to a file's contents.
type fileOp struct {
	kind fileOpKind
	off  int64
	data []byte
}

func (o *fileOp) apply(b []byte) []byte {
	switch o.kind {
	case opWriteAt:
		if end := o.off + int64(len(o.data)); end > int64(len(b)) {
			b = resize(b, end)
		}
		copy(b[o.off:], o.data)
	case opTruncate:
		b = resize(b, o.off)
	case opGrow:
		if o.off > int64(len(b)) {
			b = resize(b, o.off)
		}
	}
	return b
}

// resize returns b with length n, zero-filling any growth. The caller
// guarantees 0 <= n <= maxMemSize.
func resize(b []byte, n int64) []byte {
	if n <= int64(len(b)) {
		return b[:n]
	}
	old := len(b)
	b = slices.Grow(b, int(n)-old)[:n]
	clear(b[old:]) // capacity may hold bytes from before a truncation
	return b
}

// changeFileLocked applies a content change and records it as unsynced.
func (n *memNode) changeFileLocked(o fileOp) {
	n.data = o.apply(n.data)
	n.fileLog = append(n.fileLog, o)
}

// syncLocked makes the current contents durable.
func (n *memNode) syncLocked() {
	for i := range n.fileLog {
		n.synced = n.fileLog[i].apply(n.synced)
	}
	n.fileLog = nil
	if invariants.Enabled && !bytes.Equal(n.synced, n.data) {
		panic("vfs: file log does not reproduce the current contents")
	}
}

// split returns the components of a cleaned path; none for the root.
func split(name string) []string {
	p := path.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walkLocked returns the node at comps; name and op only label errors.
func (m *MemFS) walkLocked(op, name string, comps []string) (*memNode, error) {
	n := m.root
	for _, c := range comps {
		if !n.dir {
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		child, ok := n.children[c]
		if !ok {
			return nil, pathErr(op, name, os.ErrNotExist)
		}
		n = child
	}
	return n, nil
}

// parentLocked returns the directory holding name and name's last
// component. The root has no parent: it is not a valid argument.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	comps := split(name)
	if len(comps) == 0 {
		return nil, "", pathErr(op, name, syscall.EINVAL)
	}
	d, err := m.walkLocked(op, name, comps[:len(comps)-1])
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return d, comps[len(comps)-1], nil
}

// Create implements [FS.Create].
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parentLocked("create", name)
	if err != nil {
		return nil, err
	}
	if _, ok := d.children[base]; ok {
		return nil, pathErr("create", name, os.ErrExist)
	}
	n := &memNode{}
	d.changeLocked(dirOp{set: base, node: n})
	return &memFile{fs: m, n: n, name: name, writable: true}, nil
}

// Open implements [FS.Open].
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

// OpenRW implements [FS.OpenRW].
func (m *MemFS) OpenRW(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("open", name, split(name))
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, writable: writable}, nil
}

// Rename implements [FS.Rename]. Like os.Rename on Unix it replaces a file
// with a file, refuses to replace a directory (ErrExist) and refuses to move
// a directory below itself.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	oldComps, newComps := split(oldname), split(newname)
	if len(oldComps) == 0 || len(newComps) == 0 {
		return linkErr("rename", oldname, newname, syscall.EINVAL)
	}
	od, err := m.walkLocked("rename", oldname, oldComps[:len(oldComps)-1])
	if err != nil {
		return linkErr("rename", oldname, newname, unwrapPath(err))
	}
	ob := oldComps[len(oldComps)-1]
	if !od.dir {
		return linkErr("rename", oldname, newname, syscall.ENOTDIR)
	}
	// Both parents resolve before the old name, as in rename(2).
	nd, err := m.walkLocked("rename", newname, newComps[:len(newComps)-1])
	if err != nil {
		return linkErr("rename", oldname, newname, unwrapPath(err))
	}
	if !nd.dir {
		return linkErr("rename", oldname, newname, syscall.ENOTDIR)
	}
	n, ok := od.children[ob]
	if !ok {
		return linkErr("rename", oldname, newname, os.ErrNotExist)
	}
	nb := newComps[len(newComps)-1]
	if target, ok := nd.children[nb]; ok {
		switch {
		case target.dir:
			return linkErr("rename", oldname, newname, os.ErrExist)
		case n.dir:
			return linkErr("rename", oldname, newname, syscall.ENOTDIR)
		}
	}
	if slices.Equal(oldComps, newComps) {
		return nil // a file onto itself
	}
	if n.dir && len(newComps) > len(oldComps) && slices.Equal(newComps[:len(oldComps)], oldComps) {
		return linkErr("rename", oldname, newname, syscall.EINVAL)
	}
	if od == nd {
		od.changeLocked(dirOp{del: ob, set: nb, node: n})
	} else {
		od.changeLocked(dirOp{del: ob})
		nd.changeLocked(dirOp{set: nb, node: n})
	}
	return nil
}

// unwrapPath returns the cause inside an error made by pathErr.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Remove implements [FS.Remove]. It removes files and empty directories.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n, ok := d.children[base]
	if !ok {
		return pathErr("remove", name, os.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	d.changeLocked(dirOp{del: base})
	return nil
}

// List implements [FS.List].
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.walkLocked("open", dir, split(dir))
	if err != nil {
		return nil, err
	}
	if !d.dir {
		return nil, pathErr("open", dir, syscall.ENOTDIR)
	}
	names := slices.AppendSeq(make([]string, 0, len(d.children)), maps.Keys(d.children))
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements [FS.MkdirAll].
func (m *MemFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.root
	for _, c := range split(dir) {
		child, ok := d.children[c]
		if !ok {
			child = newMemDir()
			d.changeLocked(dirOp{set: c, node: child})
		} else if !child.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		d = child
	}
	return nil
}

// Stat implements [FS.Stat].
func (m *MemFS) Stat(name string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("stat", name, split(name))
	if err != nil {
		return 0, err
	}
	if n.dir {
		return 0, pathErr("stat", name, syscall.EISDIR)
	}
	return int64(len(n.data)), nil
}

// SyncDir implements [FS.SyncDir]: the directory's current entries become
// durable.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.walkLocked("syncdir", dir, split(dir))
	if err != nil {
		return err
	}
	if !d.dir {
		return pathErr("syncdir", dir, syscall.ENOTDIR)
	}
	d.syncDirLocked()
	return nil
}

// Join implements [FS.Join] with path.Join.
func (m *MemFS) Join(elem ...string) string { return path.Join(elem...) }

// memFile is an open file of a MemFS. It stays usable after the file is
// removed or renamed, as on Unix.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool
	closed   bool // guarded by fs.mu
}

// checkLocked returns the error for op on f, if f is closed or, for writes,
// read-only.
func (f *memFile) checkLocked(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if write && !f.writable {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, syscall.EINVAL)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("writeat", f.name, syscall.EINVAL)
	}
	if off > maxMemSize || int64(len(p)) > maxMemSize-off {
		return 0, pathErr("write", f.name, syscall.EFBIG)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.growLocked("write", off+int64(len(p))); err != nil {
		return 0, err
	}
	f.n.changeFileLocked(fileOp{kind: opWriteAt, off: off, data: bytes.Clone(p)})
	return len(p), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("close", false); err != nil {
		return err
	}
	f.closed = true
	return nil
}

func (f *memFile) Sync() error { return f.sync("sync") }

func (f *memFile) SyncAll() error { return f.sync("syncall") }

// sync implements both Sync and SyncAll: the memory FS keeps no metadata
// beyond the length, which fdatasync already covers.
func (f *memFile) sync(op string) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked(op, false); err != nil {
		return err
	}
	f.n.syncLocked()
	return nil
}

func (f *memFile) Preallocate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("preallocate", true); err != nil {
		return err
	}
	switch {
	case size < 0:
		return pathErr("preallocate", f.name, syscall.EINVAL)
	case size > maxMemSize:
		return pathErr("preallocate", f.name, syscall.EFBIG)
	case size > int64(len(f.n.data)):
		if err := f.growLocked("preallocate", size); err != nil {
			return err
		}
		f.n.changeFileLocked(fileOp{kind: opGrow, off: size})
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate", true); err != nil {
		return err
	}
	switch {
	case size < 0:
		return pathErr("truncate", f.name, syscall.EINVAL)
	case size > maxMemSize:
		return pathErr("truncate", f.name, syscall.EFBIG)
	case size != int64(len(f.n.data)):
		if err := f.growLocked("truncate", size); err != nil {
			return err
		}
		f.n.changeFileLocked(fileOp{kind: opTruncate, off: size})
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat", false); err != nil {
		return 0, err
	}
	return int64(len(f.n.data)), nil
}

func (f *memFile) Name() string { return f.name }
