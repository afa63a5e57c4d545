//go:build unix

package archive

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestSparseSegments: a recording with SparseSegments has full-length
// segment files that take only the blocks written; a preallocated one
// takes the whole segment. Both replay the same frames.
func TestSparseSegments(t *testing.T) {
	dir := t.TempDir()
	a := openTest(t, vfs.Default, dir, Options{SegmentLength: 16 << 20, FileSyncLevel: 1, CatalogSyncLevel: 1, MarkErrorBufferLength: 4096})
	defer a.Close()
	allocated := func(id int64) (size, blocks int64) {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, SegmentFileName(id, 0)), &st); err != nil {
			t.Fatal(err)
		}
		return st.Size, st.Blocks * 512
	}
	for _, sparse := range []bool{true, false} {
		h := newHarness(t, 1<<20, 1408, 0, 1, 0)
		r, err := a.StartRecording(Source{Log: h.log, Image: h.img, SparseSegments: sparse})
		if err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, 1000)
		for range 64 {
			if pos, err := h.pub.Offer(payload); err != nil || pos < 0 {
				t.Fatalf("offer %d %v", pos, err)
			}
		}
		if _, err := r.Record(h.pub.Position()); err != nil {
			t.Fatal(err)
		}
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
		size, used := allocated(r.ID())
		if size != 16<<20 {
			t.Fatalf("sparse=%v: segment length %d", sparse, size)
		}
		if sparse && used > 1<<20 {
			t.Fatalf("sparse segment uses %d bytes of disk for 64 KiB of frames", used)
		}
		if !sparse && used < 16<<20 {
			t.Skipf("this file system does not preallocate (%d bytes used): nothing to compare", used)
		}
		t.Logf("sparse=%v: %d bytes on disk", sparse, used)
	}
}
