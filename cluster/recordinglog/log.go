package recordinglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Options configure Create and Open.
type Options struct {
	// SyncLevel is Aeron's cluster fileSyncLevel: 0 never syncs, 1 syncs
	// the file's data (File.Sync, fdatasync) after every write, 2 syncs
	// data and metadata (File.SyncAll).
	SyncLevel archive.SyncLevel
	// Repair lets Open drop a torn tail (see ErrTornTail): the file is
	// truncated to its last whole entry and synced, and Log.Repaired
	// reports what was dropped. Damage anywhere else is still an error.
	// With ReadOnly the tail is ignored in memory and the file is left as
	// it is.
	Repair bool
	// ReadOnly opens the file for reading only; updates fail with
	// ErrReadOnly.
	ReadOnly bool
}

// Repair describes a torn tail that Open dropped.
type Repair struct {
	// Offset is where the file now ends (it was truncated there).
	Offset int64
	// Dropped is the number of bytes dropped.
	Dropped int64
	// Reason says what the tail held.
	Reason string
}

// Log is an open recording.log. It keeps every entry in memory, sorted as
// Aeron sorts them, and writes each change through to the file with a
// positional write followed by a sync at Options.SyncLevel.
//
// After a write or sync fails the Log refuses further updates with that
// error: what reached the file is then unknown, and the caller must close
// and reopen it (with Options.Repair when the failed write was an append).
//
// A Log is not safe for concurrent use.
type Log struct {
	fs   vfs.FS
	dir  string
	path string
	f    vfs.File
	opts Options

	entries   []Entry // Aeron's sorted order
	end       int64   // file offset after the last entry
	nextIndex int     // entry index of the next append
	termRecID int64   // recordingId of every TERM, NullValue before the first
	repaired  *Repair
	// removedTemp: Open removed this leftover of an interrupted
	// compaction (compact.go).
	removedTemp string
	err         error // sticky: set by a failed write or sync, or Close
}

// Create creates dir/recording.log, which must not exist, and syncs dir so
// that the new entry is durable (Aeron syncs the directory of a new file
// whatever the sync level).
func Create(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	if opts.ReadOnly {
		return nil, fmt.Errorf("recordinglog: create %s: %w", dir, ErrReadOnly)
	}
	path := fsys.Join(dir, FileName)
	f, err := fsys.Create(path)
	if err != nil {
		return nil, fmt.Errorf("recordinglog: create: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("recordinglog: create: sync directory %s: %w", dir, err)
	}
	return &Log{fs: fsys, dir: dir, path: path, f: f, opts: opts, termRecID: NullValue}, nil
}

// Open opens dir/recording.log and decodes every entry (see Decode for what
// is an error). A torn tail is an error satisfying errors.Is(err,
// ErrTornTail) unless opts.Repair is set. Unless ReadOnly, a leftover
// CompactTempName of an interrupted compaction is removed first
// (Log.RemovedCompactTemp).
func Open(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	path := fsys.Join(dir, FileName)
	var f vfs.File
	var err error
	var removed string
	if !opts.ReadOnly {
		switch _, serr := fsys.Stat(path); {
		case serr == nil:
			if removed, err = removeCompactTemp(fsys, dir); err != nil {
				return nil, err
			}
		case !errors.Is(serr, vfs.ErrNotExist):
			return nil, fmt.Errorf("recordinglog: open: %w", serr)
		}
	}
	if opts.ReadOnly {
		f, err = fsys.Open(path)
	} else {
		f, err = fsys.OpenRW(path)
	}
	if err != nil {
		return nil, fmt.Errorf("recordinglog: open: %w", err)
	}
	l := &Log{fs: fsys, dir: dir, path: path, f: f, opts: opts, termRecID: NullValue, removedTemp: removed}
	if err := l.load(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) load() error {
	size, err := l.f.Size()
	if err != nil {
		return fmt.Errorf("recordinglog: %s: %w", l.path, err)
	}
	b := make([]byte, size)
	if size > 0 {
		if n, err := l.f.ReadAt(b, 0); n != len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("recordinglog: read %s: %w", l.path, err)
		}
	}
	entries, count, err := decode(b)
	l.end = size
	l.nextIndex = count
	if err != nil {
		var ce *CorruptError
		if !l.opts.Repair || !errors.As(err, &ce) || !ce.Torn {
			return fmt.Errorf("%w (%s)", err, l.path)
		}
		l.repaired = &Repair{Offset: ce.Offset, Dropped: size - ce.Offset, Reason: ce.Reason}
		l.end = ce.Offset
		if !l.opts.ReadOnly {
			if err := l.f.Truncate(ce.Offset); err != nil {
				return fmt.Errorf("recordinglog: repair %s: %w", l.path, err)
			}
			if err := l.syncAtLeast(1); err != nil {
				return fmt.Errorf("recordinglog: repair %s: %w", l.path, err)
			}
		}
	}
	for i := range entries {
		if entries[i].Type == TypeTerm {
			l.termRecID = entries[i].RecordingID
			break
		}
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return compareEntries(&a, &b) })
	l.entries = entries
	return nil
}

