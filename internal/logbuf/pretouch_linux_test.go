package logbuf

import (
	"bytes"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// minorFaults is the process's count of minor page faults so far.
func minorFaults(t *testing.T) int64 {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return ru.Minflt
}

// writeFaults writes a zero to every page of l's terms and returns the
// page faults that took.
func writeFaults(t *testing.T, l *Log) int64 {
	t.Helper()
	f0 := minorFaults(t)
	for i := range PartitionCount {
		term := l.Term(i)
		for off := 0; off < len(term); off += PageSize {
			term[off] = 0
		}
	}
	return minorFaults(t) - f0
}

// TestPreTouch: after PreTouch a first pass of writes over the terms takes
// no page faults (a fresh log's takes one a page), and PreTouch changes no
// byte of a log in use. The logs are mapped files: their pages are
// certainly fresh, where the Go heap may hand out memory already mapped.
func TestPreTouch(t *testing.T) {
	const term = 4 << 20
	pages := int64(PartitionCount * term / PageSize)
	dir := t.TempDir()
	control, err := CreateFile(filepath.Join(dir, "control.logbuffer"), term, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	if f := writeFaults(t, control); f < pages/2 {
		t.Fatalf("a fresh log took %d page faults for its %d pages: the test cannot tell", f, pages)
	}

	l, err := CreateFile(filepath.Join(dir, "touched.logbuffer"), term, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pub, img := l.Publication(), l.Image()
	pub.SetPositionLimit(int64(l.TermWindowLength()))
	for i := range 100 {
		if pos, err := pub.Offer(bytes.Repeat([]byte{byte(i + 1)}, 1000)); err != nil || pos < 0 {
			t.Fatalf("offer %d: %d, %v", i, pos, err)
		}
	}
	before := bytes.Clone(l.Bytes())
	l.PreTouch()
	if !bytes.Equal(before, l.Bytes()) {
		t.Fatal("PreTouch changed the log's bytes")
	}
	if n := img.Drain(1 << 20); n != 100 {
		t.Fatalf("the image read %d frames after PreTouch, want 100", n)
	}
	if f := writeFaults(t, l); f > pages/16 {
		t.Fatalf("writes to the %d pages of a pre-touched log took %d page faults", pages, f)
	}
}

// TestPrefaultLeavesMappedFiles: Prefault does nothing to a mapped file's
// log (its memory is the file's, not the heap's) and its wait returns at
// once; the file's bytes are unchanged.
func TestPrefaultLeavesMappedFiles(t *testing.T) {
	l, err := CreateFile(filepath.Join(t.TempDir(), "mapped.logbuffer"), 1<<20, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := bytes.Clone(l.Bytes())
	l.Prefault()()
	if !bytes.Equal(before, l.Bytes()) {
		t.Fatal("Prefault changed a mapped log's bytes")
	}
	if f := writeFaults(t, l); f < int64(PartitionCount*(1<<20)/PageSize)/2 {
		t.Fatalf("a mapped log took %d page faults after Prefault: it was faulted in", f)
	}
}
