package archive

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Removing segments, as Aeron's ArchiveConductor (detachSegments /
// isValidDetach, deleteDetachedSegments / isDeleteAllowed, purgeSegments)
// with Kafka's two-phase delete:
//
//   - Detach moves the catalog start position to a segment boundary; files
//     stay, so a failed check after it can still be undone by hand (seeds
//     000: detach, validate, then delete).
//   - DeleteDetached renames every segment file wholly below the catalog
//     start to "<name>.deleted" at once, and schedules the unlinks after
//     Options.DeleteDelay (Kafka's log.segment.delete.delay.ms, 60 s), so
//     that a reader holding a file open, or about to open it under its new
//     name, finishes first. The unlinks are done one file per
//     [Archive.DeleteStep], called from the owner's duty cycle, so deleting
//     thousands of segments never stalls recording.
//   - Purge is Detach then DeleteDetached, with both checks made first.
//
// Nothing deletes a segment file the catalog still references: every rename
// is of a file wholly below the catalog start, and the catalog is synced
// (whatever the catalog sync level) before the first rename, so no crash can
// bring back an older start position above a renamed file. After a crash,
// Open schedules the "*.rec.deleted" files it finds again (it never renames
// them back); a ".deleted" file that is not below its recording's start
// (only a foreign tool could make one) is left alone.

// DefaultDeleteDelay is the delay between renaming a segment to *.deleted and
// unlinking it: Kafka's log.segment.delete.delay.ms default.
const DefaultDeleteDelay = 60 * time.Second

// DeletedSuffix is appended to a segment file's name when it is scheduled
// for deletion. Aeron's tools and this package's Verify and Describe only
// index "*.rec" names, so a renamed file is out of the archive at once.
const DeletedSuffix = ".deleted"

var (
	// ErrInvalidDetach is satisfied by every [DetachError].
	ErrInvalidDetach = errors.New("archive: invalid detach")
	// ErrDeleteInProgress is returned by DeleteDetached and Purge while
	// files of the recording wait to be unlinked (Aeron's isDeleteAllowed).
	ErrDeleteInProgress = errors.New("archive: a delete of this recording's segments is in progress")
)

// DetachRule names the rule of Aeron's isValidDetach a new start broke.
type DetachRule int

const (
	// DetachNotSegmentBoundary: newStart is not the base of a segment.
	DetachNotSegmentBoundary DetachRule = iota + 1
	// DetachNotAfterStart: newStart does not detach at least the segment
	// holding the current start (newStart < base(start) + segmentLength).
	DetachNotAfterStart
	// DetachActiveSegment: newStart is past the base of the segment being
	// recorded into (base(recordedPosition)) of an active recording.
	DetachActiveSegment
	// DetachPastStopSegment: newStart is past the base of the segment
	// holding the stop position of a stopped recording.
	DetachPastStopSegment
	// DetachReplaying: a replay of the recording is below newStart.
	DetachReplaying
)

func (r DetachRule) String() string {
	switch r {
	case DetachNotSegmentBoundary:
		return "not a segment boundary"
	case DetachNotAfterStart:
		return "not after the start segment"
	case DetachActiveSegment:
		return "inside the active segment"
	case DetachPastStopSegment:
		return "past the stop segment"
	case DetachReplaying:
		return "in a range being replayed"
	}
	return fmt.Sprintf("DetachRule(%d)", int(r))
}

// DetachError is a refused detach (or purge): the rule broken and the
// numbers that broke it. It satisfies errors.Is(err, ErrInvalidDetach).
type DetachError struct {
	RecordingID int64
	NewStart    int64
	Rule        DetachRule
	Detail      string
}

func (e *DetachError) Error() string {
	return fmt.Sprintf("archive: detach recording %d to %d: %s: %s", e.RecordingID, e.NewStart, e.Rule, e.Detail)
}

// Is makes a DetachError satisfy errors.Is(err, ErrInvalidDetach).
func (e *DetachError) Is(target error) bool { return target == ErrInvalidDetach }

// PendingDelete is a segment file renamed to *.deleted and waiting to be
// unlinked.
type PendingDelete struct {
	RecordingID int64
	Name        string // file name in the archive directory, with DeletedSuffix
	Size        int64
	Due         int64 // epoch ms (the archive's clock) from which it may go
}

// deleteQueue is the Archive's state of pending unlinks, oldest first.
type deleteQueue struct {
	pending  []PendingDelete
	inFlight map[int64]int // recording id -> files pending
}

