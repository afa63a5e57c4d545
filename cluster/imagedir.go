package cluster

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// CreateStoppedMarkFile writes cdir/cluster-mark.dat as the mark file of a
// stopped matchlog node (activity timestamp -1), for a tool that assembles
// a node directory no node has run in yet (a backup image: its
// recording.log and archive written through their packages' APIs), so that
// Open takes the directory as a matchlog node's. It refuses a directory
// that holds a mark file already: it never overwrites one.
func CreateStoppedMarkFile(fsys vfs.FS, cdir string, nowMs int64) error {
	path := fsys.Join(cdir, MarkFileName)
	if _, err := fsys.Stat(path); err == nil {
		return fmt.Errorf("cluster: %s exists: a mark file is never overwritten", path)
	} else if !errors.Is(err, vfs.ErrNotExist) {
		return fmt.Errorf("cluster: %w", err)
	}
	f, err := writeMarkFile(fsys, cdir, nowMs, cdir)
	if err != nil {
		return fmt.Errorf("cluster: mark file: %w", err)
	}
	err = stampMarkFile(f, -1)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: mark file %s: %w", path, err)
	}
	return nil
}
