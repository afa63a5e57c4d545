package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// implementations lists every FS the conformance suite runs over, each with
// the directory the tests work in.
var implementations = []struct {
	name string
	new  func(t *testing.T) (vfs.FS, string)
}{
	{"os", func(t *testing.T) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/" }},
	{"mem-subdir", func(t *testing.T) (vfs.FS, string) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/data/x"); err != nil {
			t.Fatal(err)
		}
		return fs, "/data/x"
	}},
	{"injector", func(t *testing.T) (vfs.FS, string) {
		return vfs.NewInjector(vfs.NewMem(), vfs.AllOps, -1), "/"
	}},
}

// conformance is the suite every implementation must pass.
var conformance = []struct {
	name string
	fn   func(t *testing.T, fs vfs.FS, dir string)
}{
	{"CreateWriteRead", testCreateWriteRead},
	{"CreateExisting", testCreateExisting},
	{"OpenMissing", testOpenMissing},
	{"ReadOnly", testReadOnly},
	{"OpenRW", testOpenRW},
	{"ReadAtEOF", testReadAtEOF},
	{"WriteHole", testWriteHole},
	{"Truncate", testTruncate},
	{"Preallocate", testPreallocate},
	{"BadArguments", testBadArguments},
	{"Rename", testRename},
	{"RenameDir", testRenameDir},
	{"Remove", testRemove},
	{"List", testList},
	{"MkdirAll", testMkdirAll},
	{"SyncDir", testSyncDir},
	{"Closed", testClosed},
	{"RemoveWhileOpen", testRemoveWhileOpen},
	{"ConcurrentReadAt", testConcurrentReadAt},
}

func TestConformance(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) {
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) {
					fs, dir := impl.new(t)
					tc.fn(t, fs, dir)
				})
			}
		})
	}
}

func testCreateWriteRead(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != name {
		t.Errorf("Name() = %q, want %q", f.Name(), name)
	}
	if n, err := f.WriteAt([]byte("hello"), 0); n != 5 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if n, err := f.WriteAt([]byte(" world"), 5); n != 6 || err != nil {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if size, err := f.Size(); size != 11 || err != nil {
		t.Fatalf("Size = %d, %v, want 11", size, err)
	}
	buf := make([]byte, 11)
	if n, err := f.ReadAt(buf, 0); n != 11 || err != nil || string(buf) != "hello world" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, buf)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.SyncAll(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if size, err := fs.Stat(name); size != 11 || err != nil {
		t.Fatalf("Stat = %d, %v, want 11", size, err)
	}
	if got := readFile(t, fs, name); got != "hello world" {
		t.Fatalf("reopened: %q", got)
	}
}

func testCreateExisting(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "x")
	_, err := fs.Create(name)
	wantErrIs(t, err, vfs.ErrExist, name)
	if got := readFile(t, fs, name); got != "x" {
		t.Fatalf("failed Create changed the file: %q", got)
	}
	sub := fs.Join(dir, "sub")
	if err := fs.MkdirAll(sub); err != nil {
		t.Fatal(err)
	}
	_, err = fs.Create(sub)
	wantErrIs(t, err, vfs.ErrExist, sub)
	missing := fs.Join(dir, "nodir", "f")
	_, err = fs.Create(missing)
	wantErrIs(t, err, vfs.ErrNotExist, missing)
	_, err = fs.Create(fs.Join(name, "below-a-file"))
	wantErr(t, err, "Create below a file")
}

func testOpenMissing(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "missing")
	_, err := fs.Open(name)
	wantErrIs(t, err, vfs.ErrNotExist, name)
	_, err = fs.OpenRW(name)
	wantErrIs(t, err, vfs.ErrNotExist, name)
	_, err = fs.Stat(name)
	wantErrIs(t, err, vfs.ErrNotExist, name)
	sub := fs.Join(dir, "sub")
	if err := fs.MkdirAll(sub); err != nil {
		t.Fatal(err)
	}
	_, err = fs.Open(sub)
	wantErr(t, err, "Open of a directory")
	_, err = fs.OpenRW(sub)
	wantErr(t, err, "OpenRW of a directory")
	_, err = fs.Stat(sub)
	wantErr(t, err, "Stat of a directory")
}

func testReadOnly(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "abc")
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.WriteAt([]byte("x"), 0)
	wantErr(t, err, "WriteAt on a read-only file")
	wantErr(t, f.Truncate(1), "Truncate on a read-only file")
	wantErr(t, f.Preallocate(100), "Preallocate on a read-only file")
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync on a read-only file: %v", err)
	}
	if got := readFile(t, fs, name); got != "abc" {
		t.Fatalf("read-only file changed: %q", got)
	}
}

