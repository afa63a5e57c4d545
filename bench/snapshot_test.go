package bench

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/measure"
)

// TestSnapshotReport runs the snapshot report on a small book and checks
// what it must always find: identical parallel output, restores with the
// book's state hash, a plausible wire size, and every field the CLI's
// JSON promises.
func TestSnapshotReport(t *testing.T) {
	r, err := SnapshotReport(SnapOptions{Orders: 5_000, Workers: 2, Takes: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Identical || !r.StateHashEqual {
		t.Fatalf("identical %v, state hash equal %v", r.Identical, r.StateHashEqual)
	}
	// 47-byte entries, 1,392 to a 65,504-byte frame (SnapMTU): 47.1 bytes
	// an order plus the few fixed messages.
	if r.WireBytesPerOrder < 47 || r.WireBytesPerOrder > 52 {
		t.Fatalf("wire %.1f bytes/order", r.WireBytesPerOrder)
	}
	if r.LinearNsPerOrder <= 0 || r.ParallelNsPerOrder <= 0 || r.Speedup <= 0 || r.RestoreNsPerOrder <= 0 || r.HeapBytesPerOrder <= 0 {
		t.Fatalf("missing figures: %+v", r)
	}
	// The CPU figures, where the process CPU clock is read: a take's CPU is
	// positive and no more than its wall time on every processor, so the
	// bound is at least the speedup's order of magnitude (not a timing:
	// bounds only).
	if _, ok := measure.ProcessCPU(); ok {
		cpus := float64(runtime.NumCPU())
		if r.LinearCPUNsPerOrder <= 0 || r.ParallelCPUNsPerOrder <= 0 || r.CoresBusy <= 0 || r.CoresBusy > cpus+0.01 ||
			r.SpeedupBound <= 0 {
			t.Fatalf("CPU figures: linear %.2f, parallel %.2f ns/order, %.2f cores busy (of %v), bound %.2f",
				r.LinearCPUNsPerOrder, r.ParallelCPUNsPerOrder, r.CoresBusy, cpus, r.SpeedupBound)
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"orders", "workers", "mtu", "takes", "linear_ns_per_order", "parallel_ns_per_order", "speedup",
		"take_ms_p50", "take_ms_p99", "restore_ns_per_order", "wire_bytes_per_order", "heap_bytes_per_order",
		"allocs_per_take", "identical", "state_hash_equal", "load_avg", "gomaxprocs",
		"linear_cpu_ns_per_order", "parallel_cpu_ns_per_order", "cores_busy", "speedup_bound"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
}

// TestSnapshotBook: the book rests exactly the orders asked for, on every
// instrument and both sides, and the same seed builds the same book.
func TestSnapshotBook(t *testing.T) {
	a, err := SnapshotBook(3_000, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SnapshotBook(3_000, 9)
	if err != nil {
		t.Fatal(err)
	}
	c, err := SnapshotBook(3_000, 10)
	if err != nil {
		t.Fatal(err)
	}
	if a.Orders() != 3_000 || a.StateHash() != b.StateHash() || a.StateHash() == c.StateHash() {
		t.Fatalf("orders %d, hashes %x %x %x", a.Orders(), a.StateHash(), b.StateHash(), c.StateHash())
	}
}

// TestSnapMTUIsTheNodes: the benchmarks' snapshot MTU is the one the node
// uses for a stop-the-world snapshot with the benchmarks' term length.
func TestSnapMTUIsTheNodes(t *testing.T) {
	if got := cluster.DefaultSnapshotMTU(SnapTermLength); got != SnapMTU {
		t.Fatalf("the node's snapshot MTU at terms of %d is %d, the benchmarks' %d", SnapTermLength, got, SnapMTU)
	}
}
