package archive

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/matchlog/matchlog/internal/liveness"
	"github.com/matchlog/matchlog/internal/vfs"
)

// DefaultFileIoMaxLength is the default largest block the recorder writes
// (and syncs) at once: 16 MiB, not Aeron's 1 MiB
// (FILE_IO_MAX_LENGTH_DEFAULT).
//
// At file sync level >= 1 every block costs one sync, and a sync costs a
// near-fixed latency (a device flush, plus a journal commit at level 2)
// whatever the block size, so with small blocks the syncs set the pace:
// with Aeron's per-block fsync at sync level 2 the block size, not
// encoding, sets the client pause of a large snapshot. `matchlog bench
// archive` compares 1 MiB and 16 MiB blocks on the machine it runs on (docs/performance.md has the figures); the slower the device's
// flush, the more the block size matters. A 16 MiB block keeps full
// per-block durability and removes most of the syncs; the cost is that up
// to one block of the log is waiting to be made durable at a time.
const DefaultFileIoMaxLength = 16 * 1024 * 1024

// MinFileIoMaxLength and MaxFileIoMaxLength bound Options.FileIoMaxLength
// (Aeron requires a power of two >= 64 KiB).
const (
	MinFileIoMaxLength = 64 * 1024
	MaxFileIoMaxLength = 1024 * 1024 * 1024
)

// DefaultMarkTimeout is how recent another archive's activity timestamp
// must be for Open to consider it running (with its process still
// running: see MarkFile.IsLive).
const DefaultMarkTimeout = liveness.DefaultTimeout

// Errors of the Archive a caller may test with errors.Is.
var (
	// ErrArchiveActive is returned by Open (and CheckLive) when another
	// archive's mark file shows activity within the mark timeout and its
	// process still runs.
	ErrArchiveActive = errors.New("archive: another archive is active in this directory")
	// ErrArchiveClosed is returned by every method after Close.
	ErrArchiveClosed = errors.New("archive: archive closed")
	// ErrRecordingActive is returned for an operation that needs a
	// stopped recording (extend) on an active one.
	ErrRecordingActive = errors.New("archive: recording is active")
	// ErrRecordingStopped is returned by Poll and Record after Stop.
	ErrRecordingStopped = errors.New("archive: recording stopped")
	// ErrInvalidPosition is returned for a replay position before the
	// start, after the stop (or the recorded position), or not on a frame.
	ErrInvalidPosition = errors.New("archive: invalid replay position")
)