func (q *deleteQueue) add(p PendingDelete) {
	if q.inFlight == nil {
		q.inFlight = map[int64]int{}
	}
	q.pending = append(q.pending, p)
	q.inFlight[p.RecordingID]++
}

func (q *deleteQueue) pop() {
	p := q.pending[0]
	q.pending[0] = PendingDelete{}
	q.pending = q.pending[1:]
	if q.inFlight[p.RecordingID]--; q.inFlight[p.RecordingID] <= 0 {
		delete(q.inFlight, p.RecordingID)
	}
}

// checkDetach applies Aeron's isValidDetach to newStart.
func (a *Archive) checkDetach(id, newStart int64) (RecordingDescriptor, error) {
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return d, err
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return d, fmt.Errorf("archive: recording %d: %w", id, err)
	}
	rec, active := a.recordings[id]
	end := d.StopPosition
	if active {
		end = rec.pos.Load()
	} else if end == NullPosition {
		return d, fmt.Errorf("archive: recording %d has no stop position; reopen the archive to settle it", id)
	}
	if err := detachRules(&d, newStart, end, active); err != nil {
		return d, err
	}
	for _, rp := range a.replays {
		if rp.id == id && !rp.closed && rp.rd.pos < newStart {
			return d, &DetachError{RecordingID: id, NewStart: newStart, Rule: DetachReplaying,
				Detail: fmt.Sprintf("a replay is at %d (from %d)", rp.rd.pos, rp.from)}
		}
	}
	return d, nil
}

