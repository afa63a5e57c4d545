package archive

import (
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// SyncLevel is a file sync level, as Aeron's fileSyncLevel and
// catalogFileSyncLevel: what a write that must be durable does after it.
// The archive's segments and catalog, the cluster's recording.log and its
// node-state.dat all take this one type; a level is checked (Check) by the
// first library call that receives it, before anything is created.
type SyncLevel int

// The sync levels.
const (
	// SyncNone never syncs: the page cache decides when data reaches the
	// disk (a crash of the machine may lose what the node acknowledged).
	SyncNone SyncLevel = 0
	// SyncData syncs the data (File.Sync, fdatasync).
	SyncData SyncLevel = 1
	// SyncAll syncs data and metadata (File.SyncAll, fsync).
	SyncAll SyncLevel = 2
)

// Check reports a level outside 0, 1, 2.
func (l SyncLevel) Check() error {
	if l < SyncNone || l > SyncAll {
		return fmt.Errorf("archive: sync level %d is not 0 (no sync), 1 (data) or 2 (data and metadata)", int(l))
	}
	return nil
}

// Sync makes f's writes durable as the level says: nothing at 0, File.Sync
// at 1, File.SyncAll at 2 (and above).
func (l SyncLevel) Sync(f vfs.File) error {
	switch {
	case l >= SyncAll:
		return f.SyncAll()
	case l == SyncData:
		return f.Sync()
	}
	return nil
}

func (l SyncLevel) String() string {
	switch l {
	case SyncNone:
		return "0 (no sync)"
	case SyncData:
		return "1 (data)"
	case SyncAll:
		return "2 (data and metadata)"
	}
	return fmt.Sprintf("SyncLevel(%d)", int(l))
}
