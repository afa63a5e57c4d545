package archive

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Catalog compaction
//
// A purged recording's entry stays in the catalog, DELETED, as Aeron leaves
// it; so does an entry an operator or verify marked INVALID. A node whose
// retention deletes a snapshot generation every few snapshots therefore
// grows its catalog by two entries a snapshot, for ever, and every open
// reads and indexes them all. Compaction rewrites the catalog without
// them, as Aeron's `ArchiveTool compact` does (ArchiveTool.compact: every
// entry not VALID is dropped, every VALID one copied as it is, the header
// kept with its nextRecordingId), with these differences:
//
//   - INVALID entries are dropped only when asked (CompactOptions.Invalid):
//     INVALID is a mark that mark-valid undoes, not a deletion, and Aeron
//     deletes their segment files with them. DELETED entries are always
//     dropped, unless segment files (*.rec) of the recording are still
//     there (a purge a crash interrupted before its renames): the archive
//     finishes that purge first, so that no segment file is left without
//     an entry.
//   - nextRecordingId is written resolved (a header value of 0 means "the
//     last entry's id + 1", which dropping the last entries would lower):
//     ids are never reused.
//   - The file keeps its length (its capacity): VALID entries move down,
//     each byte for byte (header, descriptor, padding), in file order, and
//     zeros follow them; Aeron's tool truncates the file to its entries
//     and its archive extends it again on open.
//   - It is crash-safe where Aeron's is not (Aeron deletes archive.catalog,
//     then moves archive.catalog.compact over it): the new catalog is
//     written to CompactTempName, synced, renamed over archive.catalog, and
//     the directory synced (vfs.ReplaceFile). A crash at any point leaves
//     the old catalog or the new one; a leftover CompactTempName (a crash
//     before the rename: the old catalog is in place) is removed by the
//     next Open, which reports it ([Archive.RemovedCompactTemp]), or by
//     the next offline compaction. Aeron's own temporary file
//     (archive.catalog.compact) is never touched.
//
// A legacy catalog (alignment 0) is refused: migrate it first.

// CompactTempName is the file a compaction writes the new catalog to before
// it renames it over archive.catalog. It is ours (Aeron's ArchiveTool uses
// archive.catalog.compact).
const CompactTempName = CatalogFileName + ".compacting"

// CompactOptions configure a compaction.
type CompactOptions struct {
	// Invalid drops INVALID entries too, with their segment files and
	// sidecar index (Aeron's ArchiveTool compact drops every entry that
	// is not VALID). Only [CompactCatalogDir] takes it.
	Invalid bool
}

// CatalogCompaction reports a compaction.
type CatalogCompaction struct {
	// Dropped are the entries removed, in file order.
	Dropped []CatalogEntry
	// Kept is the number of entries kept (every VALID one, and the
	// INVALID ones unless dropped, and DELETED ones whose files remain).
	Kept int
	// NextRecordingID is the header's nextRecordingId, before and after.
	NextRecordingID int64
	// UsedBefore and UsedAfter are the end offsets of the entries.
	UsedBefore, UsedAfter int64
	// Capacity is the file's length (unchanged).
	Capacity int64
	// RemovedFiles are the segment files and sidecar indexes unlinked
	// with the dropped entries (offline, INVALID or interrupted purges).
	RemovedFiles []string
	// LeftoverRemoved names a CompactTempName an earlier, interrupted
	// compaction left, which this one removed.
	LeftoverRemoved string
}

// EntryCounts counts the catalog's entries by state.
type EntryCounts struct {
	Valid, Invalid, Deleted, Other int
}

// Total is the number of entries.
func (n EntryCounts) Total() int { return n.Valid + n.Invalid + n.Deleted + n.Other }

// Counts counts the entries by state.
func (c *Catalog) Counts() EntryCounts {
	var n EntryCounts
	for _, r := range c.entries {
		switch RecordingState(int32(binary.LittleEndian.Uint32(c.buf[r.offset+4:]))) {
		case StateValid:
			n.Valid++
		case StateInvalid:
			n.Invalid++
		case StateDeleted:
			n.Deleted++
		default:
			n.Other++
		}
	}
	return n
}