// detachRules is Aeron's isValidDetach for newStart of the recording d
// whose recorded end is end (active: still being recorded), without the
// replay rule.
func detachRules(d *RecordingDescriptor, newStart, end int64, active bool) error {
	tl, sl := d.TermBufferLength, d.SegmentFileLength
	base := func(p int64) int64 { return SegmentFileBasePosition(d.StartPosition, p, tl, sl) }
	refuse := func(rule DetachRule, format string, args ...any) error {
		return &DetachError{RecordingID: d.RecordingID, NewStart: newStart, Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	first := base(d.StartPosition) + int64(sl)
	switch {
	case newStart < 0 || newStart != base(newStart):
		return refuse(DetachNotSegmentBoundary, "segments of %d bytes start at multiples of %d from %d", sl, sl, base(d.StartPosition))
	case newStart < first:
		return refuse(DetachNotAfterStart, "start %d is in the segment at %d; the lowest new start is %d", d.StartPosition, base(d.StartPosition), first)
	case active && newStart > base(end):
		return refuse(DetachActiveSegment, "recording is active at %d, in the segment at %d", end, base(end))
	case !active && newStart > base(end):
		return refuse(DetachPastStopSegment, "stop position %d is in the segment at %d", end, base(end))
	}
	return nil
}

// CheckRemoval makes, on the stopped archive in dir and without opening it
// or changing any file, the checks that Detach (detach), DeleteDetached
// (del) or Purge (both) of recording id to newStart would make after an
// Open: the recording exists, newStart is a valid detach (Aeron's
// isValidDetach, against the stop position Open would settle a crashed
// recording at), and no file of the recording is still waiting to be
// unlinked (*.deleted below its start), unless drainFirst says the caller
// unlinks those first. A tool calls it before Open, so that a refused
// command leaves the mark file and the pending files as they were.
func CheckRemoval(fsys vfs.FS, dir string, id, newStart int64, detach, del, drainFirst bool) error {
	cat, err := OpenCatalogFile(fsys, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer cat.Close()
	d, err := cat.Descriptor(id)
	if err != nil {
		return err
	}
	if detach {
		if err := checkDescriptorGeometry(&d); err != nil {
			return fmt.Errorf("archive: recording %d: %w", id, err)
		}
		end := d.StopPosition
		if end == NullPosition {
			if end, _, err = ComputeStopPosition(fsys, dir, d); err != nil {
				return fmt.Errorf("archive: recording %d has no stop position and none can be computed: %w", id, err)
			}
		}
		if err := detachRules(&d, newStart, end, false); err != nil {
			return err
		}
	}
	if del && !drainFirst {
		files, err := DeletedSegments(fsys, dir)
		if err != nil {
			return err
		}
		entries := cat.Entries()
		n := 0
		for _, f := range files {
			fid, _, _ := ParseSegmentFileName(strings.TrimSuffix(f.Name, DeletedSuffix))
			if fid == id && segmentBelowStart(entries, fid, f.Base) {
				n++
			}
		}
		if n > 0 {
			return fmt.Errorf("%w: recording %d has %d files waiting (unlink them first: --now or --delay 0)", ErrDeleteInProgress, id, n)
		}
	}
	return nil
}

// Detach moves the start position of recording id to newStart, as Aeron's
// detachSegments. newStart must be a segment boundary at least one segment
// above the segment holding the current start, not above the base of the
// segment holding the recorded position (active recording) or the stop
// position (stopped one), and no replay of the recording may be below it;
// a refusal is a [*DetachError] naming the rule. The catalog is written and
// synced at the catalog sync level; no file is touched: the detached files
// stay until DeleteDetached.
func (a *Archive) Detach(id, newStart int64) error {
	if err := a.check(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.checkDetach(id, newStart); err != nil {
		return err
	}
	return a.detach(id, newStart)
}

func (a *Archive) detach(id, newStart int64) error {
	if err := a.cat.UpdateStartPosition(id, newStart); err != nil {
		return fmt.Errorf("archive: detach recording %d to %d: %w", id, newStart, err)
	}
	if r, ok := a.recordings[id]; ok {
		r.startPosition.Store(newStart)
	}
	return nil
}

// DeleteDetached deletes the segment files of recording id wholly below its
// start position (those a Detach left), in two phases: it syncs the catalog,
// renames every such file to <name>.deleted at once (syncing the directory
// at file sync level >= 1) and schedules the unlinks for Options.DeleteDelay
// later; [Archive.DeleteStep] does them, one file per call. It returns the
// number of files renamed (0 when there is nothing to delete). Only one
// delete per recording runs at a time: while files of the recording wait to
// be unlinked it returns ErrDeleteInProgress. On an error, the files renamed
// so far stay scheduled. Files still pending when the archive closes stay on
// disk as *.deleted; the next Open schedules them again.
func (a *Archive) DeleteDetached(id int64) (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deletes.inFlight[id] > 0 {
		return 0, fmt.Errorf("%w: recording %d has %d files waiting", ErrDeleteInProgress, id, a.deletes.inFlight[id])
	}
	d, err := a.cat.Descriptor(id)
	if err != nil {
		return 0, err
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return 0, fmt.Errorf("archive: recording %d: %w", id, err)
	}
	return a.deleteBelowStart(d)
}

// Purge detaches recording id to newStart and deletes the detached files,
// as Aeron's purgeSegments: both the detach rules and "no delete in
// progress" are checked before anything changes. It returns the number of
// files renamed for deletion.
func (a *Archive) Purge(id, newStart int64) (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.deletes.inFlight[id] > 0 {
		return 0, fmt.Errorf("%w: recording %d has %d files waiting", ErrDeleteInProgress, id, a.deletes.inFlight[id])
	}
	d, err := a.checkDetach(id, newStart)
	if err != nil {
		return 0, err
	}
	if err := a.detach(id, newStart); err != nil {
		return 0, err
	}
	d.StartPosition = newStart
	return a.deleteBelowStart(d)
}

// deleteBelowStart is the rename phase for the files of d wholly below
// base(d.StartPosition).
func (a *Archive) deleteBelowStart(d RecordingDescriptor) (int, error) {
	segs, _, err := segmentIndex(a.fs, a.dir)
	if err != nil {
		return 0, err
	}
	startBase := SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength)
	var doomed []SegmentFile
	for _, f := range segs[d.RecordingID] {
		if f.Base+int64(d.SegmentFileLength) <= startBase {
			doomed = append(doomed, f)
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	// The start position must be durable before any file below it goes,
	// whatever the catalog sync level: a crash must never bring back a
	// start position that references a renamed file.
	if err := a.cat.Sync(); err != nil {
		return 0, fmt.Errorf("archive: delete segments of recording %d: %w", d.RecordingID, err)
	}
	due := a.opts.Clock() + a.opts.DeleteDelay.Milliseconds()
	n := 0
	for _, f := range doomed {
		from := a.fs.Join(a.dir, f.Name)
		if err = a.fs.Rename(from, from+DeletedSuffix); err != nil {
			err = fmt.Errorf("archive: delete segments of recording %d: rename %s: %w", d.RecordingID, f.Name, err)
			break
		}
		a.deletes.add(PendingDelete{RecordingID: d.RecordingID, Name: f.Name + DeletedSuffix, Size: f.Size, Due: due})
		n++
	}
	if n > 0 && a.opts.FileSyncLevel > 0 {
		if serr := a.fs.SyncDir(a.dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("archive: sync %s: %w", a.dir, serr))
		}
	}
	return n, err
}

// DeleteStep unlinks at most one file whose delete delay has passed and
// returns how many it unlinked (0 or 1). Call it from the duty cycle, e.g.
// once per iteration: each call costs at most one unlink. A failed unlink
// is returned and retried by the next call.
func (a *Archive) DeleteStep() (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.deleteStep(false)
}

func (a *Archive) deleteStep(ignoreDelay bool) (int, error) {
	if len(a.deletes.pending) == 0 {
		return 0, nil
	}
	p := a.deletes.pending[0]
	if !ignoreDelay && a.opts.Clock() < p.Due {
		return 0, nil
	}
	if err := a.fs.Remove(a.fs.Join(a.dir, p.Name)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return 0, fmt.Errorf("archive: unlink %s: %w", p.Name, err)
	}
	a.deletes.pop()
	return 1, nil
}

// DrainDeletes calls DeleteStep until no file is due and returns how many
// files it unlinked; with ignoreDelay it unlinks every pending file at once
// (for offline tools, where no reader can be in flight).
func (a *Archive) DrainDeletes(ignoreDelay bool) (int, error) {
	if err := a.check(); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for {
		n, err := a.deleteStep(ignoreDelay)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// PendingDeletes lists the files waiting to be unlinked, oldest first.
func (a *Archive) PendingDeletes() []PendingDelete {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]PendingDelete(nil), a.deletes.pending...)
}

// DeleteInProgress reports whether files of recording id wait to be
// unlinked (DeleteDetached and Purge refuse it meanwhile).
func (a *Archive) DeleteInProgress(id int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.deletes.inFlight[id] > 0
}

// DeletedSegments lists the "*.rec.deleted" files of an archive directory:
// segments renamed for deletion and not yet unlinked.
func DeletedSegments(fsys vfs.FS, dir string) ([]SegmentFile, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: list %s: %w", dir, err)
	}
	var out []SegmentFile
	for _, name := range names {
		if !strings.HasSuffix(name, SegmentSuffix+DeletedSuffix) {
			continue
		}
		_, base, err := ParseSegmentFileName(strings.TrimSuffix(name, DeletedSuffix))
		if err != nil {
			continue
		}
		size, err := fsys.Stat(fsys.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("archive: stat %s: %w", name, err)
		}
		out = append(out, SegmentFile{Name: name, Base: base, Size: size})
	}
	return out, nil
}

// scheduleLeftovers schedules, on Open, the *.rec.deleted files a crash or
// an earlier run left: each wholly below its recording's start (or of a
// recording the catalog does not have) is unlinked DeleteDelay from now.
func (a *Archive) scheduleLeftovers() error {
	files, err := DeletedSegments(a.fs, a.dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return nil
	}
	entries := a.cat.Entries()
	due := a.opts.Clock() + a.opts.DeleteDelay.Milliseconds()
	for _, f := range files {
		id, _, _ := ParseSegmentFileName(strings.TrimSuffix(f.Name, DeletedSuffix))
		if !a.belowStart(entries, id, f.Base) {
			continue
		}
		a.deletes.add(PendingDelete{RecordingID: id, Name: f.Name, Size: f.Size, Due: due})
	}
	return nil
}

// belowStart reports whether the segment at base of recording id lies wholly
// below the start of its catalog entry (the VALID one, else the first), or
// the catalog has no entry for id, or only DELETED ones (DeleteRecording).
func (a *Archive) belowStart(entries []CatalogEntry, id, base int64) bool {
	return segmentBelowStart(entries, id, base)
}

// entryDeleted reports whether the catalog's entries of id are all DELETED
// (DeleteRecording): none holds data a reader could use.
func entryDeleted(entries []CatalogEntry, id int64) bool {
	seen := false
	for i := range entries {
		if entries[i].Descriptor.RecordingID == id {
			if entries[i].State != StateDeleted {
				return false
			}
			seen = true
		}
	}
	return seen
}

func segmentBelowStart(entries []CatalogEntry, id, base int64) bool {
	var found *RecordingDescriptor
	for i := range entries {
		e := &entries[i]
		if e.Descriptor.RecordingID == id && (found == nil || e.State == StateValid) {
			found = &e.Descriptor
		}
	}
	if found == nil || entryDeleted(entries, id) {
		return true
	}
	if checkDescriptorGeometry(found) != nil {
		return false
	}
	startBase := SegmentFileBasePosition(found.StartPosition, found.StartPosition, found.TermBufferLength, found.SegmentFileLength)
	return base+int64(found.SegmentFileLength) <= startBase
}