// Repaired reports the torn tail Open dropped, or nil.
func (l *Log) Repaired() *Repair { return l.repaired }

// Path is the file's path.
func (l *Log) Path() string { return l.path }

// Entries returns a copy of the entries in Aeron's sorted order (see the
// package documentation), invalid ones included.
func (l *Log) Entries() []Entry { return slices.Clone(l.entries) }

// FileEntries returns a copy of the entries in file order.
func (l *Log) FileEntries() []Entry {
	out := slices.Clone(l.entries)
	slices.SortFunc(out, func(a, b Entry) int { return cmp64(a.Offset, b.Offset) })
	return out
}

// NextEntryIndex is the entry index the next appended entry gets.
func (l *Log) NextEntryIndex() int { return l.nextIndex }

// Size is the file offset after the last entry: where the next append goes.
func (l *Log) Size() int64 { return l.end }

// FindLastTerm returns the last valid TERM entry in sorted order
// (findLastTerm).
func (l *Log) FindLastTerm() (Entry, bool) {
	for i := len(l.entries) - 1; i >= 0; i-- {
		if isValidTerm(&l.entries[i]) {
			return l.entries[i], true
		}
	}
	return Entry{}, false
}

// termIndex is the sorted index of the valid TERM entry of termID (the last
// one, as Aeron's cache map keeps), or -1.
func (l *Log) termIndex(termID int64) int {
	for i := len(l.entries) - 1; i >= 0; i-- {
		if e := &l.entries[i]; isValidTerm(e) && e.LeadershipTermID == termID {
			return i
		}
	}
	return -1
}

// TermEntry returns the valid TERM entry of a leadership term
// (findTermEntry).
func (l *Log) TermEntry(termID int64) (Entry, bool) {
	if i := l.termIndex(termID); i >= 0 {
		return l.entries[i], true
	}
	return Entry{}, false
}

// LatestSnapshot returns the latest valid SNAPSHOT entry of serviceID
// (getLatestSnapshot): the consensus module's (-1), or the one of a service
// that sits serviceID+1 places before the latest valid consensus-module
// entry.
func (l *Log) LatestSnapshot(serviceID int32) (Entry, bool) {
	for i := len(l.entries) - 1; i >= 0; i-- {
		e := &l.entries[i]
		if !isValidSnapshot(e) || e.ServiceID != ConsensusModuleServiceID {
			continue
		}
		if serviceID == ConsensusModuleServiceID {
			return *e, true
		}
		if j := i - int(serviceID+1); j >= 0 {
			if s := &l.entries[j]; isValidSnapshot(s) && s.ServiceID == serviceID {
				return *s, true
			}
		}
	}
	return Entry{}, false
}

func isValidTerm(e *Entry) bool     { return e.Valid && e.Type == TypeTerm }
func isValidSnapshot(e *Entry) bool { return e.Valid && e.Type == TypeSnapshot }
func isValidAnySnapshot(e *Entry) bool {
	return e.Valid && (e.Type == TypeSnapshot || e.Type == TypeStandbySnapshot)
}