// Options configure an [Archive]. The zero value is valid: Aeron's layout
// with a 16 MiB block and no syncs.
type Options struct {
	// SegmentLength is the segment file length of new recordings: a power
	// of two in [64 KiB, 1 GiB], raised to the term length of a recording
	// whose terms are longer (Aeron's max(segmentFileLength,
	// termBufferLength)). 0 means DefaultSegmentLength (128 MiB).
	SegmentLength int32
	// FileIoMaxLength is the largest block written (and synced) at once:
	// a power of two in [64 KiB, 1 GiB]. 0 means DefaultFileIoMaxLength.
	FileIoMaxLength int
	// FileSyncLevel: 0 never syncs segments, 1 syncs data (File.Sync)
	// after each block, 2 data and metadata (File.SyncAll). At level >= 1
	// the directory is synced whenever a segment file is created.
	FileSyncLevel SyncLevel
	// CatalogSyncLevel is the catalog's sync level (0, 1, 2), which must
	// not be below FileSyncLevel.
	CatalogSyncLevel SyncLevel
	// SyncOnRollOver, at FileSyncLevel 0: [Recording.Record] makes a
	// recording durable up to its recorded position (File.SyncAll of every
	// segment written since its durable position, then the directory)
	// whenever the recording has moved into a segment beyond the one
	// holding that durable position. A crash then loses at most the tail of
	// the last segment, which Open's stop-position recovery cuts off, and
	// never leaves a hole in an earlier one. Level >= 1 syncs every block
	// anyway and ignores it. Source.SyncEachRecord overrides it per
	// recording.
	SyncOnRollOver bool
	// BackgroundSyncEvery, at FileSyncLevel 0 and when positive: once
	// [Recording.Record] has recorded this many bytes beyond the durable
	// position within one segment, it syncs them (File.SyncAll, no
	// directory sync) on a goroutine of its own, one such sync per
	// recording at a time, so that a roll-over sync never has a whole
	// segment of dirty pages to flush in the recorder's goroutine. What it
	// synced counts as durable from the next Record on.
	// Source.SyncEachRecord overrides it per recording.
	BackgroundSyncEvery int64
	// Clock returns the time in epoch ms for catalog timestamps, the mark
	// file and the sidecar index. Nil means time.Now. With ActivityInterval
	// set it is also called from the ticker goroutine, so it must then be
	// safe for concurrent use.
	Clock func() int64
	// CatalogCapacity is the catalog's minimum length (0:
	// DefaultCatalogCapacity).
	CatalogCapacity int64
	// MarkTimeout: a mark file whose activity timestamp is within this of
	// now and whose process still runs belongs to a running archive, and
	// Open refuses the directory before it changes any file.
	// 0 means DefaultMarkTimeout.
	MarkTimeout time.Duration
	// MarkErrorBufferLength is the mark file's error log length
	// (0: DefaultMarkErrorBufferLength).
	MarkErrorBufferLength int32
	// ActivityInterval, when positive, makes the Archive own a ticker
	// goroutine that refreshes the mark file's activity timestamp at this
	// interval (1 s is Aeron's). Close stops it. When 0 the owner must call
	// UpdateActivity at least every second (Poll does it too; see
	// [Recording.Poll]).
	ActivityInterval time.Duration
	// DeleteDelay is how long a segment renamed to *.deleted waits before
	// DeleteStep unlinks it (see [Archive.DeleteDetached]). 0 means
	// DefaultDeleteDelay (60 s); a negative value means no wait.
	DeleteDelay time.Duration
	// LeaveMarkFile makes Open an offline tool's: it refuses a live
	// archive by the mark file in dir, as always, but neither creates nor
	// rewrites archive-mark.dat, and Close leaves it as found. The mark
	// file may be another program's (real Aeron's archive writes its
	// channels, archive id and pid there), and a tool that only changes
	// the catalog and segments has no business rewriting it. Nothing then
	// tells another process the directory is in use: an offline tool is
	// run on a stopped archive, which stays stopped while it runs.
	LeaveMarkFile bool
	// Retention is the policy [Archive.Proposals] evaluates.
	Retention RetentionPolicy
	// RepairCatalog lets Open repair a catalog it would refuse when the
	// damage is what a crash inside the catalog's addNewRecording leaves
	// (an entry half-added after the last one, nextRecordingId not yet
	// advanced: catalogrepair.go), as recordinglog's Options.Repair does
	// for a torn entry; [Archive.CatalogRepaired] tells whether it did.
	RepairCatalog bool
	// KeepUnwrittenCatalog makes Open refuse a catalog holding only zeros
	// (or no bytes) instead of replacing it with a new one: set it when
	// something outside the archive names recordings, which such a
	// catalog would have lost.
	KeepUnwrittenCatalog bool
	// KeepCut, if not nil, gets the bytes Open's crash repair cuts from the
	// torn tail of a recording's last segment, before it cuts them
	// (VerifyOptions.KeepCut); an error fails Open before the cut.
	KeepCut func(segment string, offset int64, cut []byte) error
	// ScanMemo, if not nil, holds scans of last segments taken read-only
	// earlier in the same start (a recovery plan's check), which Open's
	// recovery takes instead of reading those segments again; see
	// ScanMemo for when that is sound.
	ScanMemo *ScanMemo
}

