package recordinglog

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Compaction
//
// Aeron's recording.log only grows: one TERM entry per leadership term,
// one SNAPSHOT entry per snapshot recording, invalidated in place when a
// snapshot set is given up and never removed. A node whose retention
// deletes old snapshot generations and purges the log keeps every one of
// those entries for ever, and every start reads, sorts and checks them
// all. Aeron has no tool that removes them (ClusterTool
// sort-recording-log and seed-recording-log-from-snapshot rewrite the
// file, the second keeping only the latest set). Compaction drops only
// entries that nothing which reads recording.log can still use, judged
// against Aeron's readers:
//
//   - the recovery plan (RecordingLog.createRecoveryPlan, planRecovery)
//     reads the last valid TERM and the latest valid consensus-module
//     SNAPSHOT with the service entries just before it; ClusterTool's
//     invalidate-latest-snapshot walks back from the latest valid set;
//     revalidate (ours) walks the invalid sets above the latest valid
//     one; the consensus module looks TERMs up by term id: getTermEntry
//     (which throws when absent) only for its current term, findTermEntry
//     (null when absent) for the term after a follower's, isUnknown and
//     appendTerm for the terms it replays from the snapshot on; and a
//     snapshot's TERM must be valid for invalidate-latest-snapshot;
//   - retention (cluster/retention, automatic retention) reads every
//     snapshot set, valid or not, whose recordings are still in the
//     archive, and the log's last TERM.
//
// So an entry is dropped only if it is one of:
//
//   - a SNAPSHOT entry (not a STANDBY_SNAPSHOT: its recording is another
//     archive's), valid or not, whose recording is gone from the archive
//     (no VALID catalog entry and no segment file: CompactOptions.Gone:
//     a set naming it can never be loaded again), and whose log position
//     is below that of every valid consensus-module SNAPSHOT whose
//     recording is still there (a STANDBY_SNAPSHOT does not count: the
//     local recovery plan does not use one) (so below the latest set recovery uses,
//     below every set invalidate-latest-snapshot can fall back to and
//     load, and below every invalid set revalidate reaches, which are above
//     the latest valid one); with no such consensus-module snapshot no
//     SNAPSHOT entry is dropped. Aeron's archive purge and `matchlog
//     retention purge` leave such entries valid, automatic retention
//     invalidates them first;
//   - a TERM entry (valid or not) of a term that ended at or before the
//     log recording's start A (CompactOptions.LogStart: its logPosition
//     is committed and ≤ A), of a term id below that of the last valid
//     TERM starting at or before A (the term holding A, which is kept),
//     and named by no SNAPSHOT entry that stays: the log of such a term
//     is gone from the archive (purged), no recovery replays it, no
//     follower can catch up from it (a follower that far behind needs a
//     snapshot or a rebuild either way: the retention verdict says so),
//     and the chain of terms from the term holding A to the last, the
//     current one among them, is kept whole.
//
// Entries removed by Aeron's removeEntry (type -1) are dropped too (Aeron
// skips them on load). Every kept entry is copied byte for byte, in file
// order (so Aeron's stable sort orders them as before); entry indices and
// offsets are renumbered, which nothing stores. The recovery plan, the
// retention verdicts and the latest set are the same before and after.
//
// Crash safety: the new file is written to CompactTempName, synced,
// renamed over recording.log and the directory synced (vfs.ReplaceFile);
// a crash leaves the old file or the new one, and a leftover
// CompactTempName (the old file is in place) is removed by the next
// writable Open, which reports it (Log.RemovedCompactTemp).

// CompactTempName is the file a compaction writes before renaming it over
// recording.log. It is ours (ClusterTool uses recording.log.tmp).
const CompactTempName = FileName + ".compacting"

// CompactOptions tell a compaction what the archive holds.
type CompactOptions struct {
	// Gone reports that a recording is gone from the archive: no VALID
	// catalog entry and no segment file. Nil: none is (no SNAPSHOT entry
	// is dropped).
	Gone func(recordingID int64) bool
	// LogStart is the log recording's start position in the catalog (A);
	// negative when unknown (no TERM entry is dropped).
	LogStart int64
}

// Compaction reports what a compaction dropped.
type Compaction struct {
	// Dropped are the entries dropped, in file order, with their old
	// indices and offsets.
	Dropped []Entry
	// Kept is the number of entries kept.
	Kept int
	// SizeBefore and SizeAfter are the file's lengths.
	SizeBefore, SizeAfter int64
}

