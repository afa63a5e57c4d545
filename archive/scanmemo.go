package archive

import "github.com/matchlog/matchlog/internal/vfs"

// A ScanMemo carries the scan of a recording's last segment from one step
// of a start to the next, so that the start reads the segment once.
//
// A node's start checks its recovery plan read-only before it writes
// anything (the plan check computes the stop position of a recording a
// crash left active: a scan of its last segment, O(bytes in it)), and then
// opens the archive, whose recovery settles the same recording by the same
// scan. Both scans see the same bytes: between them the start writes only
// mark files, and no other process may write the directory (the start has
// checked that none is live). The plan check records its scan in the memo
// and the archive's Open takes it from there instead of reading the
// segment again.
//
// A scan is taken at most once: taking it removes it, so a memo never answers
// for a file that may have changed since (segment files keep their length
// as they are written, so the length is no witness of their contents).
// The key is the file's path and length and every descriptor field the
// scan depends on. The zero value is empty and ready; a nil *ScanMemo
// remembers nothing. A memo is not safe for concurrent use (a start is
// one goroutine).
type ScanMemo struct {
	m map[scanKey]ScanResult
}

type scanKey struct {
	path   string
	size   int64
	params SegmentParams
}

// put records res under k.
func (m *ScanMemo) put(k scanKey, res ScanResult) {
	if m == nil {
		return
	}
	if m.m == nil {
		m.m = map[scanKey]ScanResult{}
	}
	m.m[k] = res
}

// take returns and forgets the scan recorded under k.
func (m *ScanMemo) take(k scanKey) (ScanResult, bool) {
	if m == nil {
		return ScanResult{}, false
	}
	res, ok := m.m[k]
	delete(m.m, k)
	return res, ok
}

// Len returns how many scans the memo holds.
func (m *ScanMemo) Len() int {
	if m == nil {
		return 0
	}
	return len(m.m)
}

// ComputeStopPosition is [ComputeStopPosition], recording its scan in m
// for the next reader of the same segment to take (see ScanMemo). Nothing
// is written.
func (m *ScanMemo) ComputeStopPosition(fsys vfs.FS, dir string, d RecordingDescriptor) (int64, ScanResult, error) {
	stop, res, _, err := computeStopPositionMemo(fsys, dir, d, m, true)
	return stop, res, err
}
