package engine

import "math/bits"

// orderIndex maps live order ids to their [loc]. It is an open-addressing
// hash table written for this one job, because the index is about a third
// of the heap per resting order and Go's map spends 2–3× the slot size on a
// table this large.
//
// Layout: 256 segments chosen by the hash's top byte; each segment is a
// linear-probing array of 24-byte slots (id 0, never a valid order id,
// marks an empty slot) whose length need not be a power of two. A large
// segment grows by half when it is 7/8 full, so a big table stays between
// about 58% and 88% full, and a growth rehashes only that segment (1/256 of
// the entries): no stop-the-world rehash of millions of orders on the
// matching path. Deletion shifts the following run back, so there are no tombstones
// and probe runs stay short.
type orderIndex struct {
	seg [indexSegments]indexSeg
	n   int
}

const (
	indexSegments = 256
	// A segment starts at indexMinSlots slots and doubles while it is
	// small: a small book's per-segment counts wander (a few entries each,
	// with a long tail), and headroom there costs little while it keeps a
	// steady-state engine from growing a segment every few thousand orders.
	// Past indexSmallSlots it grows by half, to keep big tables dense.
	indexMinSlots   = 32
	indexSmallSlots = 1024
)

type indexSlot struct {
	id uint64
	l  loc
}

type indexSeg struct {
	slots []indexSlot
	n     int
}

func indexHash(id uint64) uint64 {
	h := id * 0x9E3779B97F4A7C15
	return h ^ h>>29
}

// home returns the slot where a probe for hash h starts.
func (s *indexSeg) home(h uint64) int {
	hi, _ := bits.Mul64(h<<8, uint64(len(s.slots)))
	return int(hi)
}

func (x *orderIndex) segOf(h uint64) *indexSeg { return &x.seg[h>>56] }

// Len returns the number of entries.
func (x *orderIndex) Len() int { return x.n }

func (x *orderIndex) get(id uint64) (loc, bool) {
	h := indexHash(id)
	s := x.segOf(h)
	if len(s.slots) == 0 {
		return loc{}, false
	}
	for i := s.home(h); ; {
		sl := &s.slots[i]
		if sl.id == id {
			return sl.l, true
		}
		if sl.id == 0 {
			return loc{}, false
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}

// put sets the entry of id (never 0).
func (x *orderIndex) put(id uint64, l loc) { x.set(id, l, true) }

// add sets the entry of id (never 0) unless there is one, and reports
// whether it did: a duplicate check and an insert in one probe.
func (x *orderIndex) add(id uint64, l loc) bool { return x.set(id, l, false) }

func (x *orderIndex) set(id uint64, l loc, replace bool) bool {
	h := indexHash(id)
	s := x.segOf(h)
	if (s.n+1)*8 > len(s.slots)*7 {
		s.grow()
	}
	for i := s.home(h); ; {
		sl := &s.slots[i]
		if sl.id == id {
			if replace {
				sl.l = l
			}
			return replace
		}
		if sl.id == 0 {
			sl.id, sl.l = id, l
			s.n++
			x.n++
			return true
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}

func (s *indexSeg) grow() {
	n := len(s.slots)
	switch {
	case n == 0:
		n = indexMinSlots
	case n < indexSmallSlots:
		n *= 2
	default:
		n += n / 2
	}
	s.resize(n)
}

func (s *indexSeg) resize(size int) {
	old := s.slots
	s.slots = make([]indexSlot, size)
	for _, sl := range old {
		if sl.id == 0 {
			continue
		}
		i := s.home(indexHash(sl.id))
		for s.slots[i].id != 0 {
			if i++; i == len(s.slots) {
				i = 0
			}
		}
		s.slots[i] = sl
	}
}

// del removes the entry of id, if any.
func (x *orderIndex) del(id uint64) {
	h := indexHash(id)
	s := x.segOf(h)
	if len(s.slots) == 0 {
		return
	}
	i := s.home(h)
	for {
		if s.slots[i].id == id {
			break
		}
		if s.slots[i].id == 0 {
			return
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
	// Backward-shift deletion: move back every later entry of the run whose
	// home is not between the hole and itself (cyclically).
	// Segment lengths are not powers of two; the cyclic distances are
	// formed without a division.
	n := len(s.slots)
	dist := func(a, b int) int {
		if d := b - a; d >= 0 {
			return d
		}
		return b - a + n
	}
	hole := i
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		if s.slots[j].id == 0 {
			break
		}
		if home := s.home(indexHash(s.slots[j].id)); dist(home, j) >= dist(hole, j) {
			s.slots[hole] = s.slots[j]
			hole = j
		}
	}
	s.slots[hole] = indexSlot{}
	s.n--
	x.n--
}

// indexBatch gathers entries for an empty index, grouped by segment, so
// that a restore of millions of orders fills the index one segment at a
// time (a cache-sized table) instead of missing the cache on every order.
type indexBatch struct {
	seg [indexSegments][]indexSlot
}

func (b *indexBatch) reserve(n int) {
	per := n/indexSegments + n/indexSegments/8 + 16
	for i := range b.seg {
		b.seg[i] = make([]indexSlot, 0, per)
	}
}

func (b *indexBatch) add(id uint64, l loc) {
	h := indexHash(id)
	b.seg[h>>56] = append(b.seg[h>>56], indexSlot{id: id, l: l})
}

// build fills x, which must be empty, with the batch. It returns the first
// duplicate id, if any (x then holds an unspecified part of the batch).
func (b *indexBatch) build(x *orderIndex) (dup uint64, ok bool) {
	for i := range b.seg {
		entries := b.seg[i]
		s := &x.seg[i]
		s.resize(max(indexMinSlots, len(entries)*8/7+1))
		for _, e := range entries {
			if !x.add(e.id, e.l) {
				return e.id, false
			}
		}
		b.seg[i] = nil
	}
	return 0, true
}