// compactImage returns the compacted image of the catalog (same length)
// without the entries drop selects; nil when none is selected.
func (c *Catalog) compactImage(drop func(e CatalogEntry) bool) ([]byte, CatalogCompaction, error) {
	res := CatalogCompaction{NextRecordingID: c.nextRecordingID, UsedBefore: int64(c.nextOffset), Capacity: int64(len(c.buf))}
	if c.legacy {
		return nil, res, fmt.Errorf("archive: catalog %s is a legacy catalog (alignment 0): migrate it before compacting it", c.name)
	}
	var keep []catalogEntryRef
	for _, r := range c.entries {
		e, err := decodeEntry(c.buf, r.offset)
		if err != nil {
			return nil, res, corruptf("catalog %s: offset %d: %v", c.name, r.offset, err)
		}
		if e.State != StateValid && drop(e) {
			res.Dropped = append(res.Dropped, e)
			continue
		}
		keep = append(keep, r)
	}
	res.Kept = len(keep)
	res.UsedAfter = res.UsedBefore
	if len(res.Dropped) == 0 {
		return nil, res, nil
	}
	img := make([]byte, len(c.buf))
	copy(img[:CatalogHeaderLength], c.buf[:CatalogHeaderLength])
	binary.LittleEndian.PutUint64(img[8:], uint64(c.nextRecordingID))
	off := c.firstOffset
	for _, r := range keep {
		off += copy(img[off:], c.buf[r.offset:r.offset+r.frame])
	}
	res.UsedAfter = int64(off)
	return img, res, nil
}

// replaceWith makes the catalog use f, which holds img (a compaction's
// result, renamed over the catalog): the old file is closed and the
// entries indexed again.
func (c *Catalog) replaceWith(f vfs.File, img []byte) error {
	nc, err := parseCatalog(img, c.name, true)
	if err != nil {
		_ = f.Close()
		c.err = fmt.Errorf("archive: catalog %s after compaction: %w", c.name, err)
		return c.err
	}
	old := c.f
	c.f, c.buf = f, img
	c.entries, c.valid = nc.entries, nc.valid
	c.nextOffset, c.dirtyEnd, c.nextRecordingID = nc.nextOffset, nc.dirtyEnd, nc.nextRecordingID
	if old != nil {
		if err := old.Close(); err != nil {
			return fmt.Errorf("archive: catalog %s: close the file before compaction: %w", c.name, err)
		}
	}
	return nil
}

// removeCompactTemp removes a leftover CompactTempName of dir and syncs
// dir; it returns its path, or "" when there was none. A leftover with no
// catalog beside it is refused: that is no state a compaction leaves.
func removeCompactTemp(fsys vfs.FS, dir string) (string, error) {
	tmp := fsys.Join(dir, CompactTempName)
	if _, err := fsys.Stat(tmp); errors.Is(err, vfs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("archive: stat %s: %w", tmp, err)
	}
	if _, err := fsys.Stat(fsys.Join(dir, CatalogFileName)); err != nil {
		return "", fmt.Errorf("archive: %s is there but %s is not (%v): no compaction leaves that; "+
			"check the temporary file and rename it to %s if it is the catalog", tmp, CatalogFileName, err, CatalogFileName)
	}
	if err := fsys.Remove(tmp); err != nil {
		return "", fmt.Errorf("archive: remove the leftover %s of an interrupted compaction: %w", tmp, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return "", fmt.Errorf("archive: sync %s: %w", dir, err)
	}
	return tmp, nil
}

// RemovedCompactTemp names the CompactTempName an interrupted compaction
// left, which Open removed (the catalog was the old one), or "".
func (a *Archive) RemovedCompactTemp() string { return a.removedCompactTemp }

// CatalogCounts counts the catalog's entries by state.
func (a *Archive) CatalogCounts() EntryCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cat.Counts()
}

