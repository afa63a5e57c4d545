package archive

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/matchlog/matchlog/internal/vfs"
)

// A Checkpoint keeps what an offline change of a stopped archive directory
// (a retention purge: Open, Detach, Close) may change before it deletes
// anything, so that the change can be undone byte for byte: the catalog
// copied to archive.catalog<suffix> and the mark file to
// archive-mark.dat<suffix> beside them (written and synced before the
// change starts), and the name and length of every other file of the
// directory. Restore puts the directory back; Discard removes the copies
// once the change is complete and checked.
//
// What Open, Detach and Close of a stopped archive write is the catalog
// (start position, a settled stop), the mark file, and segments Open
// creates or extends with zeros (a missing or short stop segment, see
// Open): Restore undoes exactly those. It cannot bring back a renamed,
// deleted or overwritten segment, and refuses to try when a file it
// recorded is gone (DeleteDetached or PurgeRecording renamed it).
type Checkpoint struct {
	fs      vfs.FS
	dir     string
	suffix  string
	hadMark bool
	files   map[string]int64 // name -> length, backups excluded
}

// NewCheckpoint copies the catalog and the mark file (if any) of the
// archive directory dir to <name><suffix> and records the other files.
// suffix must be non-empty, without a path separator, and name no existing
// file: an existing backup is never overwritten.
func NewCheckpoint(fsys vfs.FS, dir, suffix string) (*Checkpoint, error) {
	if suffix == "" || strings.ContainsAny(suffix, `/\`) {
		return nil, fmt.Errorf("archive: checkpoint suffix %q: want a non-empty name part", suffix)
	}
	c := &Checkpoint{fs: fsys, dir: dir, suffix: suffix, files: map[string]int64{}}
	if err := vfs.CopyFile(fsys, fsys.Join(dir, CatalogFileName), fsys.Join(dir, CatalogFileName+suffix)); err != nil {
		return nil, fmt.Errorf("archive: back up the catalog: %w", err)
	}
	err := vfs.CopyFile(fsys, fsys.Join(dir, MarkFileName), fsys.Join(dir, MarkFileName+suffix))
	switch {
	case err == nil:
		c.hadMark = true
	case errors.Is(err, vfs.ErrNotExist) && !fileExists(fsys, fsys.Join(dir, MarkFileName+suffix)):
	default:
		return nil, errors.Join(fmt.Errorf("archive: back up the mark file: %w", err), c.Discard())
	}
	if err := fsys.SyncDir(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("archive: sync %s: %w", dir, err), c.Discard())
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("archive: list %s: %w", dir, err), c.Discard())
	}
	for _, name := range names {
		if c.isBackup(name) {
			continue
		}
		size, err := fsys.Stat(fsys.Join(dir, name))
		if err != nil {
			continue // a directory
		}
		c.files[name] = size
	}
	return c, nil
}

func fileExists(fsys vfs.FS, p string) bool {
	_, err := fsys.Stat(p)
	return err == nil
}

func (c *Checkpoint) isBackup(name string) bool {
	return name == CatalogFileName+c.suffix || name == MarkFileName+c.suffix
}

// Backups are the names of the copies in the directory, the catalog's
// first.
func (c *Checkpoint) Backups() []string {
	out := []string{CatalogFileName + c.suffix}
	if c.hadMark {
		out = append(out, MarkFileName+c.suffix)
	}
	return out
}

// ErrCheckpointLost is returned by Restore, which then changes nothing,
// when a file the checkpoint recorded is gone (renamed for deletion or
// unlinked since): the directory can no longer be put back.
var ErrCheckpointLost = errors.New("archive: a file of the checkpoint is gone: the directory cannot be put back")

// Restore puts the directory back as NewCheckpoint found it: the copies
// are renamed over the catalog and the mark file (and consumed), a mark
// file that did not exist is removed, files created since are removed and
// files grown since are cut back to their length. The archive must be
// closed. When a recorded file is gone, or a copy, Restore changes nothing
// and returns an error wrapping ErrCheckpointLost.
func (c *Checkpoint) Restore() error {
	fsys, dir := c.fs, c.dir
	var lost []string
	for name := range c.files {
		if !fileExists(fsys, fsys.Join(dir, name)) {
			lost = append(lost, name)
		}
	}
	for _, name := range c.Backups() {
		if !fileExists(fsys, fsys.Join(dir, name)) {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		return fmt.Errorf("%w: %s", ErrCheckpointLost, strings.Join(lost, ", "))
	}
	var errs []error
	if err := fsys.Rename(fsys.Join(dir, CatalogFileName+c.suffix), fsys.Join(dir, CatalogFileName)); err != nil {
		errs = append(errs, fmt.Errorf("archive: put the catalog back: %w", err))
	}
	if c.hadMark {
		if err := fsys.Rename(fsys.Join(dir, MarkFileName+c.suffix), fsys.Join(dir, MarkFileName)); err != nil {
			errs = append(errs, fmt.Errorf("archive: put the mark file back: %w", err))
		}
	}
	names, err := fsys.List(dir)
	if err != nil {
		errs = append(errs, fmt.Errorf("archive: list %s: %w", dir, err))
	}
	for _, name := range names {
		if name == CatalogFileName || (name == MarkFileName && c.hadMark) || c.isBackup(name) {
			continue
		}
		p := fsys.Join(dir, name)
		size, err := fsys.Stat(p)
		if err != nil {
			continue // a directory
		}
		was, ok := c.files[name]
		switch {
		case !ok:
			if err := fsys.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("archive: remove %s, created since the checkpoint: %w", name, err))
			}
		case size > was:
			if err := truncateFile(fsys, p, was); err != nil {
				errs = append(errs, fmt.Errorf("archive: cut %s back to %d bytes: %w", name, was, err))
			}
		case size < was:
			errs = append(errs, fmt.Errorf("archive: %s is %d bytes, %d at the checkpoint: the cut bytes were not kept", name, size, was))
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		errs = append(errs, fmt.Errorf("archive: sync %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// Discard removes the copies (a missing one is not an error).
func (c *Checkpoint) Discard() error {
	var errs []error
	for _, name := range []string{CatalogFileName + c.suffix, MarkFileName + c.suffix} {
		if err := c.fs.Remove(c.fs.Join(c.dir, name)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("archive: remove %s: %w", name, err))
		}
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("archive: sync %s: %w", c.dir, err))
	}
	return errors.Join(errs...)
}

// CheckpointBackups lists the checkpoint copies in dir whose suffix starts
// with prefix (e.g. those an interrupted change left).
func CheckpointBackups(fsys vfs.FS, dir, prefix string) ([]string, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: list %s: %w", dir, err)
	}
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, CatalogFileName+prefix) || strings.HasPrefix(name, MarkFileName+prefix) {
			out = append(out, name)
		}
	}
	return out, nil
}

// RemoveCheckpointBackups removes the copies CheckpointBackups lists and
// returns their names.
func RemoveCheckpointBackups(fsys vfs.FS, dir, prefix string) ([]string, error) {
	names, err := CheckpointBackups(fsys, dir, prefix)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	for i, name := range names {
		if err := fsys.Remove(fsys.Join(dir, name)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
			return names[:i], fmt.Errorf("archive: remove %s: %w", name, err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return names, fmt.Errorf("archive: sync %s: %w", dir, err)
	}
	return names, nil
}

// truncateFile cuts p to size and syncs it.
func truncateFile(fsys vfs.FS, p string, size int64) error {
	f, err := fsys.OpenRW(p)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