func (l *Log) writable() error {
	if l.err != nil {
		return l.err
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	return nil
}

// fail makes err sticky and returns it.
func (l *Log) fail(err error) error {
	l.err = err
	return err
}

// write writes b at off and syncs at the configured level.
func (l *Log) write(b []byte, off int64, what string) error {
	if _, err := l.f.WriteAt(b, off); err != nil {
		return l.fail(fmt.Errorf("recordinglog: %s at offset %d: %w", what, off, err))
	}
	if err := l.syncAtLeast(0); err != nil {
		return l.fail(fmt.Errorf("recordinglog: %s at offset %d: %w", what, off, err))
	}
	return nil
}

// syncAtLeast syncs at max(level, SyncLevel).
func (l *Log) syncAtLeast(level archive.SyncLevel) error {
	return max(level, l.opts.SyncLevel).Sync(l.f)
}

// Sync makes every write durable whatever the sync level (Aeron's force
// with level 2 makes metadata durable too; here level 2 uses SyncAll).
func (l *Log) Sync() error {
	if l.err != nil {
		return l.err
	}
	if err := l.syncAtLeast(1); err != nil {
		return l.fail(fmt.Errorf("recordinglog: sync: %w", err))
	}
	return nil
}

// Close closes the file. It does not sync beyond what SyncLevel did.
func (l *Log) Close() error {
	if errors.Is(l.err, ErrClosed) {
		return ErrClosed
	}
	l.err = ErrClosed
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("recordinglog: close: %w", err)
	}
	return nil
}

// appendEntry writes e at the end of the file (Aeron writes at
// align(fileSize, 64), which is the end for every file this package
// accepts), then syncs, then adds it to the sorted entries.
func (l *Log) appendEntry(e Entry) error {
	e.Valid = true
	e.Index = l.nextIndex
	e.Offset = l.end
	b := AppendEntry(nil, e)
	if err := l.write(b, e.Offset, "append "+e.Type.String()); err != nil {
		return err
	}
	l.end += int64(len(b))
	l.nextIndex++
	// Insert after every entry that does not sort after e, as Aeron's
	// append does.
	i := len(l.entries)
	for i > 0 && compareEntries(&e, &l.entries[i-1]) < 0 {
		i--
	}
	l.entries = slices.Insert(l.entries, i, e)
	return nil
}

// AppendTerm appends a TERM entry (appendTerm). The recording id must not be
// -1 and must equal that of every other TERM entry; the term must not have a
// valid TERM entry already. If term-1 has one, its logPosition is first
// committed to termBase. The new entry's logPosition is -1, or the base of
// term+1 if that term is already in the log.
//
// The commit and the append are separate writes, each synced at SyncLevel,
// so a crash may keep the commit without the new entry, never the reverse
// when SyncLevel > 0.
func (l *Log) AppendTerm(recordingID, termID, termBase, timestamp int64) error {
	if err := l.writable(); err != nil {
		return err
	}
	if recordingID == NullValue {
		return fmt.Errorf("recordinglog: invalid recordingId=%d", recordingID)
	}
	if l.termRecID != NullValue && recordingID != l.termRecID {
		return fmt.Errorf("recordinglog: invalid TERM recordingId=%d, expected recordingId=%d", recordingID, l.termRecID)
	}
	if l.termIndex(termID) >= 0 {
		return fmt.Errorf("recordinglog: duplicate TERM entry for leadershipTermId=%d", termID)
	}
	if l.termIndex(termID-1) >= 0 {
		if err := l.CommitLogPosition(termID-1, termBase); err != nil {
			return err
		}
	}
	logPosition := int64(NullValue)
	if next, ok := l.TermEntry(termID + 1); ok {
		logPosition = next.TermBaseLogPosition
	}
	if err := l.appendEntry(Entry{
		RecordingID: recordingID, LeadershipTermID: termID, TermBaseLogPosition: termBase,
		LogPosition: logPosition, Timestamp: timestamp, ServiceID: NullValue, Type: TypeTerm,
	}); err != nil {
		return err
	}
	l.termRecID = recordingID
	return nil
}