// CompactCatalog compacts the open archive's catalog (see the comment at
// the top of compact.go): DELETED entries whose recordings have no segment
// file left (*.rec) are dropped, with a sidecar index a crash left of
// theirs; every other entry is kept byte for byte.
// It holds the catalog mutex throughout (a recording starting or stopping
// meanwhile waits), writes the whole catalog once and syncs it and the
// directory, whatever the sync levels. When nothing is to be dropped it
// writes nothing and returns a result with no Dropped entries.
//
// A failure before the rename leaves the catalog as it was, in the file
// and in memory, and the Archive usable. A failure of the directory sync
// after the rename leaves the new catalog in place and in use, but its
// durability unknown: the catalog then refuses every further change (a
// later crash could bring the old file back without them) and the archive
// must be reopened.
func (a *Archive) CompactCatalog() (*CatalogCompaction, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.cat.writable(); err != nil {
		return nil, err
	}
	segs, _, err := segmentIndex(a.fs, a.dir)
	if err != nil {
		return nil, err
	}
	img, res, err := a.cat.compactImage(func(e CatalogEntry) bool {
		return e.State == StateDeleted && len(segs[e.Descriptor.RecordingID]) == 0
	})
	if err != nil || img == nil {
		return &res, err
	}
	// A purge removes the recording's sidecar index after its renames; a
	// crash between them leaves it, and once the entry is gone nothing
	// would remove it: it goes now (it is advisory, and DELETED).
	for _, e := range res.Dropped {
		name := IndexFileName(e.Descriptor.RecordingID)
		if err := a.fs.Remove(a.fs.Join(a.dir, name)); err == nil {
			res.RemovedFiles = append(res.RemovedFiles, name)
		} else if !errors.Is(err, vfs.ErrNotExist) {
			return nil, fmt.Errorf("archive: compact: remove %s of DELETED recording %d: %w", name, e.Descriptor.RecordingID, err)
		}
	}
	f, renamed, err := vfs.ReplaceFile(a.fs, a.dir, CatalogFileName, CompactTempName, img[:res.UsedAfter], int64(len(img)), true)
	if !renamed {
		return nil, fmt.Errorf("archive: compact catalog: %w", err)
	}
	if rerr := a.cat.replaceWith(f, img); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		a.cat.err = fmt.Errorf("archive: compact catalog: %w; reopen the archive", err)
		return nil, a.cat.err
	}
	return &res, nil
}

// CompactCatalogDir compacts the catalog of the archive directory dir,
// which no archive may have open (the caller checks the mark file): DELETED
// entries are dropped, with any segment file or sidecar index of theirs
// still there (a purge interrupted before its renames), and with
// opts.Invalid the INVALID ones, with their segment files and sidecar
// indexes, as Aeron's
// ArchiveTool compact does. Files are unlinked before the catalog is
// replaced, so a crash between leaves entries without files, which the
// next compaction drops, never files without an entry. A leftover
// CompactTempName is removed first (reported in LeftoverRemoved). Nothing
// is written when nothing is to be dropped.
func CompactCatalogDir(fsys vfs.FS, dir string, opts CompactOptions) (*CatalogCompaction, error) {
	path := fsys.Join(dir, CatalogFileName)
	buf, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("archive: read catalog: %w", err)
	}
	if int64(len(buf)) > MaxCatalogCapacity {
		return nil, corruptf("catalog %s: file is %d bytes, more than the maximum capacity %d", path, len(buf), int64(MaxCatalogCapacity))
	}
	cat, err := parseCatalog(buf, path, true)
	if err != nil {
		return nil, err
	}
	cat.name = path
	segs, _, err := segmentIndex(fsys, dir)
	if err != nil {
		return nil, err
	}
	drop := func(e CatalogEntry) bool {
		return e.State == StateDeleted || (opts.Invalid && e.State == StateInvalid)
	}
	img, res, err := cat.compactImage(drop)
	if err != nil {
		return nil, err
	}
	if res.LeftoverRemoved, err = removeCompactTemp(fsys, dir); err != nil {
		return nil, err
	}
	if img == nil {
		return &res, nil
	}
	removed := false
	for _, e := range res.Dropped {
		id := e.Descriptor.RecordingID
		names := []string{}
		for _, s := range segs[id] {
			names = append(names, s.Name)
		}
		names = append(names, IndexFileName(id))
		for _, name := range names {
			err := fsys.Remove(fsys.Join(dir, name))
			if errors.Is(err, vfs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("archive: compact: remove %s of %s recording %d: %w", name, e.State, id, err)
			}
			res.RemovedFiles = append(res.RemovedFiles, name)
			removed = true
		}
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("archive: compact: sync %s: %w", dir, err)
		}
	}
	if _, _, err := vfs.ReplaceFile(fsys, dir, CatalogFileName, CompactTempName, img[:res.UsedAfter], int64(len(img)), false); err != nil {
		return nil, fmt.Errorf("archive: compact catalog: %w", err)
	}
	return &res, nil
}