// CompactSelect returns the indices into entries (Aeron's sorted order, as
// Log.Entries returns them) of the entries a compaction drops (see the
// comment at the top of compact.go). It is a pure function.
func CompactSelect(entries []Entry, opts CompactOptions) []int {
	drop := make([]bool, len(entries))
	minCM, haveCM := int64(0), false
	if opts.Gone != nil {
		for i := range entries {
			e := &entries[i]
			if isValidSnapshot(e) && e.ServiceID == ConsensusModuleServiceID && (!haveCM || e.LogPosition < minCM) && !opts.Gone(e.RecordingID) {
				minCM, haveCM = e.LogPosition, true
			}
		}
	}
	if haveCM {
		for i := range entries {
			e := &entries[i]
			if e.Type == TypeSnapshot && e.LogPosition < minCM && opts.Gone(e.RecordingID) {
				drop[i] = true
			}
		}
	}
	if A := opts.LogStart; A >= 0 {
		holder := -1 // the last valid TERM starting at or before A
		for i := range entries {
			if e := &entries[i]; isValidTerm(e) && e.TermBaseLogPosition <= A {
				holder = i
			}
		}
		if holder >= 0 {
			named := map[int64]bool{}
			for i := range entries {
				if e := &entries[i]; e.Type != TypeTerm && !drop[i] {
					named[e.LeadershipTermID] = true
				}
			}
			h := entries[holder].LeadershipTermID
			for i := range entries {
				e := &entries[i]
				if e.Type == TypeTerm && i != holder && e.LeadershipTermID < h && e.LogPosition != NullValue &&
					e.LogPosition <= A && !named[e.LeadershipTermID] {
					drop[i] = true
				}
			}
		}
	}
	var out []int
	for i, d := range drop {
		if d {
			out = append(out, i)
		}
	}
	return out
}

// Compact rewrites recording.log without the entries CompactSelect drops
// (and without removed entries), crash-safely; the Log then uses the new
// file. When nothing is to be dropped it writes nothing. A failure before
// the rename leaves the file and the Log as they were; a failure to sync
// the directory after it leaves the new file in use but its durability
// unknown, and the Log refuses further updates (reopen it).
func (l *Log) Compact(opts CompactOptions) (*Compaction, error) {
	if err := l.writable(); err != nil {
		return nil, err
	}
	res := &Compaction{SizeBefore: l.end, SizeAfter: l.end, Kept: len(l.entries)}
	sel := CompactSelect(l.entries, opts)
	if len(sel) == 0 && l.nextIndex == len(l.entries) {
		return res, nil
	}
	raw := make([]byte, l.end)
	if l.end > 0 {
		if n, err := l.f.ReadAt(raw, 0); n != len(raw) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("recordinglog: compact: read %s: %w", l.path, err)
		}
	}
	dropped := make([]bool, len(l.entries))
	for _, i := range sel {
		dropped[i] = true
		res.Dropped = append(res.Dropped, l.entries[i])
	}
	slices.SortFunc(res.Dropped, func(a, b Entry) int { return cmp64(a.Offset, b.Offset) })
	var kept []Entry
	for i, e := range l.entries {
		if !dropped[i] {
			kept = append(kept, e)
		}
	}
	slices.SortFunc(kept, func(a, b Entry) int { return cmp64(a.Offset, b.Offset) })
	var img []byte
	for _, e := range kept {
		img = append(img, raw[e.Offset:e.Offset+int64(e.Length())]...)
	}
	entries, count, err := decode(img)
	if err != nil || count != len(kept) {
		return nil, fmt.Errorf("recordinglog: compact: the compacted entries do not decode (%d of %d): %v", count, len(kept), err)
	}
	f, renamed, err := vfs.ReplaceFile(l.fs, l.dir, FileName, CompactTempName, img, int64(len(img)), true)
	if !renamed {
		return nil, fmt.Errorf("recordinglog: compact: %w", err)
	}
	old := l.f
	l.f = f
	slices.SortStableFunc(entries, func(a, b Entry) int { return compareEntries(&a, &b) })
	l.entries, l.end, l.nextIndex = entries, int64(len(img)), count
	res.Kept, res.SizeAfter = len(entries), l.end
	if cerr := old.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the file before compaction: %w", cerr)
	}
	if err != nil {
		return nil, l.fail(fmt.Errorf("recordinglog: compact: %w; reopen recording.log", err))
	}
	return res, nil
}

// RemovedCompactTemp names the CompactTempName an interrupted compaction
// left, which Open removed (recording.log was the old file), or "".
func (l *Log) RemovedCompactTemp() string { return l.removedTemp }

// removeCompactTemp removes a leftover CompactTempName from dir (the
// rename never happened: recording.log is the old file) and syncs dir.
func removeCompactTemp(fsys vfs.FS, dir string) (string, error) {
	tmp := fsys.Join(dir, CompactTempName)
	if _, err := fsys.Stat(tmp); errors.Is(err, vfs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("recordinglog: stat %s: %w", tmp, err)
	}
	if err := fsys.Remove(tmp); err != nil {
		return "", fmt.Errorf("recordinglog: remove the leftover %s of an interrupted compaction: %w", tmp, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return "", fmt.Errorf("recordinglog: sync %s: %w", dir, err)
	}
	return tmp, nil
}
