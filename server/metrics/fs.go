package metrics

import (
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// timedFS is the node's file system as Metrics.InstrumentNode wraps it:
// every Sync, SyncAll and SyncDir is timed into matchlog_file_sync_seconds,
// the bytes written to files under the archive directory are counted, and
// so is every operation that fails with ENOSPC
// (matchlog_archive_disk_full_errors_total: counted here, not by the node,
// so that the count survives the node's failure).
// A file opened for writing is wrapped once when opened (one allocation
// per open, none per write or sync); files opened read-only are not
// wrapped.
type timedFS struct {
	vfs.FS
	archivePrefix string
	m             *Metrics
}

var _ archive.FreeSpaceFS = (*timedFS)(nil)

func newTimedFS(base vfs.FS, archiveDir string, m *Metrics) *timedFS {
	return &timedFS{FS: base, archivePrefix: strings.TrimSuffix(archiveDir, "/") + "/", m: m}
}

func (t *timedFS) wrap(f vfs.File, name string) vfs.File {
	return &timedFile{File: f, m: t.m, archive: strings.HasPrefix(name, t.archivePrefix)}
}

// noSpace counts err if it is ENOSPC (matchlog_archive_disk_full_errors_total).
func (m *Metrics) noSpace(err error) error {
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		m.diskFull.Add(1)
	}
	return err
}

// Create implements vfs.FS.
func (t *timedFS) Create(name string) (vfs.File, error) {
	f, err := t.FS.Create(name)
	if err != nil {
		return nil, t.m.noSpace(err)
	}
	return t.wrap(f, name), nil
}

// OpenRW implements vfs.FS.
func (t *timedFS) OpenRW(name string) (vfs.File, error) {
	f, err := t.FS.OpenRW(name)
	if err != nil {
		return nil, err
	}
	return t.wrap(f, name), nil
}

// SyncDir implements vfs.FS.
func (t *timedFS) SyncDir(dir string) error {
	t0 := time.Now()
	err := t.FS.SyncDir(dir)
	t.m.syncDir.Observe(time.Since(t0).Seconds())
	return t.m.noSpace(err)
}

// FreeBytes implements archive.FreeSpaceFS for the wrapped file system.
func (t *timedFS) FreeBytes(dir string) (uint64, error) { return archive.FreeBytes(t.FS, dir) }

type timedFile struct {
	vfs.File
	m       *Metrics
	archive bool
}

// WriteAt implements vfs.File.
func (f *timedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if f.archive && n > 0 {
		f.m.archiveWritten.Add(int64(n))
	}
	return n, f.m.noSpace(err)
}

// Preallocate implements vfs.File.
func (f *timedFile) Preallocate(size int64) error { return f.m.noSpace(f.File.Preallocate(size)) }

// Truncate implements vfs.File.
func (f *timedFile) Truncate(size int64) error { return f.m.noSpace(f.File.Truncate(size)) }

// Sync implements vfs.File.
func (f *timedFile) Sync() error {
	t0 := time.Now()
	err := f.File.Sync()
	f.m.syncData.Observe(time.Since(t0).Seconds())
	return f.m.noSpace(err)
}

// SyncAll implements vfs.File.
func (f *timedFile) SyncAll() error {
	t0 := time.Now()
	err := f.File.SyncAll()
	f.m.syncAll.Observe(time.Since(t0).Seconds())
	return f.m.noSpace(err)
}
