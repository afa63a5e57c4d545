package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestCaptureStartLargeFiles: the start's capture keeps a large segment,
// a large prepared segment (*.rec.prep) and a large segment waiting to be
// unlinked (*.rec.deleted) by length only, without
// reading them, and other files by content (chunk sums above
// rollbackWholeFile).
func TestCaptureStartLargeFiles(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("n/archive"); err != nil {
		t.Fatal(err)
	}
	size := int64(startGuardWhole) * 4
	files := map[string]bool{ // name -> kept by length only
		"n/archive/0-0.rec":                            true,
		"n/archive/0-4194304" + archive.PreparedSuffix: true,
		"n/archive/1-0.rec" + archive.DeletedSuffix:    true,
		"n/archive/0.idx":                              false,
	}
	for name := range files {
		f, err := mem.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// The files' reads, counted: only those kept by content are read.
	reads := map[string]int{}
	fsys := vfs.NewInjector(mem, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpRead), Before: func(_ vfs.Op, path string) error {
		reads[path]++
		return nil
	}})
	st, err := captureStart(fsys, []string{"n/archive"})
	if err != nil {
		t.Fatal(err)
	}
	for name, lengthOnly := range files {
		fs := st.files[name]
		if fs == nil {
			t.Fatalf("%s not captured", name)
		}
		if fs.sizeOnly != lengthOnly || fs.size != size {
			t.Errorf("%s: sizeOnly %v, size %d; want %v, %d", name, fs.sizeOnly, fs.size, lengthOnly, size)
		}
		if lengthOnly && reads[name] != 0 {
			t.Errorf("%s: read %d times, want none", name, reads[name])
		}
	}
}

// BenchmarkCaptureStart captures a node directory like the kill -9
// retention test's after a kill: 45 segment files of 64 KiB and a 1 MiB
// catalog (its default capacity), on the OS file system.
func BenchmarkCaptureStart(b *testing.B) {
	d := b.TempDir()
	a, c := filepath.Join(d, ArchiveDirName), filepath.Join(d, ClusterDirName)
	for _, dir := range []string{a, c} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	files := map[string]int{archive.CatalogFileName: archive.DefaultCatalogCapacity}
	for i := range 45 {
		files[fmt.Sprintf("%d-0.rec", i)] = 64 << 10
	}
	for name, size := range files {
		if err := os.WriteFile(filepath.Join(a, name), make([]byte, size), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := captureStart(vfs.Default, []string{c, a}); err != nil {
			b.Fatal(err)
		}
	}
}
