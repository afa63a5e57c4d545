package cluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Compaction by automatic retention
//
// Retention deletes a snapshot generation every few snapshots and purges
// the log, but Aeron's formats keep what it deleted: a DELETED catalog
// entry per snapshot recording, an invalid recording.log entry per
// snapshot, a TERM entry per leadership term (one per start of a native
// node). Left alone they grow without bound, and with them the cost of
// every start (decoding, sorting and checking them) and of every
// retention check. So, after the deletions of each check, retention
// queues two more steps (one DoWork each, like its other steps):
//
//  1. recording.log compaction (recordinglog.Log.Compact): when at least
//     CompactMinEntries entries can go (recordinglog.CompactSelect: invalid
//     SNAPSHOT entries of recordings gone from the archive, below every
//     valid consensus-module snapshot; TERM entries of terms that ended at
//     or before the log's start) and they are at least a quarter of its
//     entries;
//  2. catalog compaction (archive.Archive.CompactCatalog): when at least
//     CompactMinEntries entries are DELETED and they are at least a quarter
//     of its entries.
//
// recording.log goes first, so that a crash between the two leaves DELETED
// catalog entries no entry names (harmless), never an entry naming a
// recording the catalog has forgotten. The thresholds make a compaction
// rare (with the default Keep of 2, one in about 32 snapshot generations)
// and its cost (one rewrite of each file: the catalog's capacity, 1 MiB by
// default, written sparsely, and two syncs of file and directory) small
// against the reads it saves at every start; they bound each file at about
// 2 × CompactMinEntries entries beyond what is live. Each compaction is
// logged ("catalog compacted", "recording.log compacted": entries dropped
// and kept, bytes before and after, the time it took) and counted
// (Stats.CatalogCompactions, RecordingLogCompactions and the entries
// dropped); a failure is logged and counted as a retention error, and
// leaves the file as it was (a failed directory sync after the rename
// leaves the new file in use and the archive or recording.log refusing
// further changes, which stops the node: its durability is unknown).
const CompactMinEntries = 64

// compactDue reports whether dropping drop of total entries is worth a
// rewrite.
func compactDue(drop, total int) bool { return drop >= CompactMinEntries && 4*drop >= total }

// gone returns the predicate recordinglog.CompactOptions.Gone for the
// node's archive: no VALID catalog entry and no segment file.
func (n *Node) gone() (func(int64) bool, error) {
	names, err := n.fs.List(n.adir)
	if err != nil {
		return nil, err
	}
	files := map[int64]bool{}
	for _, name := range names {
		if !strings.HasSuffix(name, archive.SegmentSuffix) {
			continue
		}
		if id, _, err := archive.ParseSegmentFileName(name); err == nil {
			files[id] = true
		}
	}
	return func(id int64) bool {
		if files[id] {
			return false
		}
		_, err := n.arc.a.Descriptor(id)
		return err != nil
	}, nil
}

// retentionCompactLog is the recording.log compaction step.
func (n *Node) retentionCompactLog() int {
	entries := n.rlog.Entries()
	n.stats.RecordingLogEntries = int64(len(entries))
	if len(entries) < CompactMinEntries {
		return 0
	}
	d, err := n.arc.a.Descriptor(n.recID)
	if err != nil {
		return 0
	}
	gone, err := n.gone()
	if err != nil {
		n.retentionFailed("recording.log compaction failed", err)
		return 0
	}
	opts := recordinglog.CompactOptions{Gone: gone, LogStart: d.StartPosition}
	if !compactDue(len(recordinglog.CompactSelect(entries, opts)), len(entries)) {
		return 0
	}
	t0 := time.Now()
	res, err := n.rlog.Compact(opts)
	if err != nil {
		n.retentionFailed("recording.log compaction failed", err, slog.String("file", n.rlog.Path()))
		return 1
	}
	n.stats.RecordingLogCompactions++
	n.stats.RecordingLogEntriesDropped += int64(len(res.Dropped))
	n.stats.RecordingLogEntries = int64(res.Kept)
	var terms, snaps int
	for _, e := range res.Dropped {
		if e.Type == recordinglog.TypeTerm {
			terms++
		} else {
			snaps++
		}
	}
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "recording.log compacted", slog.String("file", n.rlog.Path()),
		slog.Int("entries_dropped", len(res.Dropped)), slog.Int("terms_dropped", terms), slog.Int("snapshots_dropped", snaps),
		slog.Int("entries_kept", res.Kept), slog.Int64("bytes_before", res.SizeBefore), slog.Int64("bytes_after", res.SizeAfter),
		slog.Int64("log_start", d.StartPosition), slog.Duration("took", time.Since(t0)))
	return 1
}