func testOpenRW(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "abcdef")
	f, err := fs.OpenRW(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XY"), 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, name); got != "abXYef" {
		t.Fatalf("got %q, want abXYef", got)
	}
}

func testReadAtEOF(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "abc")
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 1); n != 2 || err != io.EOF || string(buf[:n]) != "bc" {
		t.Fatalf("ReadAt across the end = %d, %v, %q; want 2, io.EOF, bc", n, err, buf[:n])
	}
	if n, err := f.ReadAt(buf, 3); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt past the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.ReadAt(nil, 100); n != 0 || err != nil {
		t.Fatalf("empty ReadAt past the end = %d, %v; want 0, nil", n, err)
	}
}

func testWriteHole(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("end"), 10); err != nil {
		t.Fatal(err)
	}
	if n, err := f.WriteAt(nil, 100); n != 0 || err != nil {
		t.Fatalf("empty WriteAt = %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, fs, name), "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00end"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func testTruncate(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("abcdefgh"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 3 {
		t.Fatalf("Size after shrinking = %d, want 3", size)
	}
	// Growing again must read zeros, not the bytes cut off before.
	if err := f.Truncate(6); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, name); got != "abc\x00\x00\x00" {
		t.Fatalf("got %q, want abc and three zeros", got)
	}
}

func testPreallocate(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(4096); err != nil {
		t.Fatal(err)
	}
	if size, err := f.Size(); size != 4096 || err != nil {
		t.Fatalf("Size after Preallocate(4096) = %d, %v", size, err)
	}
	if err := f.Preallocate(10); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 4096 {
		t.Fatalf("Preallocate(10) shrank the file to %d", size)
	}
	want := append([]byte("abc"), make([]byte, 4093)...)
	if got := readFile(t, fs, name); got != string(want) {
		t.Fatalf("Preallocate changed the contents")
	}
}

func testBadArguments(t *testing.T, fs vfs.FS, dir string) {
	f, err := fs.Create(fs.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, 1), -1)
	wantErr(t, err, "ReadAt(-1)")
	_, err = f.WriteAt([]byte("x"), -1)
	wantErr(t, err, "WriteAt(-1)")
	wantErr(t, f.Truncate(-1), "Truncate(-1)")
	wantErr(t, f.Preallocate(-1), "Preallocate(-1)")
	if size, _ := f.Size(); size != 0 {
		t.Fatalf("bad arguments changed the size to %d", size)
	}
}

func testRename(t *testing.T, fs vfs.FS, dir string) {
	a, b, c := fs.Join(dir, "a"), fs.Join(dir, "b"), fs.Join(dir, "c")
	writeFile(t, fs, a, "A")
	writeFile(t, fs, c, "C")
	if err := fs.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(a); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("Stat of the old name: %v", err)
	}
	if got := readFile(t, fs, b); got != "A" {
		t.Fatalf("new name holds %q", got)
	}
	if err := fs.Rename(b, c); err != nil {
		t.Fatalf("Rename over an existing file: %v", err)
	}
	if got := readFile(t, fs, c); got != "A" {
		t.Fatalf("replaced file holds %q", got)
	}
	if err := fs.Rename(c, c); err != nil {
		t.Fatalf("Rename onto itself: %v", err)
	}
	wantErrIs(t, fs.Rename(a, b), vfs.ErrNotExist, a)
	wantErrIs(t, fs.Rename(c, fs.Join(dir, "nodir", "x")), vfs.ErrNotExist, c)
	if got := readFile(t, fs, c); got != "A" {
		t.Fatalf("failed Rename changed the file: %q", got)
	}
}

func testRenameDir(t *testing.T, fs vfs.FS, dir string) {
	d := fs.Join(dir, "d")
	if err := fs.MkdirAll(fs.Join(d, "e")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, fs.Join(d, "e", "f"), "F")
	d2 := fs.Join(dir, "d2")
	if err := fs.Rename(d, d2); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, fs, fs.Join(d2, "e", "f")); got != "F" {
		t.Fatalf("file in the renamed directory holds %q", got)
	}
	wantErr(t, fs.Rename(d2, fs.Join(d2, "e", "inside")), "Rename of a directory below itself")
	writeFile(t, fs, fs.Join(dir, "file"), "x")
	wantErr(t, fs.Rename(fs.Join(dir, "file"), fs.Join(d2, "e")), "Rename of a file over a non-empty directory")
}

