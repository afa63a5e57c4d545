package archive

import (
	"os"
	"path/filepath"
	"testing"
)

// activeFixture is the single-node fixture's archive with recording 2 left
// active (stop -1, as a crash leaves it), and its descriptor.
func activeFixture(t *testing.T) (string, RecordingDescriptor) {
	t.Helper()
	dir := copyFixture(t)
	c := openRW(t, dir)
	if err := c.ExtendRecording(2, 5, 6, 7); err != nil {
		t.Fatal(err)
	}
	d := mustDescriptor(t, c, 2)
	c.Close()
	return dir, d
}

func recoveredReport(t *testing.T, a *Archive, id int64) RecordingReport {
	t.Helper()
	for _, r := range a.Recovered() {
		if r.RecordingID == id {
			return r
		}
	}
	t.Fatalf("recording %d not among the recovered: %+v", id, a.Recovered())
	return RecordingReport{}
}

// TestScanMemoReusedOnce: the scan a read-only stop computation records is
// taken by Open's recovery of the same recording instead of being read
// again, once, with the same settled stop as a fresh scan; a file whose
// length changed since is scanned again.
func TestScanMemoReusedOnce(t *testing.T) {
	dir, d := activeFixture(t)
	memo := &ScanMemo{}
	stop, _, err := memo.ComputeStopPosition(osFS{}, dir, d)
	if err != nil || stop != 480 {
		t.Fatalf("ComputeStopPosition = %d, %v; want 480", stop, err)
	}
	if memo.Len() != 1 {
		t.Fatalf("memo holds %d scans, want 1", memo.Len())
	}
	a, err := Open(osFS{}, dir, Options{ScanMemo: memo, RepairCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	r := recoveredReport(t, a, 2)
	got := mustDescriptor(t, a.Catalog(), 2).StopPosition
	a.Close()
	if !r.ScanReused {
		t.Error("Open read the segment again instead of taking the memo's scan")
	}
	if got != 480 || r.ComputedStop != 480 {
		t.Errorf("settled stop %d (computed %d), want 480", got, r.ComputedStop)
	}
	if memo.Len() != 0 {
		t.Errorf("memo holds %d scans after Open took its scan, want 0", memo.Len())
	}

	// The length changed after the memo's scan: not taken.
	dir, d = activeFixture(t)
	memo = &ScanMemo{}
	if _, _, err := memo.ComputeStopPosition(osFS{}, dir, d); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, SegmentFileName(2, 0))
	if err := os.Truncate(seg, int64(d.SegmentFileLength)/2); err != nil {
		t.Fatal(err)
	}
	a, err = Open(osFS{}, dir, Options{ScanMemo: memo, RepairCatalog: true})
	if err != nil {
		t.Fatal(err)
	}
	r = recoveredReport(t, a, 2)
	a.Close()
	if r.ScanReused {
		t.Error("Open took a scan of the segment at another length")
	}
	if memo.Len() != 1 {
		t.Errorf("memo holds %d scans, want the unused 1", memo.Len())
	}
}

// TestScanMemoNil: a nil memo records nothing and answers nothing.
func TestScanMemoNil(t *testing.T) {
	dir, d := activeFixture(t)
	var memo *ScanMemo
	if stop, _, err := memo.ComputeStopPosition(osFS{}, dir, d); err != nil || stop != 480 {
		t.Fatalf("ComputeStopPosition = %d, %v; want 480", stop, err)
	}
	if memo.Len() != 0 {
		t.Fatal("a nil memo holds scans")
	}
}