// retentionCompactCatalog is the catalog compaction step.
func (n *Node) retentionCompactCatalog() int {
	c := n.arc.a.CatalogCounts()
	n.stats.CatalogEntries = int64(c.Total())
	if !compactDue(c.Deleted, c.Total()) {
		return 0
	}
	t0 := time.Now()
	res, err := n.arc.a.CompactCatalog()
	if err != nil {
		n.retentionFailed("catalog compaction failed", err, slog.String("file", n.fs.Join(n.adir, archive.CatalogFileName)))
		return 1
	}
	if len(res.Dropped) == 0 {
		return 0 // the DELETED entries still have files (a purge to finish)
	}
	n.stats.CatalogCompactions++
	n.stats.CatalogEntriesDropped += int64(len(res.Dropped))
	n.stats.CatalogEntries = int64(res.Kept)
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "catalog compacted", slog.String("file", n.fs.Join(n.adir, archive.CatalogFileName)),
		slog.Int("entries_dropped", len(res.Dropped)), slog.Int("entries_kept", res.Kept),
		slog.Int64("bytes_before", res.UsedBefore), slog.Int64("bytes_after", res.UsedAfter), slog.Int64("capacity", res.Capacity),
		slog.Int64("next_recording_id", res.NextRecordingID), slog.Duration("took", time.Since(t0)))
	return 1
}

// DirCompaction reports CompactDir.
type DirCompaction struct {
	// RecordingLog is nil when the directory has no recording.log.
	RecordingLog *recordinglog.Compaction
	// RemovedLogTemp names a leftover recordinglog.CompactTempName removed.
	RemovedLogTemp string
	Catalog        *archive.CatalogCompaction
}

// CompactDir compacts a stopped node directory (ours or real Aeron's:
// cluster/ and archive/), which the caller has checked no process runs
// in: first recording.log (recordinglog.Log.Compact, judged against the
// catalog and the segment files as they are), then the catalog
// (archive.CompactCatalogDir, with opts). recording.log goes first so that
// a failure or a crash between the two leaves DELETED catalog entries that
// no entry names, never an entry naming a recording the catalog has
// forgotten. A recording.log that does not decode whole (a torn tail
// included) is refused before anything is written; so is a catalog that
// does not open.
func CompactDir(fsys vfs.FS, dir string, opts archive.CompactOptions) (*DirCompaction, error) {
	cdir, adir := fsys.Join(dir, ClusterDirName), fsys.Join(dir, ArchiveDirName)
	res := &DirCompaction{}
	cat, err := archive.OpenCatalogFile(fsys, adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	names, err := fsys.List(adir)
	if err != nil {
		cat.Close()
		return nil, err
	}
	files := map[int64]bool{}
	for _, name := range names {
		if id, _, err := archive.ParseSegmentFileName(name); err == nil && strings.HasSuffix(name, archive.SegmentSuffix) {
			files[id] = true
		}
	}
	l, err := recordinglog.Open(fsys, cdir, recordinglog.Options{SyncLevel: 1})
	switch {
	case err == nil:
		res.RemovedLogTemp = l.RemovedCompactTemp()
		copts := recordinglog.CompactOptions{LogStart: -1, Gone: func(id int64) bool {
			if files[id] {
				return false
			}
			_, err := cat.Descriptor(id)
			return err != nil
		}}
		if term, ok := l.FindLastTerm(); ok {
			if d, err := cat.Descriptor(term.RecordingID); err == nil {
				copts.LogStart = d.StartPosition
			}
		}
		res.RecordingLog, err = l.Compact(copts)
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			cat.Close()
			return nil, err
		}
	case errors.Is(err, vfs.ErrNotExist):
	default:
		cat.Close()
		return nil, err
	}
	cat.Close()
	if res.Catalog, err = archive.CompactCatalogDir(fsys, adir, opts); err != nil {
		return res, err
	}
	return res, nil
}
