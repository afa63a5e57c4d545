package engine

import (
	"math/rand/v2"
	"testing"
)

// TestLevelMapAgainstMap runs random puts and deletes on a levelMap and a
// Go map side by side, over prices clustered as a book's are and spread
// wide (so probe runs wrap around the table's end), checking the table's
// structure and every lookup after each operation.
func TestLevelMapAgainstMap(t *testing.T) {
	for _, spread := range []int64{64, 1 << 40} {
		r := rand.New(rand.NewPCG(uint64(spread), 7))
		var m levelMap
		ref := map[int64]*level{}
		for i := range 20_000 {
			p := r.Int64N(spread) * 5
			if r.IntN(3) == 0 {
				m.del(p)
				delete(ref, p)
			} else {
				l := &level{price: p}
				m.put(p, l)
				ref[p] = l
			}
			if err := m.check(); err != nil {
				t.Fatalf("spread %d, op %d: %v", spread, i, err)
			}
			if m.len() != len(ref) {
				t.Fatalf("spread %d, op %d: len %d, want %d", spread, i, m.len(), len(ref))
			}
			for k := range 8 {
				q := p + int64(k-4)*5
				if m.get(q) != ref[q] {
					t.Fatalf("spread %d, op %d: get(%d) = %p, want %p", spread, i, q, m.get(q), ref[q])
				}
			}
		}
		n := 0
		for _, sl := range m.slots {
			if sl.l == nil {
				continue
			}
			n++
			if ref[sl.price] != sl.l {
				t.Fatalf("spread %d: slot holds %d -> %p, want %p", spread, sl.price, sl.l, ref[sl.price])
			}
		}
		if n != len(ref) {
			t.Fatalf("spread %d: %d entries in the slots, want %d", spread, n, len(ref))
		}
	}
}

// TestLevelMapSteadyStateZeroAlloc: once the table has held its largest
// number of entries, puts and deletes allocate nothing.
func TestLevelMapSteadyStateZeroAlloc(t *testing.T) {
	var m levelMap
	ls := make([]level, 1000)
	for i := range ls {
		m.put(int64(i), &ls[i])
	}
	i := 0
	if a := testing.AllocsPerRun(10_000, func() {
		p := int64(i % 1000)
		m.del(p)
		m.put(p+1000*int64(i%2), &ls[i%1000])
		m.del(p + 1000*int64(i%2))
		m.put(p, &ls[i%1000])
		i++
	}); a != 0 {
		t.Fatalf("%v allocations per put/delete in steady state", a)
	}
}

// TestLevelMapReserve: a reserved table takes its entries without growing.
func TestLevelMapReserve(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 1000, 1024, 1025} {
		var m levelMap
		m.reserve(n)
		size := len(m.slots)
		ls := make([]level, n)
		for i := range ls {
			m.put(int64(i)*3, &ls[i])
		}
		if len(m.slots) != size {
			t.Fatalf("n %d: the table grew from %d to %d slots", n, size, len(m.slots))
		}
		if err := m.check(); err != nil || m.len() != n {
			t.Fatalf("n %d: %v, len %d", n, err, m.len())
		}
	}
}