// AppendSnapshot records a snapshot of serviceID (-1 for the consensus
// module) at logPosition (appendSnapshot). If an invalid SNAPSHOT entry with
// the same term, term base, log position and service exists, it is rewritten
// in place as valid with the new recording id and timestamp (Aeron's
// restoreInvalidSnapshot); otherwise a new entry is appended. Aeron appends
// each service's entry first and the consensus module's last.
func (l *Log) AppendSnapshot(recordingID, termID, termBase, logPosition, timestamp int64, serviceID int32) error {
	if err := l.writable(); err != nil {
		return err
	}
	if recordingID == NullValue {
		return fmt.Errorf("recordinglog: invalid recordingId=%d", recordingID)
	}
	e := Entry{
		RecordingID: recordingID, LeadershipTermID: termID, TermBaseLogPosition: termBase,
		LogPosition: logPosition, Timestamp: timestamp, ServiceID: serviceID, Type: TypeSnapshot, Valid: true,
	}
	for i := len(l.entries) - 1; i >= 0; i-- {
		old := &l.entries[i]
		if old.Valid || old.Type != TypeSnapshot || old.LeadershipTermID != termID ||
			old.TermBaseLogPosition != termBase || old.LogPosition != logPosition || old.ServiceID != serviceID {
			continue
		}
		e.Index, e.Offset = old.Index, old.Offset
		if err := l.write(AppendEntry(nil, e), e.Offset, "restore invalid SNAPSHOT"); err != nil {
			return err
		}
		// The sort keys are unchanged, so the entry keeps its place.
		*old = e
		return nil
	}
	return l.appendEntry(e)
}

// AppendStandbySnapshot appends a STANDBY_SNAPSHOT entry naming the archive
// endpoint that holds the snapshot (appendStandbySnapshot). Unlike Aeron,
// which would fail building the entry, an invalid standby entry is never
// rewritten in place: a new one is always appended.
func (l *Log) AppendStandbySnapshot(recordingID, termID, termBase, logPosition, timestamp int64, serviceID int32, endpoint string) error {
	if err := l.writable(); err != nil {
		return err
	}
	if recordingID == NullValue {
		return fmt.Errorf("recordinglog: invalid recordingId=%d", recordingID)
	}
	if endpoint == "" || len(endpoint) > MaxEndpointLength {
		return fmt.Errorf("recordinglog: standby snapshot endpoint length %d outside [1, %d]", len(endpoint), MaxEndpointLength)
	}
	return l.appendEntry(Entry{
		RecordingID: recordingID, LeadershipTermID: termID, TermBaseLogPosition: termBase,
		LogPosition: logPosition, Timestamp: timestamp, ServiceID: serviceID,
		Type: TypeStandbySnapshot, ArchiveEndpoint: endpoint,
	})
}

// CommitLogPosition sets the logPosition of the valid TERM entry of termID
// (commitLogPosition): only the 8 bytes at offset 24 of that entry are
// rewritten, and nothing is written when the value is already there.
func (l *Log) CommitLogPosition(termID, logPosition int64) error {
	if err := l.writable(); err != nil {
		return err
	}
	i := l.termIndex(termID)
	if i < 0 {
		return fmt.Errorf("recordinglog: unknown leadershipTermId=%d", termID)
	}
	e := &l.entries[i]
	if e.LogPosition == logPosition {
		return nil
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(logPosition))
	if err := l.write(b[:], e.Offset+LogPositionOffset, "commit log position"); err != nil {
		return err
	}
	e.LogPosition = logPosition
	return nil
}

// InvalidateEntry marks the entry with the given entry index (its ordinal in
// the file, Entry.Index) invalid: only the type field is rewritten, with bit
// 31 set (invalidateEntry). An invalid TERM no longer counts as its term's
// entry. Invalidating an invalid entry rewrites the same value.
func (l *Log) InvalidateEntry(entryIndex int) error {
	if err := l.writable(); err != nil {
		return err
	}
	for i := range l.entries {
		if l.entries[i].Index == entryIndex {
			return l.invalidate(i)
		}
	}
	return fmt.Errorf("recordinglog: unknown entry index %d", entryIndex)
}

