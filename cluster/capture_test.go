package cluster

import (
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestCaptureStartLargeFiles: the start's capture keeps a large segment
// and a large prepared segment (*.rec.prep) by length only, without
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
