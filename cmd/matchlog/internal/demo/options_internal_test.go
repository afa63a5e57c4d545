package demo

import (
	"context"
	"github.com/matchlog/matchlog/archive"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncLevelDefault: the zero Options run the node at the documented
// default file sync level, 1, and an explicit level, 0 included, is what the
// node gets.
func TestSyncLevelDefault(t *testing.T) {
	for _, c := range []struct {
		level *archive.SyncLevel
		want  archive.SyncLevel
	}{{nil, 1}, {new(archive.SyncLevel(0)), 0}, {new(archive.SyncLevel(1)), 1}, {new(archive.SyncLevel(2)), 2}} {
		o := Options{SyncLevel: c.level}
		o.defaults()
		if got := o.nodeOptions("d").FileSyncLevel; got != c.want {
			t.Errorf("SyncLevel %v: node runs at file sync level %d, want %d", c.level, got, c.want)
		}
	}
	if DefaultSyncLevel != 1 {
		t.Fatalf("DefaultSyncLevel %d, documented 1", DefaultSyncLevel)
	}
}

// TestSyncLevelRefused: a level outside 0..2 fails before the node
// directory is created.
func TestSyncLevelRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	for _, l := range []archive.SyncLevel{-1, 3} {
		_, err := Run(context.Background(), Options{Dir: dir, Orders: 10, SyncLevel: &l})
		if err == nil || !strings.Contains(err.Error(), "give 0, 1 or 2") {
			t.Fatalf("level %d: %v", l, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("level %d: %s created (%v)", l, dir, err)
		}
	}
}