func (o *Options) resolve() error {
	if o.SegmentLength == 0 {
		o.SegmentLength = DefaultSegmentLength
	}
	if o.SegmentLength < MinSegmentLength || o.SegmentLength > MaxSegmentLength || bits.OnesCount32(uint32(o.SegmentLength)) != 1 {
		return fmt.Errorf("archive: segment length %d is not a power of two in [%d, %d]", o.SegmentLength, MinSegmentLength, MaxSegmentLength)
	}
	if o.FileIoMaxLength == 0 {
		o.FileIoMaxLength = DefaultFileIoMaxLength
	}
	if o.FileIoMaxLength < MinFileIoMaxLength || o.FileIoMaxLength > MaxFileIoMaxLength || bits.OnesCount64(uint64(o.FileIoMaxLength)) != 1 {
		return fmt.Errorf("archive: file io max length %d is not a power of two in [%d, %d]", o.FileIoMaxLength, MinFileIoMaxLength, MaxFileIoMaxLength)
	}
	if o.FileSyncLevel.Check() != nil || o.CatalogSyncLevel.Check() != nil {
		return fmt.Errorf("archive: sync levels must be 0, 1 or 2 (file %d, catalog %d)", o.FileSyncLevel, o.CatalogSyncLevel)
	}
	if o.BackgroundSyncEvery < 0 {
		return fmt.Errorf("archive: background sync interval %d is negative", o.BackgroundSyncEvery)
	}
	if o.CatalogSyncLevel < o.FileSyncLevel {
		return fmt.Errorf("archive: catalog sync level %d is below the file sync level %d", o.CatalogSyncLevel, o.FileSyncLevel)
	}
	if o.Clock == nil {
		o.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if o.MarkTimeout <= 0 {
		o.MarkTimeout = DefaultMarkTimeout
	}
	if o.MarkErrorBufferLength == 0 {
		o.MarkErrorBufferLength = DefaultMarkErrorBufferLength
	}
	if o.DeleteDelay == 0 {
		o.DeleteDelay = DefaultDeleteDelay
	} else if o.DeleteDelay < 0 {
		o.DeleteDelay = 0
	}
	return nil
}

// Archive is an open archive directory: the catalog, the mark file, the
// active recordings and the open replays. Recording and replay are driven
// by the caller's duty cycle ([Recording.Poll], [Replay.Poll]); the Archive
// starts no goroutine except the optional activity ticker.
//
// Concurrency: different recordings may be driven from different
// goroutines. Each Recording (Poll, Record, Stop) and each Replay must be
// driven by one goroutine at a time, but the block writes and syncs of one
// recording never wait for another's: the Archive's catalog mutex is held
// only around catalog, recording-table and replay-table updates (starting,
// extending and stopping a recording; a recording's segment creation and
// index updates are its own). The Archive's methods lock it and may be
// called from any goroutine, except Close, which must not run concurrently
// with anything else, and Detach and Purge, which read the open replays'
// positions and so must not run while a replay is polled elsewhere. [Archive.Catalog] gives the catalog itself, which is
// safe to read only while no other goroutine starts, extends or stops a
// recording; use [Archive.Descriptor] then. The log buffer a recording
// reads may be written by another goroutine.
type Archive struct {
	catalogRepaired bool // Open repaired the catalog (Options.RepairCatalog)
	// removedCompactTemp: Open removed this leftover of an interrupted
	// compaction (compact.go).
	removedCompactTemp string
	fs                 vfs.FS
	dir                string
	opts               Options
	cat                *Catalog

	// mu is the catalog mutex: it guards cat, recordings, replays,
	// deletes and retention.
	mu sync.Mutex

	markMu     sync.Mutex
	mark       vfs.File // nil once closed
	lastActive int64
	tickStop   chan struct{}
	tickDone   chan struct{}

	recordings map[int64]*Recording
	replays    []*Replay
	recovered  []RecordingReport
	closed     bool

	deletes   deleteQueue    // segments renamed to *.deleted (remove.go)
	retention retentionState // last retention evaluation (retention.go)
}

// Open opens (or creates) the archive in dir: it refuses a directory whose
// mark file shows another live archive, writes a fresh archive-mark.dat
// (version last), opens or creates archive.catalog, and settles every
// recording left active by a crash as Aeron does on restart: its stop
// position is computed from its last segment (a torn tail is cut off), a
// missing empty following segment is created and short segment files are
// restored to full length. Segment files an earlier run renamed to *.deleted
// are scheduled for unlinking again (see [Archive.DeleteDetached]), and
// segments a crash left prepared ahead of time (*.rec.prep) are removed.
func Open(fsys vfs.FS, dir string, opts Options) (*Archive, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if err := opts.Retention.resolve(fsys); err != nil {
		return nil, err
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("archive: create %s: %w", dir, err)
	}
	a := &Archive{fs: fsys, dir: dir, opts: opts, recordings: map[int64]*Recording{}}
	if err := a.createMark(); err != nil {
		return nil, err
	}
	if err := a.openCatalog(); err != nil {
		a.closeMark()
		return nil, err
	}
	if err := a.recover(); err != nil {
		a.cat.Close()
		a.closeMark()
		return nil, err
	}
	if err := a.removePrepared(); err != nil {
		a.cat.Close()
		a.closeMark()
		return nil, err
	}
	if err := a.scheduleLeftovers(); err != nil {
		a.cat.Close()
		a.closeMark()
		return nil, err
	}
	if opts.ActivityInterval > 0 {
		a.tickStop, a.tickDone = make(chan struct{}), make(chan struct{})
		go a.tick(opts.ActivityInterval)
	}
	return a, nil
}

func (a *Archive) createMark() error {
	name := a.fs.Join(a.dir, MarkFileName)
	now := a.opts.Clock()
	if a.opts.LeaveMarkFile {
		a.lastActive = now
		return CheckLive(a.fs, a.dir, now, a.opts.MarkTimeout)
	}
	f, err := a.fs.OpenRW(name)
	switch {
	case err == nil:
		m, rerr := ReadMarkFile(f)
		if rerr == nil {
			if err := m.CheckLive(name, now, a.opts.MarkTimeout); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return fmt.Errorf("archive: reset mark file: %w", err)
		}
	case errors.Is(err, vfs.ErrNotExist):
		if f, err = a.fs.Create(name); err != nil {
			return fmt.Errorf("archive: create mark file: %w", err)
		}
	default:
		return fmt.Errorf("archive: open mark file: %w", err)
	}
	m := MarkFile{
		ActivityTimestamp: now,
		StartTimestamp:    now,
		PID:               int64(os.Getpid()),
		ErrorBufferLength: a.opts.MarkErrorBufferLength,
		ArchiveID:         -1,
	}
	if err := CreateMarkFile(f, m); err != nil {
		f.Close()
		return err
	}
	if a.opts.FileSyncLevel > 0 {
		if err := a.fs.SyncDir(a.dir); err != nil {
			f.Close()
			return fmt.Errorf("archive: sync %s: %w", a.dir, err)
		}
	}
	a.mark, a.lastActive = f, now
	return nil
}

func (a *Archive) openCatalog() error {
	copts := CatalogOptions{Capacity: a.opts.CatalogCapacity, SyncLevel: a.opts.CatalogSyncLevel}
	tmp, err := removeCompactTemp(a.fs, a.dir)
	if err != nil {
		return err
	}
	a.removedCompactTemp = tmp
	_, err = a.fs.Stat(a.fs.Join(a.dir, CatalogFileName))
	switch {
	case err == nil:
		a.cat, err = OpenCatalogFile(a.fs, a.dir, copts)
		if errors.Is(err, ErrCorrupt) && a.opts.RepairCatalog {
			if fixed, ferr := repairCatalog(a.fs, a.dir, a.opts.KeepUnwrittenCatalog, a.catalogCapacity()); ferr != nil && !errors.Is(ferr, ErrCorrupt) {
				return fmt.Errorf("%w (repair: %w)", err, ferr)
			} else if fixed {
				a.catalogRepaired = true
				if _, serr := a.fs.Stat(a.fs.Join(a.dir, CatalogFileName)); errors.Is(serr, vfs.ErrNotExist) {
					a.cat, err = CreateCatalogFile(a.fs, a.dir, copts)
				} else {
					a.cat, err = OpenCatalogFile(a.fs, a.dir, copts)
				}
			}
		}
		if errors.Is(err, ErrCorrupt) && !a.opts.KeepUnwrittenCatalog && a.catalogNeverWritten() {
			// A creation that failed before the header was written:
			// nothing to lose, create it again.
			if err = a.fs.Remove(a.fs.Join(a.dir, CatalogFileName)); err == nil {
				a.cat, err = CreateCatalogFile(a.fs, a.dir, copts)
			}
		}
	case errors.Is(err, vfs.ErrNotExist):
		a.cat, err = CreateCatalogFile(a.fs, a.dir, copts)
	default:
		err = fmt.Errorf("archive: stat catalog: %w", err)
	}
	return err
}

// catalogNeverWritten reports whether the catalog file holds only zeros.
func (a *Archive) catalogNeverWritten() bool {
	f, err := a.fs.Open(a.fs.Join(a.dir, CatalogFileName))
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := readAll(f)
	return err == nil && allZero(b)
}

// closeMark writes activity -1 (a clean stop), syncs and closes the mark
// file. Safe to call more than once.
func (a *Archive) closeMark() error {
	a.markMu.Lock()
	defer a.markMu.Unlock()
	if a.mark == nil {
		return nil
	}
	f := a.mark
	a.mark = nil
	err := UpdateMarkActivity(f, markMessageHeaderSize, NullTimestamp)
	if err == nil {
		if serr := f.Sync(); serr != nil {
			err = fmt.Errorf("archive: sync mark file: %w", serr)
		}
	}
	return errors.Join(err, f.Close())
}

// UpdateActivity writes the current time into the mark file's activity
// timestamp, which tells other processes this archive is alive. Call it at
// least every second unless Options.ActivityInterval runs a ticker.
func (a *Archive) UpdateActivity() error {
	a.markMu.Lock()
	defer a.markMu.Unlock()
	if a.opts.LeaveMarkFile {
		return a.check()
	}
	if a.mark == nil {
		return ErrArchiveClosed
	}
	now := a.opts.Clock()
	a.lastActive = now
	return UpdateMarkActivity(a.mark, markMessageHeaderSize, now)
}

// maybeUpdateActivity refreshes the mark file if a second has passed.
func (a *Archive) maybeUpdateActivity(now int64) error {
	if a.tickStop != nil {
		return nil
	}
	a.markMu.Lock()
	defer a.markMu.Unlock()
	if now-a.lastActive < 1000 || a.opts.LeaveMarkFile {
		return nil
	}
	if a.mark == nil {
		return ErrArchiveClosed
	}
	a.lastActive = now
	return UpdateMarkActivity(a.mark, markMessageHeaderSize, now)
}

func (a *Archive) tick(interval time.Duration) {
	defer close(a.tickDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-a.tickStop:
			return
		case <-t.C:
			_ = a.UpdateActivity() // a failure shows as a stale mark file
		}
	}
}

