package vfs_test

import (
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// writeFile creates name with content, syncs it and closes it. It does not
// sync the directory.
func writeFile(t *testing.T, fs vfs.FS, name, content string) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the contents of name.
func readFile(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	s, err := tryRead(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryRead(fs vfs.FS, name string) (string, error) {
	f, err := fs.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return "", err
	}
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); err != nil && !(err == io.EOF && n == len(buf)) {
		return "", err
	}
	return string(buf), nil
}

// dump returns every file and directory below dir: files map to their
// contents, directories (keyed with a trailing slash) to "".
func dump(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			p := fs.Join(dir, name)
			if _, err := fs.List(p); err == nil {
				out[p+"/"] = ""
				walk(p)
				continue
			}
			out[p] = readFile(t, fs, p)
		}
	}
	walk(dir)
	return out
}

func dumpString(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		if !strings.HasSuffix(k, "/") {
			b.WriteString(" = ")
			b.WriteString(strings.ReplaceAll(m[k], "\x00", "."))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// wantErrIs fails the test unless err wraps target and reads as a vfs error
// naming path.
func wantErrIs(t *testing.T, err, target error, path string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one satisfying errors.Is(err, %v)", err, target)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "vfs: ") || !strings.Contains(msg, path) {
		t.Fatalf("error %q: want the prefix %q and the path %q", msg, "vfs: ", path)
	}
}

// wantErr fails the test if err is nil.
func wantErr(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error", what)
	}
	if !strings.HasPrefix(err.Error(), "vfs: ") {
		t.Fatalf("%s: error %q lacks the prefix \"vfs: \"", what, err)
	}
}
