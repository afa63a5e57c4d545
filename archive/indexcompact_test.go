package archive

import (
	"slices"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestIndexCompaction: a sidecar index appended to at every clock tick
// stays within 2 × its segments + indexCompactSlack records (it is
// rewritten with one record per segment) and reads back as the same
// segments as every record merged; opened again with a higher lowest
// base, it drops the segments below it; a leftover compaction file is
// removed; a torn tail after a rewrite is cut as before.
func TestIndexCompaction(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("arch"); err != nil {
		t.Fatal(err)
	}
	x, _, err := openIndex(fs, "arch", 7, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var want []SegmentTime
	const seg = 1 << 16
	ts := int64(1_700_000_000_000)
	for i := range 20000 {
		base := int64(i/5000) * seg // four segments
		pos := base + int64(i%5000)*8 + 8
		ts++
		if err := x.note(base, pos, ts, false); err != nil {
			t.Fatal(err)
		}
		want = mergeSegmentTime(want, SegmentTime{Base: base, Position: pos, LastTimestamp: ts})
		if x.records > 2*4+indexCompactSlack {
			t.Fatalf("note %d: %d records", i, x.records)
		}
	}
	if err := x.flush(); err != nil {
		t.Fatal(err)
	}
	x.close()
	size, _ := fs.Stat("arch/7.idx")
	if size > indexHeaderLength+indexRecordLength*(2*4+indexCompactSlack+1) {
		t.Fatalf("index of 20,000 notes over 4 segments is %d bytes", size)
	}
	got, err := ReadIndex(fs, "arch", 7)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back %v %v, want %v", got, err, want)
	}

	// A leftover of an interrupted compaction goes; a higher lowest base
	// drops the segments below it.
	f, err := fs.Create("arch/7.idx" + IndexCompactSuffix)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	x, _, err = openIndex(fs, "arch", 7, 2*seg, true)
	if err != nil {
		t.Fatal(err)
	}
	x.close()
	if _, err := fs.Stat("arch/7.idx" + IndexCompactSuffix); err == nil {
		t.Fatal("the leftover compaction file is still there")
	}
	got, _ = ReadIndex(fs, "arch", 7)
	if !slices.Equal(got, want[2:]) {
		t.Fatalf("after reopening from base %d: %v, want %v", 2*seg, got, want[2:])
	}
	if size, _ := fs.Stat("arch/7.idx"); size != indexHeaderLength+2*indexRecordLength {
		t.Fatalf("compacted to %d bytes", size)
	}
	// A torn append after the rewrite is cut on the next open.
	f, _ = fs.OpenRW("arch/7.idx")
	if _, err := f.WriteAt([]byte{1, 2, 3}, indexHeaderLength+2*indexRecordLength); err != nil {
		t.Fatal(err)
	}
	f.Close()
	x, _, err = openIndex(fs, "arch", 7, 2*seg, true)
	if err != nil {
		t.Fatal(err)
	}
	x.close()
	if got, _ := ReadIndex(fs, "arch", 7); !slices.Equal(got, want[2:]) {
		t.Fatalf("after a torn append: %v", got)
	}
}