// Close stops every active recording (see [Recording.Stop]), closes every
// replay, syncs and closes the catalog and the sidecar indexes, stops the
// activity ticker and writes activity -1 into the mark file, as a clean
// Aeron shutdown does. It returns every error met; the Archive is closed
// whatever happens.
func (a *Archive) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	a.mu.Lock()
	var active []*Recording
	for _, id := range a.activeIDs() {
		active = append(active, a.recordings[id])
	}
	replays := slices.Clone(a.replays)
	a.mu.Unlock()
	for _, r := range active {
		errs = append(errs, r.Stop())
	}
	for _, rp := range replays {
		errs = append(errs, rp.Close())
	}
	if a.tickStop != nil {
		close(a.tickStop)
		<-a.tickDone
	}
	if a.opts.CatalogSyncLevel > 0 {
		errs = append(errs, a.cat.Sync())
	}
	errs = append(errs, a.cat.Close(), a.closeMark())
	return errors.Join(errs...)
}

func (a *Archive) activeIDs() []int64 {
	ids := make([]int64, 0, len(a.recordings))
	for id := range a.recordings {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (a *Archive) check() error {
	if a.closed {
		return ErrArchiveClosed
	}
	return nil
}

// Dir is the archive directory.
func (a *Archive) Dir() string { return a.dir }

// Catalog is the archive's open catalog, for reading. Changing it behind
// the Archive's back is not supported.
func (a *Archive) Catalog() *Catalog { return a.cat }

// ListRecordings returns the descriptors of the VALID recordings in id
// order. An active recording has stopPosition -1 (as in Aeron's catalog);
// see RecordedPosition.
func (a *Archive) ListRecordings() []RecordingDescriptor {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cat.Recordings()
}

// Descriptor returns the catalog descriptor of recording id (as
// Catalog.Descriptor, under the catalog mutex).
func (a *Archive) Descriptor(id int64) (RecordingDescriptor, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cat.Descriptor(id)
}

// ActiveRecordings returns the ids of the recordings being recorded.
func (a *Archive) ActiveRecordings() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.activeIDs()
}

// Recording returns the active recording id, or nil.
func (a *Archive) Recording(id int64) *Recording {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recordings[id]
}

// RecordedPosition is the position up to which recording id has been
// written: the recorder's position while it is active, the catalog's stop
// position once it has stopped.
func (a *Archive) RecordedPosition(id int64) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.recordedPosition(id)
}

