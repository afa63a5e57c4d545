package cluster_test

import (
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestScanLogFrom: a scan from an entry's position sees exactly the entries
// after it; a position past the log's end is an error.
func TestScanLogFrom(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	f.open()
	s, _ := f.node.Connect("aeron:ipc", 102)
	for i := uint64(1); i <= 30; i++ {
		f.node.Offer(s, msg(i, 0))
		f.work(1)
	}
	f.close()
	var all []int64
	if err := cluster.ScanLog(mem, "n", func(e *cluster.LogEntry) error { all = append(all, e.Position); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(all) < 30 {
		t.Fatalf("%d entries", len(all))
	}
	mid := len(all) / 2
	var rest []int64
	if err := cluster.ScanLogFrom(mem, "n", all[mid], func(e *cluster.LogEntry) error { rest = append(rest, e.Position); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(all)-mid-1 || rest[0] != all[mid+1] || rest[len(rest)-1] != all[len(all)-1] {
		t.Fatalf("from %d: %d entries %v..., want the %d after it", all[mid], len(rest), rest[:1], len(all)-mid-1)
	}
	if err := cluster.ScanLogFrom(mem, "n", all[len(all)-1]+32, func(*cluster.LogEntry) error { return nil }); err == nil {
		t.Fatal("a scan from past the log's end succeeded")
	}
}

// TestScanLogFromBeforePadding: a scan from the end of a term's last entry,
// where a padding frame fills the term, sees the entries of the next terms
// (it once ended there, silently, when the padding frame was the first
// frame it read).
func TestScanLogFromBeforePadding(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	f.open()
	s, _ := f.node.Connect("aeron:ipc", 102)
	for i := uint64(1); i <= 1500; i++ {
		b := append(msg(i, 0), make([]byte, i%300)...)
		f.node.Offer(s, b)
		f.work(1)
	}
	f.close()
	var all []int64
	if err := cluster.ScanLog(mem, "n", func(e *cluster.LogEntry) error { all = append(all, e.Position); return nil }); err != nil {
		t.Fatal(err)
	}
	termLen := int64(f.opts.TermLength)
	padded := 0
	for i := 0; i+1 < len(all); i++ {
		if all[i]%termLen == 0 || all[i+1]/termLen == all[i]/termLen {
			continue // no padding frame after this entry
		}
		padded++
		var rest []int64
		if err := cluster.ScanLogFrom(mem, "n", all[i], func(e *cluster.LogEntry) error { rest = append(rest, e.Position); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(rest) != len(all)-i-1 || rest[0] != all[i+1] {
			t.Fatalf("from %d (a padding frame to the term end): %d entries, want the %d after it from %d", all[i], len(rest), len(all)-i-1, all[i+1])
		}
	}
	if padded == 0 {
		t.Fatalf("no term of the %d-byte log ends in a padding frame", all[len(all)-1])
	}
	t.Logf("%d padding frames, %d entries", padded, len(all))
}
