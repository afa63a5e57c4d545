package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPreallocateFallback(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	file, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	f := file.(*osFile)
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	for _, errno := range []error{unix.EOPNOTSUPP, unix.ENOSYS} {
		calls := 0
		unsupported := func(int, uint32, int64, int64) error { calls++; return errno }
		if err := f.preallocate(100, unsupported); err != nil {
			t.Fatalf("fallback after %v: %v", errno, err)
		}
		if calls != 1 {
			t.Fatalf("fallocate called %d times", calls)
		}
		if size, _ := f.Size(); size != 100 {
			t.Fatalf("size after the fallback: %d, want 100", size)
		}
	}
	// The fallback never shrinks.
	if err := f.preallocate(10, func(int, uint32, int64, int64) error { return unix.EOPNOTSUPP }); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 100 {
		t.Fatalf("fallback shrank the file to %d", size)
	}
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "abc" {
		t.Fatalf("contents after the fallback: %q, %v", buf, err)
	}

	// Other errors are reported, wrapped, with the path.
	err = f.preallocate(200, func(int, uint32, int64, int64) error { return unix.ENOSPC })
	if !errors.Is(err, syscall.ENOSPC) || err.Error() != "vfs: preallocate "+name+": no space left on device" {
		t.Fatalf("got %v", err)
	}
	// EINTR is retried.
	calls := 0
	eintrOnce := func(int, uint32, int64, int64) error {
		calls++
		if calls == 1 {
			return unix.EINTR
		}
		return nil
	}
	if err := f.preallocate(200, eintrOnce); err != nil || calls != 2 {
		t.Fatalf("EINTR: %v after %d calls", err, calls)
	}
}

func TestSyncAfterCloseIsErrClosed(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if err := f.Preallocate(10); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Preallocate after Close: %v", err)
	}
}
