package vfs

import (
	"errors"
	"slices"
)

// Route is an FS that sends the files whose names Alt matches to a second
// file system and everything else to Base. Directories exist on both:
// MkdirAll and SyncDir go to both, List merges both listings. Renames must
// stay on one side (both names matched, or neither).
//
// It is a diagnosis tool: PauseReport's SnapshotInMemory puts snapshot
// segments in memory to take their disk writes out of a measurement.
type Route struct {
	Base, Alt FS
	// Match reports whether a path belongs to Alt.
	Match func(name string) bool
}

var _ FS = (*Route)(nil)

func (r *Route) pick(name string) FS {
	if r.Match(name) {
		return r.Alt
	}
	return r.Base
}

// Create implements FS.
func (r *Route) Create(name string) (File, error) { return r.pick(name).Create(name) }

// Open implements FS.
func (r *Route) Open(name string) (File, error) { return r.pick(name).Open(name) }

// OpenRW implements FS.
func (r *Route) OpenRW(name string) (File, error) { return r.pick(name).OpenRW(name) }

// Rename implements FS; both names must be on the same side.
func (r *Route) Rename(oldname, newname string) error {
	if r.Match(oldname) != r.Match(newname) {
		return errors.New("vfs: route: rename across file systems: " + oldname + " -> " + newname)
	}
	return r.pick(oldname).Rename(oldname, newname)
}

// Remove implements FS.
func (r *Route) Remove(name string) error { return r.pick(name).Remove(name) }

// Stat implements FS.
func (r *Route) Stat(name string) (int64, error) { return r.pick(name).Stat(name) }

// Join implements FS.
func (r *Route) Join(elem ...string) string { return r.Base.Join(elem...) }

// MkdirAll implements FS: the directory is made on both.
func (r *Route) MkdirAll(dir string) error {
	if err := r.Base.MkdirAll(dir); err != nil {
		return err
	}
	return r.Alt.MkdirAll(dir)
}

// SyncDir implements FS: both.
func (r *Route) SyncDir(dir string) error {
	if err := r.Base.SyncDir(dir); err != nil {
		return err
	}
	if err := r.Alt.SyncDir(dir); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return nil
}

// List implements FS: Base's entries that Match rejects plus Alt's that
// it accepts, sorted.
func (r *Route) List(dir string) ([]string, error) {
	b, err := r.Base.List(dir)
	if err != nil {
		return nil, err
	}
	a, err := r.Alt.List(dir)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return nil, err
	}
	out := make([]string, 0, len(a)+len(b))
	for _, n := range b {
		if !r.Match(r.Join(dir, n)) {
			out = append(out, n)
		}
	}
	for _, n := range a {
		if r.Match(r.Join(dir, n)) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Rebase is an FS whose paths are taken relative to Root on FS: name n is
// FS's Join(Root, n). With Route it puts some files of a directory tree on
// another device (a tmpfs, say) under the same names.
type Rebase struct {
	FS   FS
	Root string
}

var _ FS = (*Rebase)(nil)

func (r *Rebase) p(name string) string { return r.FS.Join(r.Root, name) }

// Create implements FS.
func (r *Rebase) Create(name string) (File, error) { return r.FS.Create(r.p(name)) }

// Open implements FS.
func (r *Rebase) Open(name string) (File, error) { return r.FS.Open(r.p(name)) }

// OpenRW implements FS.
func (r *Rebase) OpenRW(name string) (File, error) { return r.FS.OpenRW(r.p(name)) }

// Rename implements FS.
func (r *Rebase) Rename(oldname, newname string) error {
	return r.FS.Rename(r.p(oldname), r.p(newname))
}

// Remove implements FS.
func (r *Rebase) Remove(name string) error { return r.FS.Remove(r.p(name)) }

// List implements FS.
func (r *Rebase) List(dir string) ([]string, error) { return r.FS.List(r.p(dir)) }

// MkdirAll implements FS.
func (r *Rebase) MkdirAll(dir string) error { return r.FS.MkdirAll(r.p(dir)) }

// Stat implements FS.
func (r *Rebase) Stat(name string) (int64, error) { return r.FS.Stat(r.p(name)) }

// SyncDir implements FS.
func (r *Rebase) SyncDir(dir string) error { return r.FS.SyncDir(r.p(dir)) }

// Join implements FS.
func (r *Rebase) Join(elem ...string) string { return r.FS.Join(elem...) }
