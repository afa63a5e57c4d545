package engine

import (
	"math/rand/v2"
	"testing"
)

// TestOccMapAgainstMap runs random sets and clears on an occMap and a Go
// map side by side, over ticks clustered as a book's are and spread wide,
// checking the table's structure, membership and next in both directions
// (found, or the boundary of the words it read) after each operation.
func TestOccMapAgainstMap(t *testing.T) {
	for _, spread := range []int64{300, 1 << 32} {
		r := rand.New(rand.NewPCG(uint64(spread), 11))
		var m occMap
		ref := map[int64]bool{}
		// refNext is next by brute force over the ticks next may read.
		refNext := func(from int64, up bool) (int64, bool) {
			key := from >> 6
			last := key + occScanWords
			if !up {
				last = max(key-occScanWords, 0)
			}
			for t := from; ; {
				if ref[t] {
					return t, true
				}
				if up {
					t++
					if t>>6 > last {
						return t, false
					}
				} else {
					t--
					if t < 0 || t>>6 < last {
						return t, false
					}
				}
			}
		}
		for i := range 20_000 {
			tk := r.Int64N(spread)
			if r.IntN(3) == 0 {
				m.clear(tk)
				delete(ref, tk)
			} else {
				m.set(tk)
				ref[tk] = true
			}
			if err := m.check(); err != nil {
				t.Fatalf("spread %d, op %d: %v", spread, i, err)
			}
			if m.count() != len(ref) {
				t.Fatalf("spread %d, op %d: count %d, want %d", spread, i, m.count(), len(ref))
			}
			for k := range 8 {
				q := max(tk+int64(k-4)*37, 0)
				if m.has(q) != ref[q] {
					t.Fatalf("spread %d, op %d: has(%d) = %v, want %v", spread, i, q, m.has(q), ref[q])
				}
				for _, up := range []bool{true, false} {
					got, ok := m.next(q, up)
					want, wok := refNext(q, up)
					if got != want || ok != wok {
						t.Fatalf("spread %d, op %d: next(%d, up %v) = %d, %v, want %d, %v", spread, i, q, up, got, ok, want, wok)
					}
				}
			}
		}
	}
}

// TestOccMapSteadyStateZeroAlloc: once the table has held its largest
// number of words, sets and clears allocate nothing.
func TestOccMapSteadyStateZeroAlloc(t *testing.T) {
	// One tick a word, so every clear removes its word from the table and
	// every set inserts it again.
	var m occMap
	for k := range int64(512) {
		m.set(k << 6)
	}
	r := rand.New(rand.NewPCG(1, 2))
	allocs := testing.AllocsPerRun(100, func() {
		for range 1000 {
			tk := r.Int64N(512) << 6
			m.clear(tk)
			m.next(tk, tk&64 == 0)
			m.set(tk)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
