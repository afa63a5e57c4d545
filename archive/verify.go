package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// SegmentFile is a segment file found in an archive directory.
type SegmentFile struct {
	Name string
	Base int64 // base position from the name
	Size int64
}

// segmentIndex lists the segment files of dir by recording id, each sorted
// by base, plus the ".rec" names that do not parse (Aeron skips those).
func segmentIndex(fsys vfs.FS, dir string) (map[int64][]SegmentFile, []string, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("archive: list %s: %w", dir, err)
	}
	byID := map[int64][]SegmentFile{}
	var bad []string
	for _, name := range names {
		if !strings.HasSuffix(name, SegmentSuffix) {
			continue
		}
		id, base, err := ParseSegmentFileName(name)
		if err != nil {
			bad = append(bad, name)
			continue
		}
		size, err := fsys.Stat(fsys.Join(dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("archive: stat %s: %w", name, err)
		}
		byID[id] = append(byID[id], SegmentFile{Name: name, Base: base, Size: size})
	}
	for _, files := range byID {
		slices.SortFunc(files, func(a, b SegmentFile) int { return cmpInt64(a.Base, b.Base) })
	}
	return byID, bad, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RecordingInfo describes one catalog entry and its segment files.
type RecordingInfo struct {
	CatalogEntry
	Segments []SegmentFile // sorted by base
}

// Description is what Describe reports about an archive directory.
type Description struct {
	// Mark is the mark file, nil if there is none; MarkErr is why it could
	// not be read, if it exists but is unreadable.
	Mark    *MarkFile
	MarkErr error
	// Catalog header and size.
	CatalogVersion   int32
	CatalogAlignment int
	CatalogCapacity  int64
	NextRecordingID  int64
	// Recordings holds every entry, of any state, in file order.
	Recordings []RecordingInfo
	// UnknownSegments are ".rec" files whose name does not parse or whose
	// recording id has no catalog entry.
	UnknownSegments []string
}

// OpenCatalogFile opens dir/archive.catalog read-only or read-write.
func OpenCatalogFile(fsys vfs.FS, dir string, opts CatalogOptions) (*Catalog, error) {
	name := fsys.Join(dir, CatalogFileName)
	var f vfs.File
	var err error
	if opts.ReadOnly {
		f, err = fsys.Open(name)
	} else {
		f, err = fsys.OpenRW(name)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: open catalog: %w", err)
	}
	c, err := OpenCatalog(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// CreateCatalogFile creates dir/archive.catalog and, when opts.SyncLevel >
// 0, syncs the directory, as Aeron forces the archive directory.
func CreateCatalogFile(fsys vfs.FS, dir string, opts CatalogOptions) (*Catalog, error) {
	f, err := fsys.Create(fsys.Join(dir, CatalogFileName))
	if err != nil {
		return nil, fmt.Errorf("archive: create catalog: %w", err)
	}
	c, err := CreateCatalog(f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.SyncLevel > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			c.Close()
			return nil, fmt.Errorf("archive: sync %s: %w", dir, err)
		}
	}
	return c, nil
}

// ReadMarkFileIn reads the mark file of an archive directory: dir's
// archive-mark.dat, or the one in the directory named by archive-mark.lnk.
func ReadMarkFileIn(fsys vfs.FS, dir string) (*MarkFile, error) {
	markDir := dir
	if lf, err := fsys.Open(fsys.Join(dir, MarkLinkFileName)); err == nil {
		size, err := lf.Size()
		if err == nil && size > 0 && size < 1<<16 {
			b := make([]byte, size)
			if n, _ := lf.ReadAt(b, 0); int64(n) == size {
				markDir = strings.TrimSpace(string(b))
			}
		}
		lf.Close()
	}
	f, err := fsys.Open(fsys.Join(markDir, MarkFileName))
	if err != nil {
		return nil, fmt.Errorf("archive: open mark file: %w", err)
	}
	defer f.Close()
	return ReadMarkFile(f)
}

// Describe reads an archive directory without changing it: the mark file,
// the catalog header and every entry (ArchiveTool describe-all), and the
// segment files of each recording with their sizes.
func Describe(fsys vfs.FS, dir string) (*Description, error) {
	d := &Description{}
	d.Mark, d.MarkErr = ReadMarkFileIn(fsys, dir)
	if d.MarkErr != nil && errors.Is(d.MarkErr, vfs.ErrNotExist) {
		d.Mark, d.MarkErr = nil, nil
	}
	c, err := OpenCatalogFile(fsys, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	d.CatalogVersion = c.Version()
	d.CatalogAlignment = c.Alignment()
	d.CatalogCapacity = c.Capacity()
	d.NextRecordingID = c.NextRecordingID()
	segs, bad, err := segmentIndex(fsys, dir)
	if err != nil {
		return nil, err
	}
	known := map[int64]bool{}
	for _, e := range c.Entries() {
		known[e.Descriptor.RecordingID] = true
		d.Recordings = append(d.Recordings, RecordingInfo{CatalogEntry: e, Segments: segs[e.Descriptor.RecordingID]})
	}
	d.UnknownSegments = unknownSegments(segs, bad, known)
	return d, nil
}

func unknownSegments(segs map[int64][]SegmentFile, bad []string, known map[int64]bool) []string {
	out := slices.Clone(bad)
	for id, files := range segs {
		if !known[id] {
			for _, f := range files {
				out = append(out, f.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkDescriptorGeometry reports a descriptor whose term or segment length
// would make segment arithmetic meaningless.
func checkDescriptorGeometry(d *RecordingDescriptor) error {
	return CheckSegmentLength(d.SegmentFileLength, d.TermBufferLength)
}

// ComputeStopPosition finds the recording's stop position from its files,
// like ArchiveTool's computeStopPosition: it scans the segment file with the
// highest base from its start offset and returns max(base + end of the last
// whole frame, startPosition), or startPosition when the recording has no
// segment file. The scan result tells whether the data ended cleanly or
// with a torn or invalid frame; a torn tail, even one only suspected
// (FrameProblem.Unverified, see ScanResult.UnverifiedEnd), is not counted.
// Nothing is written.
func ComputeStopPosition(fsys vfs.FS, dir string, d RecordingDescriptor) (int64, ScanResult, error) {
	stop, res, _, err := computeStopPosition(fsys, dir, d)
	return stop, res, err
}

// computeStopPosition is ComputeStopPosition, also returning the name of
// the segment file scanned ("" if none).
func computeStopPosition(fsys vfs.FS, dir string, d RecordingDescriptor) (int64, ScanResult, string, error) {
	return computeStopPositionMemo(fsys, dir, d, nil, false)
}

// computeStopPositionMemo is computeStopPosition; with record, its scan is
// recorded in memo, else a scan memo holds is taken from it.
func computeStopPositionMemo(fsys vfs.FS, dir string, d RecordingDescriptor, memo *ScanMemo, record bool) (int64, ScanResult, string, error) {
	segs, _, err := segmentIndex(fsys, dir)
	if err != nil {
		return 0, ScanResult{}, "", err
	}
	files := segs[d.RecordingID]
	if len(files) == 0 {
		return d.StartPosition, ScanResult{LastFrameOffset: -1}, "", nil
	}
	last := files[len(files)-1]
	res, _, err := scanFileMemo(fsys, dir, last, d, memo, record)
	if err != nil {
		return 0, res, last.Name, err
	}
	return max(last.Base+res.End, d.StartPosition), res, last.Name, nil
}

func scanFile(fsys vfs.FS, dir string, s SegmentFile, d RecordingDescriptor) (ScanResult, error) {
	res, _, err := scanFileMemo(fsys, dir, s, d, nil, false)
	return res, err
}

// scanFileMemo is scanFile; with record, a successful scan is recorded in
// memo, else one memo holds for the same file and parameters is taken
// instead of reading the file (reused true).
func scanFileMemo(fsys vfs.FS, dir string, s SegmentFile, d RecordingDescriptor, memo *ScanMemo, record bool) (res ScanResult, reused bool, err error) {
	if err := checkDescriptorGeometry(&d); err != nil {
		return ScanResult{LastFrameOffset: -1}, false, fmt.Errorf("archive: recording %d: %w", d.RecordingID, err)
	}
	p := segmentParams(d, s.Base)
	k := scanKey{path: fsys.Join(dir, s.Name), size: s.Size, params: p}
	if !record {
		if res, ok := memo.take(k); ok {
			return res, true, nil
		}
	}
	f, err := fsys.Open(fsys.Join(dir, s.Name))
	if err != nil {
		return ScanResult{LastFrameOffset: -1}, false, fmt.Errorf("archive: open %s: %w", s.Name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return ScanResult{LastFrameOffset: -1}, false, fmt.Errorf("archive: %s: %w", s.Name, err)
	}
	if p.Checksums, err = RecordingChecksums(fsys, dir, d); err != nil {
		return ScanResult{LastFrameOffset: -1}, false, err
	}
	res, err = ScanSegment(f, size, p, nil)
	if err != nil {
		return res, false, fmt.Errorf("archive: scan %s: %w", s.Name, err)
	}
	// A file whose length changed since it was listed is not remembered
	// under the listed length.
	if record && size == s.Size {
		memo.put(k, res)
	}
	return res, false, nil
}

// errFirstData stops RecordingChecksums' scan at the first DATA frame.
var errFirstData = errors.New("archive: first data frame")

// RecordingChecksums tells whether recording d's frames carry checksums
// (see ChecksumMode) from its first DATA frame, at or after its start
// position in the segment holding it. It is ChecksumsUnknown when that
// segment is missing or holds no DATA frame; a scan then decides from the
// first DATA frame it reads. Nothing is written.
func RecordingChecksums(fsys vfs.FS, dir string, d RecordingDescriptor) (ChecksumMode, error) {
	if err := checkDescriptorGeometry(&d); err != nil {
		return ChecksumsUnknown, fmt.Errorf("archive: recording %d: %w", d.RecordingID, err)
	}
	base := SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength)
	name := SegmentFileName(d.RecordingID, base)
	f, err := fsys.Open(fsys.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return ChecksumsUnknown, nil
	} else if err != nil {
		return ChecksumsUnknown, fmt.Errorf("archive: open %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return ChecksumsUnknown, fmt.Errorf("archive: %s: %w", name, err)
	}
	res, err := ScanSegment(f, size, segmentParams(d, base), func(fr Frame) error {
		if fr.Header.Type == FrameTypeData {
			return errFirstData
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFirstData) {
		return ChecksumsUnknown, fmt.Errorf("archive: scan %s: %w", name, err)
	}
	// A first frame whose checksum does not match has decided
	// ChecksumsPresent all the same.
	return res.Checksums, nil
}

func segmentParams(d RecordingDescriptor, base int64) SegmentParams {
	return SegmentParams{
		Base:          base,
		StartPosition: d.StartPosition,
		TermLength:    d.TermBufferLength,
		SegmentLength: d.SegmentFileLength,
		InitialTermID: d.InitialTermID,
		StreamID:      d.StreamID,
	}
}

// maxListedMissing bounds RecordingReport.MissingSegments.
const maxListedMissing = 1024

// VerifyOptions select what Verify checks and may change.
type VerifyOptions struct {
	// AllSegments scans every segment file of a recording, not only the
	// last one (ArchiveTool verify -a).
	AllSegments bool
	// Truncate repairs: a torn tail in the last segment is cut off (the
	// file is truncated at the torn frame and refilled to its full length
	// with a zero byte at segmentLength-1), and a stored stop position
	// that differs from the computed one (or is -1) is replaced by it,
	// with stopTimestamp = now, as ArchiveTool verify does.
	Truncate bool
	// TruncateUnverified lets Truncate also cut a last frame that is only
	// suspected torn (FrameProblem.Unverified: it straddles a page and a
	// page part is all zero), as ArchiveTool does when the operator
	// answers yes. Without it such a frame is reported and kept.
	TruncateUnverified bool
	// KeepCut, if not nil, is called by Truncate with the bytes it is about
	// to cut from a segment (from the torn frame's offset to the segment's
	// last non-zero byte) before it cuts them, so that the caller can keep
	// them; an error stops the repair before anything is cut.
	KeepCut func(segment string, offset int64, cut []byte) error
	// MarkInvalid sets the state of a recording with a real mismatch (the
	// cases ArchiveTool verify marks INVALID) to INVALID.
	MarkInvalid bool
	// RecordingID, if not nil, limits Verify to that recording.
	RecordingID *int64
	// Now returns the time in epoch ms for stopTimestamp; time.Now if nil.
	Now func() int64
	// ScanMemo, if not nil, may hold the scan of a recording's last
	// segment taken earlier in the same start, used (once) instead of
	// reading the segment again; see ScanMemo for when that is sound.
	ScanMemo *ScanMemo
}

// Status summarises a RecordingReport.
type Status int

const (
	// StatusOK: nothing wrong (or everything was repaired).
	StatusOK Status = iota
	// StatusSkipped: the entry is neither VALID nor INVALID.
	StatusSkipped
	// StatusTornTail: the last segment ends with a torn frame that was
	// not truncated.
	StatusTornTail
	// StatusWarning: the data is whole, but files or stop position do not
	// match the catalog (orphans, missing files, a different or unknown
	// stop position) and were not repaired.
	StatusWarning
	// StatusInvalid: a mismatch ArchiveTool would mark INVALID.
	StatusInvalid
)

func (s Status) String() string {
	return [...]string{"OK", "skipped", "torn tail", "warning", "INVALID"}[s]
}

// RecordingReport is what Verify found for one entry.
type RecordingReport struct {
	RecordingID int64
	Offset      int64 // catalog offset of the entry
	State       RecordingState
	Status      Status
	// Problems lists every finding in words.
	Problems []string
	// Scan is the scan of the last segment (LastFrameOffset -1 if none).
	Scan ScanResult
	// ScanReused: Scan was not read again but taken from
	// VerifyOptions.ScanMemo (the same start's earlier scan of the file).
	ScanReused   bool
	LastSegment  string
	StoredStop   int64
	ComputedStop int64
	// Repairs made (only with Truncate or MarkInvalid).
	Truncated     bool
	TruncatedAt   int64 // file offset in LastSegment
	StopUpdated   bool
	MarkedInvalid bool
	// Settled: the entry is VALID with stop position -1 (active, or left
	// active by a crash), its last segment ends cleanly, and ComputedStop
	// is the stop Aeron's archive settles it to when it opens the catalog
	// (SettleStopPosition). Not a problem, and nothing is written (with
	// Truncate the stop is written instead: StopUpdated).
	Settled bool
	// Segment files outside the catalog range [base(start), base(stop)],
	// and bases inside it with no file.
	OrphanSegments  []string
	MissingSegments []string
	// WrongSizeSegments are files whose length is not the segment length
	// (Aeron preallocates every segment to full length).
	WrongSizeSegments []string
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Recordings []RecordingReport
	// UnknownSegments are ".rec" files that do not parse or belong to no
	// catalog entry.
	UnknownSegments []string
}

// OK reports whether every recording has status OK or skipped.
func (r *VerifyReport) OK() bool {
	for _, rec := range r.Recordings {
		if rec.Status != StatusOK && rec.Status != StatusSkipped {
			return false
		}
	}
	return true
}

// Verify checks every VALID or INVALID entry of the catalog against its
// segment files, following ArchiveTool verify:
//
//  1. position invariants: start >= 0 and 32-aligned; stop (unless -1) >=
//     start and 32-aligned;
//  2. start and stop must not lie past the highest segment file;
//  3. the stop position is recomputed from the last segment (see
//     ComputeStopPosition), which also finds a torn tail; a VALID entry
//     with stop -1 whose last segment ends cleanly is settled to it, as
//     Aeron's archive settles it on opening (RecordingReport.Settled), and
//     is OK;
//  4. the last segment (every segment with AllSegments) is scanned: each
//     frame's term offset, term id and stream id must match its position.
//
// It also reports segment files outside the catalog range (orphans) and
// missing files inside it. Without options Verify writes nothing. A torn
// tail is never a reason for INVALID, and only MarkInvalid ever sets a state
// to INVALID, for the failures of steps 1, 2 and 4; Verify never sets a
// state to VALID. The error result is for I/O failures and an unreadable
// catalog; findings are in the report.
func Verify(fsys vfs.FS, dir string, opts VerifyOptions) (*VerifyReport, error) {
	writes := opts.Truncate || opts.MarkInvalid
	c, err := OpenCatalogFile(fsys, dir, CatalogOptions{ReadOnly: !writes})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	segs, bad, err := segmentIndex(fsys, dir)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = func() int64 { return time.Now().UnixMilli() }
	}
	rep := &VerifyReport{}
	known := map[int64]bool{}
	for i, e := range c.Entries() {
		known[e.Descriptor.RecordingID] = true
		if opts.RecordingID != nil && *opts.RecordingID != e.Descriptor.RecordingID {
			continue
		}
		rr, err := verifyEntry(fsys, dir, c, i, e, segs[e.Descriptor.RecordingID], opts, now)
		if err != nil {
			return rep, err
		}
		rep.Recordings = append(rep.Recordings, rr)
	}
	rep.UnknownSegments = unknownSegments(segs, bad, known)
	if writes {
		if err := c.Sync(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func verifyEntry(fsys vfs.FS, dir string, c *Catalog, index int, e CatalogEntry, files []SegmentFile, opts VerifyOptions, now func() int64) (RecordingReport, error) {
	d := e.Descriptor
	rr := RecordingReport{
		RecordingID:  d.RecordingID,
		Offset:       e.Offset,
		State:        e.State,
		StoredStop:   d.StopPosition,
		ComputedStop: d.StopPosition,
		Scan:         ScanResult{LastFrameOffset: -1},
	}
	if e.State != StateValid && e.State != StateInvalid {
		rr.Status = StatusSkipped
		rr.Problems = append(rr.Problems, "skipped: state "+e.State.String())
		return rr, nil
	}
	invalid := func(format string, args ...any) (RecordingReport, error) {
		rr.Status = StatusInvalid
		rr.Problems = append(rr.Problems, fmt.Sprintf(format, args...))
		if opts.MarkInvalid && e.State != StateInvalid {
			if err := c.changeStateAt(index, StateInvalid); err != nil {
				return rr, err
			}
			rr.MarkedInvalid = true
		}
		return rr, nil
	}
	start, stop := d.StartPosition, d.StopPosition
	switch {
	case start < 0:
		return invalid("negative startPosition=%d", start)
	case start&(FrameAlignment-1) != 0:
		return invalid("non-aligned startPosition=%d", start)
	case stop != NullPosition && stop < start:
		return invalid("stopPosition=%d is before startPosition=%d", stop, start)
	case stop != NullPosition && stop&(FrameAlignment-1) != 0:
		return invalid("non-aligned stopPosition=%d", stop)
	}
	if err := checkDescriptorGeometry(&d); err != nil {
		return invalid("%v", err)
	}
	segLen, termLen := d.SegmentFileLength, d.TermBufferLength

	// Orphans and missing files.
	startBase := SegmentFileBasePosition(start, start, termLen, segLen)
	for _, f := range files {
		if f.Base < startBase || (stop != NullPosition && f.Base > SegmentFileBasePosition(start, stop, termLen, segLen)) {
			rr.OrphanSegments = append(rr.OrphanSegments, f.Name)
		}
	}
	if stop > start {
		stopBase := SegmentFileBasePosition(start, stop, termLen, segLen)
		have := map[int64]bool{}
		for _, f := range files {
			if f.Base >= startBase && f.Base <= stopBase && (f.Base-startBase)%int64(segLen) == 0 {
				have[f.Base] = true
			}
		}
		// List at most maxListedMissing names; the loop runs at most that
		// many times more than there are files, however long the range.
		n := (stopBase-startBase)/int64(segLen) + 1
		for k := int64(0); k < n && len(rr.MissingSegments) < maxListedMissing; k++ {
			if b := startBase + k*int64(segLen); !have[b] {
				rr.MissingSegments = append(rr.MissingSegments, SegmentFileName(d.RecordingID, b))
			}
		}
		if missing := n - int64(len(have)); missing > int64(len(rr.MissingSegments)) {
			rr.Problems = append(rr.Problems, fmt.Sprintf("%d segment files missing in [%d, %d], %d listed",
				missing, startBase, stopBase, len(rr.MissingSegments)))
		}
	}
	for _, f := range files {
		if f.Size != int64(segLen) {
			rr.WrongSizeSegments = append(rr.WrongSizeSegments, f.Name)
			rr.Problems = append(rr.Problems, fmt.Sprintf("segment %s is %d bytes, not the segment length %d", f.Name, f.Size, segLen))
		}
	}

	if len(files) > 0 {
		last := files[len(files)-1]
		rr.LastSegment = last.Name
		if maxPos := last.Base + int64(segLen) - 1; start > maxPos || stop > maxPos {
			return invalid("startPosition=%d and/or stopPosition=%d exceed max segment file position=%d", start, stop, maxPos)
		}
		if last.Base&int64(termLen-1) != 0 {
			return invalid("segment %s: base %d is not a multiple of the term length %d", last.Name, last.Base, termLen)
		}
		res, reused, err := scanFileMemo(fsys, dir, last, d, opts.ScanMemo, false)
		if err != nil {
			return rr, err
		}
		rr.Scan, rr.ScanReused = res, reused
		rr.ComputedStop = max(last.Base+res.End, start)
		if p := res.Problem; p != nil {
			if p.Kind == InvalidFrame {
				return invalid("segment %s: %v", last.Name, p)
			}
			rr.Problems = append(rr.Problems, fmt.Sprintf("segment %s: %v", last.Name, p))
			if opts.Truncate && (!p.Unverified || opts.TruncateUnverified) {
				if err := truncateSegment(fsys, dir, last.Name, p.Offset, int64(segLen), opts.KeepCut); err != nil {
					return rr, err
				}
				rr.Truncated, rr.TruncatedAt = true, p.Offset
				// The file has its full length again.
				rr.WrongSizeSegments = slices.DeleteFunc(rr.WrongSizeSegments, func(n string) bool { return n == last.Name })
			} else if p.Unverified {
				// Kept: the stop includes it, as ArchiveTool's when the
				// operator declines the truncation.
				rr.ComputedStop = max(last.Base+res.UnverifiedEnd, start)
			}
		}
		if opts.AllSegments {
			for _, f := range files[:len(files)-1] {
				if f.Base&int64(termLen-1) != 0 {
					return invalid("segment %s: base %d is not a multiple of the term length %d", f.Name, f.Base, termLen)
				}
				r, err := scanFile(fsys, dir, f, d)
				if err != nil {
					return rr, err
				}
				if r.Problem != nil {
					return invalid("segment %s: %v", f.Name, r.Problem)
				}
			}
		}
	} else {
		rr.ComputedStop = start
	}

	if rr.ComputedStop != stop {
		if stop == NullPosition && e.State == StateValid && rr.Scan.Problem == nil && !opts.Truncate {
			// Active (or left active by a crash): Aeron's archive settles
			// it to the computed stop when it opens the catalog
			// (SettleStopPosition), and ArchiveTool verify says OK.
			rr.Settled = true
		} else if stop == NullPosition {
			rr.Problems = append(rr.Problems, fmt.Sprintf("stopPosition unknown (-1), computed %d", rr.ComputedStop))
		} else {
			rr.Problems = append(rr.Problems, fmt.Sprintf("stored stopPosition=%d, computed %d", stop, rr.ComputedStop))
		}
		if opts.Truncate {
			ts := now()
			if err := c.updateAt(index, func(b []byte) {
				putI64(b, offStopTimestamp, ts)
				putI64(b, offStopPosition, rr.ComputedStop)
			}); err != nil {
				return rr, err
			}
			rr.StopUpdated = true
		}
	}

	switch {
	case rr.Scan.Problem != nil && !rr.Truncated:
		rr.Status = StatusTornTail
	case len(rr.OrphanSegments) > 0 || len(rr.MissingSegments) > 0 ||
		(rr.ComputedStop != stop && !rr.StopUpdated && !rr.Settled) || len(rr.WrongSizeSegments) > 0:
		rr.Status = StatusWarning
	default:
		rr.Status = StatusOK
	}
	return rr, nil
}

// truncateSegment cuts a segment at off and restores its full length with a
// zero byte at segLen-1, as ArchiveTool and truncateRecording do, then syncs.
// keep, if not nil, first gets the bytes to be cut (trailing zeros left
// out).
func truncateSegment(fsys vfs.FS, dir, name string, off, segLen int64, keep func(string, int64, []byte) error) error {
	f, err := fsys.OpenRW(fsys.Join(dir, name))
	if err != nil {
		return fmt.Errorf("archive: open %s for truncation: %w", name, err)
	}
	defer f.Close()
	if keep != nil {
		cut, err := nonZeroFrom(f, off)
		if err != nil {
			return fmt.Errorf("archive: read %s from %d before truncation: %w", name, off, err)
		}
		if err := keep(name, off, cut); err != nil {
			return fmt.Errorf("archive: keep the bytes cut from %s at %d: %w", name, off, err)
		}
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("archive: truncate %s at %d: %w", name, off, err)
	}
	if _, err := f.WriteAt([]byte{0}, segLen-1); err != nil {
		return fmt.Errorf("archive: refill %s to %d bytes: %w", name, segLen, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("archive: sync %s: %w", name, err)
	}
	return nil
}

// nonZeroFrom returns f's bytes from off up to its last non-zero byte: one
// pass finds that byte without keeping what it reads, a second reads the
// range.
func nonZeroFrom(f vfs.File, off int64) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1<<20)
	end := off
	for pos := off; pos < size; {
		n := int(min(int64(len(buf)), size-pos))
		if _, err := f.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				end = pos + int64(i) + 1
				break
			}
		}
		pos += int64(n)
	}
	out := make([]byte, end-off)
	if len(out) > 0 {
		if _, err := f.ReadAt(out, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return out, nil
}
