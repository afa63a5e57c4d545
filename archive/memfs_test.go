package archive

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestCatalogCrashMemFS adds recordings on vfs.MemFS and crashes at random
// points with random survival of unsynced writes: with SyncLevel 1 or 2
// every added recording survives intact; with level 0 reopening gives the
// catalog or a clean error.
func TestCatalogCrashMemFS(t *testing.T) {
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		for seed := range uint64(30) {
			r := rand.New(rand.NewPCG(seed, uint64(level)))
			fs := vfs.NewMem()
			if err := fs.MkdirAll("arch"); err != nil {
				t.Fatal(err)
			}
			if err := fs.SyncDir("/"); err != nil {
				t.Fatal(err)
			}
			c, err := CreateCatalogFile(fs, "arch", CatalogOptions{Capacity: 256, SyncLevel: SyncLevel(level)})
			if err != nil {
				t.Fatal(err)
			}
			n := 1 + r.IntN(8)
			for i := range n {
				if _, err := c.AddRecording(NewRecording{StopPosition: NullPosition, StreamID: int32(i), StrippedChannel: "aeron:ipc", OriginalChannel: "aeron:ipc?alias=x"}); err != nil {
					t.Fatal(err)
				}
			}
			if r.IntN(2) == 0 {
				c.RecordingStopped(0, 4096, 1)
			}
			crashed := fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: r.IntN(101), Rand: rand.New(rand.NewPCG(seed, 99))})
			c2, err := OpenCatalogFile(crashed, "arch", CatalogOptions{})
			if err != nil {
				if level == 0 && strings.HasPrefix(err.Error(), "archive: ") {
					continue // nothing was made durable: a clean error is all we ask
				}
				t.Fatalf("level %d seed %d: reopen: %v", level, seed, err)
			}
			got := c2.Recordings()
			if level == 0 {
				c2.Close()
				continue
			}
			if len(got) != n {
				t.Fatalf("level %d seed %d: %d of %d recordings survived", level, seed, len(got), n)
			}
			for i, d := range got {
				if d.RecordingID != int64(i) || d.StreamID != int32(i) {
					t.Fatalf("level %d seed %d: recording %d: %+v", level, seed, i, d)
				}
			}
			c2.Close()
		}
	})
}
