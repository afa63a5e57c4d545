package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// TestCopyFile: the copy is synced (a crash clone keeping no unsynced data
// still has it once the directory is synced), an existing destination is
// refused and left as it was, and ReadFile returns the whole file.
func TestCopyFile(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("matchlog"), 1000)
	f, err := fs.Create("d/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := CopyFile(fs, "d/a", "d/b"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("d"); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(CrashCloneConfig{UnsyncedDataPercent: 0})
	if got, err := ReadFile(crashed, "d/b"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy after a crash: %d bytes, %v", len(got), err)
	}
	if err := CopyFile(fs, "d/b", "d/a"); !errors.Is(err, ErrExist) {
		t.Fatalf("copy over an existing file: %v", err)
	}
	if got, _ := ReadFile(fs, "d/a"); !bytes.Equal(got, want) {
		t.Fatal("a refused copy changed the existing file")
	}
	if _, err := ReadFile(fs, "d/none"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("read of a missing file: %v", err)
	}
}