func testRemove(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "x")
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(name); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("Stat after Remove: %v", err)
	}
	wantErrIs(t, fs.Remove(name), vfs.ErrNotExist, name)
	sub := fs.Join(dir, "sub")
	if err := fs.MkdirAll(sub); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fs, fs.Join(sub, "f"), "x")
	wantErr(t, fs.Remove(sub), "Remove of a non-empty directory")
	if err := fs.Remove(fs.Join(sub, "f")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(sub); err != nil {
		t.Fatalf("Remove of an empty directory: %v", err)
	}
}

func testList(t *testing.T, fs vfs.FS, dir string) {
	for _, n := range []string{"b", "a", "c"} {
		writeFile(t, fs, fs.Join(dir, n), n)
	}
	if err := fs.MkdirAll(fs.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(names, want) {
		t.Fatalf("List = %q, want %q", names, want)
	}
	names, err = fs.List(fs.Join(dir, "d"))
	if err != nil || len(names) != 0 {
		t.Fatalf("List of an empty directory = %q, %v", names, err)
	}
	missing := fs.Join(dir, "missing")
	_, err = fs.List(missing)
	wantErrIs(t, err, vfs.ErrNotExist, missing)
	_, err = fs.List(fs.Join(dir, "a"))
	wantErr(t, err, "List of a file")
}

func testMkdirAll(t *testing.T, fs vfs.FS, dir string) {
	deep := fs.Join(dir, "a", "b", "c")
	if err := fs.MkdirAll(deep); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll(deep); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	names, err := fs.List(fs.Join(dir, "a"))
	if err != nil || !slices.Equal(names, []string{"b"}) {
		t.Fatalf("List = %q, %v", names, err)
	}
	writeFile(t, fs, fs.Join(dir, "file"), "x")
	wantErr(t, fs.MkdirAll(fs.Join(dir, "file", "sub")), "MkdirAll below a file")
	wantErr(t, fs.MkdirAll(fs.Join(dir, "file")), "MkdirAll over a file")
}

func testSyncDir(t *testing.T, fs vfs.FS, dir string) {
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	sub := fs.Join(dir, "sub")
	if err := fs.MkdirAll(sub); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(sub); err != nil {
		t.Fatal(err)
	}
	missing := fs.Join(dir, "missing")
	wantErrIs(t, fs.SyncDir(missing), vfs.ErrNotExist, missing)
	writeFile(t, fs, fs.Join(dir, "file"), "x")
	wantErr(t, fs.SyncDir(fs.Join(dir, "file")), "SyncDir of a file")
}

func testClosed(t *testing.T, fs vfs.FS, dir string) {
	f, err := fs.Create(fs.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, f.Close(), "second Close")
	_, err = f.ReadAt(make([]byte, 1), 0)
	wantErrIs(t, err, os.ErrClosed, "f")
	_, err = f.WriteAt([]byte("x"), 0)
	wantErrIs(t, err, os.ErrClosed, "f")
	wantErrIs(t, f.Sync(), os.ErrClosed, "f")
	wantErrIs(t, f.SyncAll(), os.ErrClosed, "f")
	wantErr(t, f.Truncate(0), "Truncate after Close")
	wantErr(t, f.Preallocate(10), "Preallocate after Close")
	_, err = f.Size()
	wantErr(t, err, "Size after Close")
}

func testRemoveWhileOpen(t *testing.T, fs vfs.FS, dir string) {
	if fs == vfs.Default && runtime.GOOS == "windows" {
		t.Skip("Windows cannot remove open files")
	}
	name := fs.Join(dir, "f")
	writeFile(t, fs, name, "abc")
	f, err := fs.OpenRW(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("d"), 3); err != nil {
		t.Fatalf("WriteAt after Remove: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "abcd" {
		t.Fatalf("ReadAt after Remove = %q, %v", buf, err)
	}
}

func testConcurrentReadAt(t *testing.T, fs vfs.FS, dir string) {
	name := fs.Join(dir, "f")
	content := bytes.Repeat([]byte("0123456789"), 100)
	writeFile(t, fs, name, string(content))
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			buf := make([]byte, 10)
			for i := range 100 {
				off := int64((g*7 + i) % 100 * 10)
				if _, err := f.ReadAt(buf, off); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(buf, content[off:off+10]) {
					t.Errorf("ReadAt(%d) = %q", off, buf)
					return
				}
			}
		})
	}
	wg.Wait()
}