func (a *Archive) recordedPosition(id int64) (int64, error) {
	if r, ok := a.recordings[id]; ok {
		return r.pos.Load(), nil
	}
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return 0, err
	}
	return d.StopPosition, nil
}

// catalogCapacity is the length Open creates a catalog with.
func (a *Archive) catalogCapacity() int64 {
	if a.opts.CatalogCapacity > 0 {
		return a.opts.CatalogCapacity
	}
	return DefaultCatalogCapacity
}

// CatalogRepaired reports whether Open repaired the catalog (see
// Options.RepairCatalog).
func (a *Archive) CatalogRepaired() bool { return a.catalogRepaired }

// Recovered returns what Open found and repaired for the recordings a
// crash had left active.
func (a *Archive) Recovered() []RecordingReport { return a.recovered }

// SegmentTimes returns what the sidecar index knows about the segments of
// recording id (in memory for an active recording). When the index lags
// the recording (records lost in a crash, or an unreadable index), every
// segment holding bytes past the last indexed position is given the
// recording's stop timestamp, which is never older than the lost records.
func (a *Archive) SegmentTimes(id int64) ([]SegmentTime, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.segmentTimes(id)
}

func (a *Archive) segmentTimes(id int64) ([]SegmentTime, error) {
	if r, ok := a.recordings[id]; ok {
		r.idxMu.Lock()
		defer r.idxMu.Unlock()
		return slices.Clone(r.idx.segs), nil
	}
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return nil, err
	}
	segs, err := ReadIndex(a.fs, a.dir, id)
	if errors.Is(err, ErrCorrupt) {
		segs, err = nil, nil
	}
	if err != nil || d.StopPosition == NullPosition || checkDescriptorGeometry(&d) != nil {
		return segs, err
	}
	indexed := d.StartPosition
	for _, s := range segs {
		indexed = max(indexed, min(s.Position, d.StopPosition))
	}
	tl, sl := d.TermBufferLength, d.SegmentFileLength
	for b := SegmentFileBasePosition(d.StartPosition, indexed, tl, sl); indexed < d.StopPosition && b < d.StopPosition; b += int64(sl) {
		segs = mergeSegmentTime(segs, SegmentTime{Base: b, Position: min(b+int64(sl), d.StopPosition), LastTimestamp: d.StopTimestamp})
	}
	return segs, nil
}