func (l *Log) invalidate(i int) error {
	e := &l.entries[i]
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(e.Type)|InvalidFlag)
	if err := l.write(b[:], e.Offset+EntryTypeOffset, "invalidate entry"); err != nil {
		return err
	}
	e.Valid = false
	return nil
}

// InvalidateLatestSnapshot marks every entry of the latest snapshot set
// invalid, as ClusterTool invalidate-latest-snapshot does
// (invalidateLatestSnapshot), so that recovery falls back to the previous
// set, or to replaying the whole log if there is none:
//
//  1. find the valid consensus-module (serviceId -1) SNAPSHOT or
//     STANDBY_SNAPSHOT entries with the highest logPosition (there is one
//     per kind or archive endpoint); each must have a valid TERM entry for
//     its term, otherwise nothing is changed and an error is returned;
//  2. from each of them walk backwards in sorted order, invalidating
//     consecutive valid snapshot entries of serviceId -1, 0, 1, ...
//
// Each invalidation is its own synced write, the consensus module's entry
// first: if one fails, the set is already no longer the latest, and the
// error says so. It returns false when there is no valid consensus-module
// snapshot.
func (l *Log) InvalidateLatestSnapshot() (bool, error) {
	if err := l.writable(); err != nil {
		return false, err
	}
	set, err := latestSet(l.entries, l.termIndex)
	if err != nil {
		return false, err
	}
	for _, i := range set {
		if err := l.invalidate(i); err != nil {
			return false, err
		}
	}
	return len(set) > 0, nil
}

// latestSet returns the indices into entries (sorted) of the entries
// InvalidateLatestSnapshot invalidates, in the order it invalidates them.
func latestSet(entries []Entry, termIndex func(int64) int) ([]int, error) {
	var starts []int
	high := int64(NullValue)
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if !isValidAnySnapshot(e) || e.ServiceID != ConsensusModuleServiceID {
			continue
		}
		if e.LogPosition < high {
			break // an earlier snapshot: stop searching
		}
		if termIndex(e.LeadershipTermID) < 0 {
			return nil, fmt.Errorf("recordinglog: no matching term for snapshot: leadershipTermId=%d (%v)", e.LeadershipTermID, *e)
		}
		if e.LogPosition > high {
			starts = starts[:0]
			high = e.LogPosition
		}
		starts = append(starts, i)
	}
	var set []int
	for k := len(starts) - 1; k >= 0; k-- {
		serviceID := int32(ConsensusModuleServiceID)
		for i := starts[k]; i >= 0; i-- {
			e := &entries[i]
			if !isValidAnySnapshot(e) || e.ServiceID != serviceID {
				break
			}
			set = append(set, i)
			serviceID++
		}
	}
	return set, nil
}

// PlanAfterInvalidation returns the recovery plan InvalidateLatestSnapshot
// would leave (the latest set invalid, nothing written), or nil when there
// is no valid consensus-module snapshot to invalidate.
func (l *Log) PlanAfterInvalidation(recs Recordings, serviceCount int) (*RecoveryPlan, error) {
	set, err := latestSet(l.entries, l.termIndex)
	if err != nil || len(set) == 0 {
		return nil, err
	}
	entries := slices.Clone(l.entries)
	for _, i := range set {
		entries[i].Valid = false
	}
	return PlanRecovery(entries, recs, serviceCount)
}

// SetServiceCount is the number of services whose snapshots the latest
// consensus-module snapshot set holds: the consecutive SNAPSHOT entries
// (valid or not) of service 0, 1, ... just before the consensus module's,
// at its term and log position. It is -1 when there is no valid consensus-module
// snapshot.
func (l *Log) SetServiceCount() int {
	for i := len(l.entries) - 1; i >= 0; i-- {
		cm := &l.entries[i]
		if !isValidSnapshot(cm) || cm.ServiceID != ConsensusModuleServiceID {
			continue
		}
		n := 0
		for j := i - 1; j >= 0; j-- {
			e := &l.entries[j]
			if e.Type != TypeSnapshot || e.ServiceID != int32(n) || e.LogPosition != cm.LogPosition || e.LeadershipTermID != cm.LeadershipTermID {
				break
			}
			n++
		}
		return n
	}
	return -1
}

