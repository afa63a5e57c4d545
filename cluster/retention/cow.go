package retention

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sync"

	"github.com/matchlog/matchlog/internal/vfs"
)

// cowFS is a copy-on-write view of a file system: every read goes to base
// until the file is written, created, renamed or removed through the view;
// from then on the file lives in memory, and base is never written. The
// restart check of a purge opens the node on it, so that the node's start
// (mark files, a new term in recording.log and the log, a segment
// prepared ahead) happens in memory and the member's directory stays
// exactly as the purge left it. A file written through the view is copied
// whole into memory first: the check costs the memory of the files a start
// writes (the recording log, the catalog, the mark files, the log's last
// segment and the one prepared after it).
type cowFS struct {
	base vfs.FS
	up   *vfs.MemFS

	mu     sync.Mutex
	copied map[string]bool // names that live in up
	gone   map[string]bool // names of base removed or renamed away
}

var _ vfs.FS = (*cowFS)(nil)

func newCOW(base vfs.FS) *cowFS {
	return &cowFS{base: base, up: vfs.NewMem(), copied: map[string]bool{}, gone: map[string]bool{}}
}

func key(name string) string { return path.Clean(name) }

// inBase reports whether name is a file of base the view still shows.
func (c *cowFS) inBase(k string) bool {
	if c.gone[k] {
		return false
	}
	_, err := c.base.Stat(k)
	return err == nil
}

// copyUp brings base's file k into memory (the caller holds mu).
func (c *cowFS) copyUp(k string) error {
	if c.copied[k] {
		return nil
	}
	if !c.inBase(k) {
		return fmt.Errorf("vfs: open %s: %w", k, vfs.ErrNotExist)
	}
	in, err := c.base.Open(k)
	if err != nil {
		return err
	}
	defer in.Close()
	size, err := in.Size()
	if err != nil {
		return err
	}
	b := make([]byte, size)
	if n, err := in.ReadAt(b, 0); int64(n) < size {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("copy %s into memory: %w", k, err)
	}
	if err := c.up.MkdirAll(path.Dir(k)); err != nil {
		return err
	}
	out, err := c.up.Create(k)
	if err != nil {
		return err
	}
	if _, err := out.WriteAt(b, 0); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	c.copied[k] = true
	return nil
}

func (c *cowFS) Create(name string) (vfs.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	if c.copied[k] || c.inBase(k) {
		return nil, fmt.Errorf("vfs: create %s: %w", name, vfs.ErrExist)
	}
	if err := c.up.MkdirAll(path.Dir(k)); err != nil {
		return nil, err
	}
	f, err := c.up.Create(k)
	if err == nil {
		c.copied[k] = true
	}
	return f, err
}

func (c *cowFS) Open(name string) (vfs.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	switch {
	case c.copied[k]:
		return c.up.Open(k)
	case c.gone[k]:
		return nil, fmt.Errorf("vfs: open %s: %w", name, vfs.ErrNotExist)
	}
	return c.base.Open(name)
}

func (c *cowFS) OpenRW(name string) (vfs.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	if err := c.copyUp(k); err != nil {
		return nil, err
	}
	return c.up.OpenRW(k)
}

func (c *cowFS) Rename(oldname, newname string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, n := key(oldname), key(newname)
	if err := c.copyUp(o); err != nil {
		return err
	}
	if err := c.up.MkdirAll(path.Dir(n)); err != nil {
		return err
	}
	if err := c.up.Rename(o, n); err != nil {
		return err
	}
	delete(c.copied, o)
	c.gone[o] = true
	c.copied[n] = true
	return nil
}

func (c *cowFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	if c.copied[k] {
		if err := c.up.Remove(k); err != nil {
			return err
		}
		delete(c.copied, k)
		c.gone[k] = true
		return nil
	}
	if !c.inBase(k) {
		return fmt.Errorf("vfs: remove %s: %w", name, vfs.ErrNotExist)
	}
	c.gone[k] = true
	return nil
}

func (c *cowFS) List(dir string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := key(dir)
	names, berr := c.base.List(dir)
	var out []string
	for _, n := range names {
		k := path.Join(d, n)
		if !c.gone[k] || c.copied[k] {
			out = append(out, n)
		}
	}
	up, uerr := c.up.List(d)
	if berr != nil && uerr != nil {
		return nil, berr
	}
	for _, n := range up {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *cowFS) MkdirAll(dir string) error { return c.up.MkdirAll(key(dir)) }

func (c *cowFS) Stat(name string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	switch {
	case c.copied[k]:
		return c.up.Stat(k)
	case c.gone[k]:
		return 0, fmt.Errorf("vfs: stat %s: %w", name, vfs.ErrNotExist)
	}
	return c.base.Stat(name)
}

// SyncDir has nothing to make durable: the view is thrown away.
func (c *cowFS) SyncDir(string) error { return nil }

func (c *cowFS) Join(elem ...string) string { return c.base.Join(elem...) }