// startBase is the base of the segment holding d's start: the lowest
// segment the sidecar index keeps when it is opened for appending.
func startBase(d RecordingDescriptor) int64 {
	if checkDescriptorGeometry(&d) != nil {
		return 0
	}
	return SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength)
}

// openIndex opens the sidecar index of recording id for appending (minBase:
// segments below it are dropped from it); at file sync level >= 1 a
// freshly written header is synced.
func (a *Archive) openIndex(id, minBase int64) (*indexFile, error) {
	x, fresh, err := openIndex(a.fs, a.dir, id, minBase, a.opts.FileSyncLevel > 0)
	if err == nil && fresh && a.opts.FileSyncLevel > 0 {
		if err = x.f.Sync(); err != nil {
			x.close()
			err = fmt.Errorf("archive: sync index: %w", err)
		}
	}
	return x, err
}

// AgeCutoff proposes a new start position for recording id under an age
// retention rule, as Kafka's largestTimestamp rule: walking the segments
// from the oldest, each whose largest timestamp is older than beforeMs may
// go, up to the first that may not. The result is a segment boundary (the
// base of the first segment kept) and never passes the base of the
// segment holding the stop (or recorded) position; it is the current start
// position's segment base when nothing may go. It only proposes: detach
// and purge make their own checks.
func (a *Archive) AgeCutoff(id int64, beforeMs int64) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ageCutoff(id, beforeMs)
}

