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
		m := map[uint64]ent{}
		r := rand.New(rand.NewSource(int64(span)))
		for i := 0; i < 300000; i++ {
			id := uint64(r.Int63n(int64(span))) + 1
			switch r.Intn(3) {
			case 0, 1:
				l := ent(uint64(i)<<32 | id)
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
		x.put(id, ent(1))
	}
	n := testing.AllocsPerRun(1000, func() {
		x.del(77)
		x.put(77, ent(2))
		x.get(78)
	})
	if n != 0 {
		t.Fatalf("index operations allocate %v times", n)
	}
}

// TestIndexBatchBuild builds indexes from batches whose header count is
// exact, above what was preallocated (the batches grow towards it), too
// low (they grow past it) and far too high, and requires every entry to be
// found with its entry, the table of each segment to be within the load the
// index keeps, deletes and puts to go on working, and a duplicate id to be
// reported.
func TestIndexBatchBuild(t *testing.T) {
	for _, c := range []struct{ n, header, pre uint64 }{
		{50_000, 50_000, 1 << 20},
		{50_000, 50_000, 5_000},
		{50_000, 20_000, 5_000},
		{3_000, 1 << 50, 5_000},
		{0, 0, 1 << 20},
	} {
		var b indexBatch
		b.reserve(c.header, c.pre)
		r := rand.New(rand.NewSource(int64(c.n)))
		want := map[uint64]ent{}
		for len(want) < int(c.n) {
			id := r.Uint64()>>1 + 1
			if _, ok := want[id]; ok {
				continue
			}
			l := ent(id*3 ^ uint64(len(want))<<40)
			want[id] = l
			b.add(id, l)
		}
		var x orderIndex
		if dup, ok := b.build(&x); !ok {
			t.Fatalf("%+v: duplicate %d reported, there is none", c, dup)
		}
		if x.Len() != len(want) {
			t.Fatalf("%+v: %d entries, want %d", c, x.Len(), len(want))
		}
		for i := range x.seg {
			s := &x.seg[i]
			if s.n*8 > len(s.slots)*7 || len(s.slots) < indexMinSlots {
				t.Fatalf("%+v: segment %d holds %d entries in %d slots", c, i, s.n, len(s.slots))
			}
		}
		for id, l := range want {
			if got, ok := x.get(id); !ok || got != l {
				t.Fatalf("%+v: get(%d) = %v %v, want %v", c, id, got, ok, l)
			}
		}
		for id := range want {
			x.del(id)
			if _, ok := x.get(id); ok {
				t.Fatalf("%+v: %d still there after del", c, id)
			}
			x.put(id, ent(7))
			break
		}
		if x.Len() != len(want) {
			t.Fatalf("%+v: %d entries after a del and a put, want %d", c, x.Len(), len(want))
		}
	}
	var b indexBatch
	b.reserve(100, 100)
	for id := uint64(1); id <= 100; id++ {
		b.add(id, ent(0))
	}
	b.add(42, ent(1))
	var x orderIndex
	if dup, ok := b.build(&x); ok || dup != 42 {
		t.Fatalf("build of a batch holding 42 twice: %d %v, want 42 false", dup, ok)
	}
	// A duplicate whose first entry is in an array its segment's batch
	// filled and left (preallocated for 1,000 entries, 20,000 arrive).
	b = indexBatch{}
	b.reserve(50_000, 1_000)
	for id := uint64(1); id <= 20_000; id++ {
		b.add(id, ent(0))
	}
	if s := indexHash(7) >> 56; len(b.full[s]) == 0 {
		t.Fatalf("segment %d of id 7 kept no full array", s)
	}
	b.add(7, ent(1))
	if dup, ok := b.build(&orderIndex{}); ok || dup != 7 {
		t.Fatalf("build of a batch holding 7 twice, in two arrays: %d %v, want 7 false", dup, ok)
	}
}