// RevalidateEntry undoes InvalidateEntry: it rewrites only the type field
// of the entry with the given entry index, with bit 31 cleared, restoring
// the entry's original type (the invalid flag is the only bit an
// invalidation sets). Revalidating a valid entry rewrites the same value. A
// TERM is not revalidated while another valid TERM of its term exists.
func (l *Log) RevalidateEntry(entryIndex int) error {
	if err := l.writable(); err != nil {
		return err
	}
	for i := range l.entries {
		if l.entries[i].Index == entryIndex {
			e := &l.entries[i]
			if e.Type == TypeTerm && !e.Valid && l.termIndex(e.LeadershipTermID) >= 0 {
				return fmt.Errorf("recordinglog: entry #%d: term %d already has a valid TERM entry", entryIndex, e.LeadershipTermID)
			}
			return l.revalidate(i)
		}
	}
	return fmt.Errorf("recordinglog: unknown entry index %d", entryIndex)
}

func (l *Log) revalidate(i int) error {
	e := &l.entries[i]
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(e.Type))
	if err := l.write(b[:], e.Offset+EntryTypeOffset, "revalidate entry"); err != nil {
		return err
	}
	e.Valid = true
	return nil
}

// RevalidateLatestInvalidatedSnapshot undoes the last
// InvalidateLatestSnapshot: it finds the invalid consensus-module
// (serviceId -1) SNAPSHOT or STANDBY_SNAPSHOT entries with the lowest
// logPosition above the latest valid consensus-module snapshot (the set the
// last invalidation hit: each invalidation takes the highest valid set, so
// the sets above it were invalidated earlier), and from each walks
// backwards in sorted order clearing the invalid flag of the consecutive
// invalid snapshot entries of serviceId -1, 0, 1, ... . So Invalidate then
// Revalidate leaves the file byte-identical. Each entry's TERM must be
// valid, otherwise nothing is changed and an error is returned. It returns
// the entries revalidated (none when no invalidated set is above the
// latest valid one).
func (l *Log) RevalidateLatestInvalidatedSnapshot() ([]Entry, error) {
	if err := l.writable(); err != nil {
		return nil, err
	}
	floor := int64(NullValue) - 1
	for i := range l.entries {
		if e := &l.entries[i]; isValidAnySnapshot(e) && e.ServiceID == ConsensusModuleServiceID && e.LogPosition > floor {
			floor = e.LogPosition
		}
	}
	isInvalidSnapshot := func(e *Entry) bool {
		return !e.Valid && (e.Type == TypeSnapshot || e.Type == TypeStandbySnapshot)
	}
	var starts []int
	low := int64(-1)
	for i := range l.entries {
		e := &l.entries[i]
		if !isInvalidSnapshot(e) || e.ServiceID != ConsensusModuleServiceID || e.LogPosition <= floor {
			continue
		}
		if low >= 0 && e.LogPosition > low {
			continue
		}
		if low < 0 || e.LogPosition < low {
			starts = starts[:0]
			low = e.LogPosition
		}
		starts = append(starts, i)
	}
	for _, i := range starts {
		if e := &l.entries[i]; l.termIndex(e.LeadershipTermID) < 0 {
			return nil, fmt.Errorf("recordinglog: no valid TERM entry for the invalidated snapshot %v: revalidate that term first", *e)
		}
	}
	var done []Entry
	for k := len(starts) - 1; k >= 0; k-- {
		serviceID := int32(ConsensusModuleServiceID)
		for i := starts[k]; i >= 0; i-- {
			e := &l.entries[i]
			if !isInvalidSnapshot(e) || e.ServiceID != serviceID || e.LogPosition != low {
				break
			}
			if err := l.revalidate(i); err != nil {
				return done, err
			}
			done = append(done, *e)
			serviceID++
		}
	}
	return done, nil
}