func (a *Archive) ageCutoff(id int64, beforeMs int64) (int64, error) {
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return 0, err
	}
	end, err := a.recordedPosition(id)
	if err != nil {
		return 0, err
	}
	segs, err := a.segmentTimes(id)
	if err != nil {
		return 0, err
	}
	tl, sl := d.TermBufferLength, d.SegmentFileLength
	cut := SegmentFileBasePosition(d.StartPosition, d.StartPosition, tl, sl)
	last := SegmentFileBasePosition(d.StartPosition, end, tl, sl)
	times := map[int64]int64{}
	for _, s := range segs {
		times[s.Base] = s.LastTimestamp
	}
	for cut < last {
		ts, ok := times[cut]
		if !ok || ts >= beforeMs {
			break
		}
		cut += int64(sl)
	}
	return cut, nil
}

// removePrepared removes the segment files a crash left prepared ahead of
// time (*.rec.prep, see [PreparedSuffix]): none of them was ever a segment.
func (a *Archive) removePrepared() error {
	names, err := a.fs.List(a.dir)
	if err != nil {
		return fmt.Errorf("archive: list %s: %w", a.dir, err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, PreparedSuffix) {
			if err := a.fs.Remove(a.fs.Join(a.dir, name)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
				return fmt.Errorf("archive: remove %s: %w", name, err)
			}
		}
	}
	return nil
}

// recover settles the recordings a crash left active (stopPosition -1),
// and makes sure every stopped recording has its stop segment at full
// length (a crash may have cut the length of a segment created just
// before it, or lost its directory entry, even after a tool such as Verify
// settled the stop position).
func (a *Archive) recover() error {
	for i, e := range a.cat.Entries() {
		if e.State != StateValid {
			continue
		}
		if e.Descriptor.StopPosition != NullPosition {
			if err := a.ensureStopSegment(e.Descriptor); err != nil {
				return err
			}
			continue
		}
		rr, err := a.settle(i, e)
		if err != nil {
			return err
		}
		a.recovered = append(a.recovered, rr)
	}
	return nil
}

// ensureStopSegment creates the segment holding d's stop position if it is
// missing, or extends it with zeros to the segment length if it is short.
func (a *Archive) ensureStopSegment(d RecordingDescriptor) error {
	if checkDescriptorGeometry(&d) != nil || d.StopPosition < d.StartPosition {
		return nil // Verify reports it; nothing sensible to create
	}
	base := SegmentFileBasePosition(d.StartPosition, d.StopPosition, d.TermBufferLength, d.SegmentFileLength)
	name := SegmentFileName(d.RecordingID, base)
	size, err := a.fs.Stat(a.fs.Join(a.dir, name))
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		f, err := a.createSegment(d.RecordingID, base, d.SegmentFileLength, false)
		if err != nil {
			return err
		}
		return closeFile(f)
	case err != nil:
		return fmt.Errorf("archive: stat %s: %w", name, err)
	case size < int64(d.SegmentFileLength):
		return a.fixLength(name, int64(d.SegmentFileLength))
	}
	return nil
}

