package archive

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// osFS is a test-only vfs.FS over the operating system, so these tests do
// not depend on the vfs implementations.
type osFS struct{}

type osFile struct{ *os.File }

var _ vfs.FS = osFS{}

func (f osFile) Sync() error                  { return f.File.Sync() }
func (f osFile) SyncAll() error               { return f.File.Sync() }
func (f osFile) Preallocate(size int64) error { return f.grow(size) }
func (f osFile) Truncate(size int64) error    { return f.File.Truncate(size) }
func (f osFile) Name() string                 { return f.File.Name() }
func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
func (f osFile) grow(size int64) error {
	cur, err := f.Size()
	if err != nil || cur >= size {
		return err
	}
	return f.File.Truncate(size)
}

func (osFS) Create(name string) (vfs.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
func (osFS) Open(name string) (vfs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
func (osFS) OpenRW(name string) (vfs.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
func (osFS) Rename(o, n string) error { return os.Rename(o, n) }
func (osFS) Remove(name string) error { return os.Remove(name) }
func (osFS) List(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out, nil
}
func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }
func (osFS) Stat(name string) (int64, error) {
	st, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
func (osFS) Join(elem ...string) string { return filepath.Join(elem...) }

// memFile is a test-only in-memory vfs.File for fuzzing and unit tests.
type memFile struct {
	b      []byte
	name   string
	closed bool
}

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	return copy(m.b[off:], p), nil
}
func (m *memFile) Close() error                 { m.closed = true; return nil }
func (m *memFile) Sync() error                  { return nil }
func (m *memFile) SyncAll() error               { return nil }
func (m *memFile) Preallocate(size int64) error { return m.Truncate(max(size, int64(len(m.b)))) }
func (m *memFile) Truncate(size int64) error {
	if size <= int64(len(m.b)) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, size-int64(len(m.b)))...)
	}
	return nil
}
func (m *memFile) Size() (int64, error) { return int64(len(m.b)), nil }
func (m *memFile) Name() string         { return m.name }

// copyFixture copies real Aeron's archive directory (the single-node-1
// fixture's archive/) into a temp dir and returns it.
func copyFixture(t testing.TB) string {
	t.Helper()
	return filepath.Join(fixtures.CopyAeronSingleNode(t, "archive"), "archive")
}

// fixtureArchive is the fixture's archive directory itself (read only).
func fixtureArchive(t testing.TB) string {
	t.Helper()
	return filepath.Join(fixtures.AeronSingleNode(t), "archive")
}

// fixtureFile reads a file of the fixture's archive directory for a fuzz
// seed; false without the fixture.
func fixtureFile(name string) ([]byte, bool) {
	d, ok := fixtures.AeronSingleNodeDir()
	if !ok {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(d, "archive", name))
	return b, err == nil
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
