package engine

import (
	"math/rand"
	"testing"
)

// TestOrderIndexModel runs random puts, gets and deletes against a Go map,
// with ids drawn from a small range so probe runs collide, wrap and shift.
func TestOrderIndexModel(t *testing.T) {
	for _, span := range []uint64{50, 5000, 200000} {
		var x orderIndex
		m := map[uint64]loc{}
		r := rand.New(rand.NewSource(int64(span)))
		for i := 0; i < 300000; i++ {
			id := uint64(r.Int63n(int64(span))) + 1
			switch r.Intn(3) {
			case 0, 1:
				l := loc{sk: uint64(i), px: uint32(id), inst: uint32(i)}
				x.put(id, l)
				m[id] = l
			case 2:
				x.del(id)
				delete(m, id)
			}
			if x.Len() != len(m) {
				t.Fatalf("span %d op %d: len %d, model %d", span, i, x.Len(), len(m))
			}
			probe := uint64(r.Int63n(int64(span))) + 1
			got, ok := x.get(probe)
			want, wok := m[probe]
			if ok != wok || got != want {
				t.Fatalf("span %d op %d: get(%d) = %v %v, model %v %v", span, i, probe, got, ok, want, wok)
			}
		}
		for id, want := range m {
			if got, ok := x.get(id); !ok || got != want {
				t.Fatalf("span %d: final get(%d) = %v %v, want %v", span, id, got, ok, want)
			}
		}
	}
}

func TestOrderIndexAllocs(t *testing.T) {
	var x orderIndex
	for id := uint64(1); id <= 10000; id++ {
		x.put(id, loc{px: 1})
	}
	n := testing.AllocsPerRun(1000, func() {
		x.del(77)
		x.put(77, loc{px: 2})
		x.get(78)
	})
	if n != 0 {
		t.Fatalf("index operations allocate %v times", n)
	}
}