// settle computes the stop position of the i-th catalog entry from its
// files, as Aeron's catalog does on restart and ArchiveTool verify does
// with truncation: short segment files are restored to full length, a torn
// tail is cut off, the stop position and timestamp are written, the empty
// following segment is created when the stop is on a segment boundary, and
// the sidecar index is brought up to the stop position.
func (a *Archive) settle(i int, e CatalogEntry) (RecordingReport, error) {
	d := e.Descriptor
	segs, _, err := segmentIndex(a.fs, a.dir)
	if err != nil {
		return RecordingReport{}, err
	}
	files := segs[d.RecordingID]
	memo := a.opts.ScanMemo
	if checkDescriptorGeometry(&d) == nil {
		for j, f := range files {
			if f.Size < int64(d.SegmentFileLength) {
				if err := a.fixLength(f.Name, int64(d.SegmentFileLength)); err != nil {
					return RecordingReport{}, err
				}
				files[j].Size = int64(d.SegmentFileLength)
				// An earlier scan saw the file short (or as it was
				// before it was cut): scanned again.
				memo = nil
			}
		}
	}
	rr, err := verifyEntry(a.fs, a.dir, a.cat, i, e, files, VerifyOptions{Truncate: true, KeepCut: a.opts.KeepCut, ScanMemo: memo}, a.opts.Clock)
	if err != nil {
		return rr, err
	}
	d, err = a.cat.Descriptor(d.RecordingID)
	if err != nil || d.StopPosition == NullPosition {
		return rr, err // not settled (invalid): left for the operator
	}
	if err := a.ensureStopSegment(d); err != nil {
		return rr, err
	}
	idx, err := a.openIndex(d.RecordingID, startBase(d))
	if err != nil {
		return rr, err
	}
	err = a.settleIndex(idx, d)
	return rr, errors.Join(err, idx.close())
}

// settleIndex makes the index cover [start, stop]: segments holding bytes
// past the last indexed position get the recovery time.
func (a *Archive) settleIndex(idx *indexFile, d RecordingDescriptor) error {
	indexed := d.StartPosition
	for _, s := range idx.segs {
		indexed = max(indexed, min(s.Position, d.StopPosition))
	}
	now := a.opts.Clock()
	tl, sl := d.TermBufferLength, d.SegmentFileLength
	if indexed < d.StopPosition {
		for b := SegmentFileBasePosition(d.StartPosition, indexed, tl, sl); b < d.StopPosition; b += int64(sl) {
			if err := idx.note(b, min(b+int64(sl), d.StopPosition), now, true); err != nil {
				return err
			}
		}
	}
	if a.opts.FileSyncLevel > 0 {
		if err := idx.f.Sync(); err != nil {
			return fmt.Errorf("archive: sync index: %w", err)
		}
	}
	return nil
}

func (a *Archive) fixLength(name string, size int64) error {
	f, err := a.fs.OpenRW(a.fs.Join(a.dir, name))
	if err != nil {
		return fmt.Errorf("archive: open %s: %w", name, err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		err = fmt.Errorf("archive: restore %s to %d bytes: %w", name, size, err)
	}
	return errors.Join(err, f.Close())
}

// createSegment creates a segment file (it must not exist), preallocates it
// to its full length (or, sparse, sets the length) and, at file sync level
// >= 1, syncs it and the directory.
func (a *Archive) createSegment(id, base int64, segLen int32, sparse bool) (vfs.File, error) {
	name := a.fs.Join(a.dir, SegmentFileName(id, base))
	f, err := a.fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("archive: create segment: %w", err)
	}
	if err := a.prepareSegment(f, segLen, sparse); err != nil {
		f.Close()
		return nil, err
	}
	if a.opts.FileSyncLevel > 0 {
		if err := a.fs.SyncDir(a.dir); err != nil {
			f.Close()
			return nil, fmt.Errorf("archive: sync %s: %w", a.dir, err)
		}
	}
	return f, nil
}

// prepareSegment gives f its full length — preallocated, or as a sparse
// file — and, at sync level >= 1, makes the length durable.
func (a *Archive) prepareSegment(f vfs.File, segLen int32, sparse bool) error {
	if sparse {
		if err := f.Truncate(int64(segLen)); err != nil {
			return fmt.Errorf("archive: set the length of %s: %w", f.Name(), err)
		}
	} else if err := f.Preallocate(int64(segLen)); err != nil {
		return fmt.Errorf("archive: preallocate %s: %w", f.Name(), err)
	}
	if a.opts.FileSyncLevel > 0 {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("archive: sync %s: %w", f.Name(), err)
		}
	}
	return nil
}

// syncFile applies the file sync level to f.
func (a *Archive) syncFile(f vfs.File) error { return a.opts.FileSyncLevel.Sync(f) }
