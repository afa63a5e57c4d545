package vfs_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestMemCapacity: past its capacity a memory FS fails what would grow it
// with ENOSPC, naming the file and the bytes it lacked, and changes
// nothing; raised capacity lets the same write through.
func TestMemCapacity(t *testing.T) {
	m := vfs.NewMem()
	if got := m.Free(); got != -1 {
		t.Fatalf("unbounded Free = %d, want -1", got)
	}
	m.SetCapacity(100)
	f, err := m.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 60), 0); err != nil {
		t.Fatal(err)
	}
	if got := m.Free(); got != 40 {
		t.Fatalf("Free = %d, want 40", got)
	}
	g, err := m.Create("b")
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"write":       func() error { _, err := g.WriteAt(make([]byte, 50), 0); return err },
		"preallocate": func() error { return g.Preallocate(41) },
		"truncate":    func() error { return g.Truncate(41) },
		"overwrite":   func() error { _, err := f.WriteAt(make([]byte, 10), 95); return err },
	} {
		err := op()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: error %v, want ENOSPC", name, err)
		}
		if !strings.Contains(err.Error(), "needs") || !strings.Contains(err.Error(), " 40 free") {
			t.Fatalf("%s: error %q names no bytes", name, err)
		}
		if n, _ := g.Size(); n != 0 {
			t.Fatalf("%s: b has %d bytes after the failure", name, n)
		}
		if n, _ := f.Size(); n != 60 {
			t.Fatalf("%s: a has %d bytes after the failure", name, n)
		}
	}
	// Rewriting bytes that exist needs no space.
	if _, err := f.WriteAt(make([]byte, 60), 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt(make([]byte, 100), 0); err != nil {
		t.Fatalf("after the remove: %v", err)
	}
	m.SetCapacity(0)
	if err := g.Preallocate(1 << 20); err != nil {
		t.Fatalf("unbounded again: %v", err)
	}
}
