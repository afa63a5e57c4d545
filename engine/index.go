package engine

import (
	"math/bits"

	"github.com/matchlog/matchlog/internal/hugepage"
)

// orderIndex maps live order ids to their entries ([ent]). It is an open-addressing
// hash table written for this one job, because the index is about a third
// of the heap per resting order and Go's map spends 2–3× the slot size on a
// table this large.
//
// Layout: 256 segments chosen by the hash's top byte; each segment is a
// linear-probing array of 16-byte slots (id 0, never a valid order id,
// marks an empty slot) whose length need not be a power of two. A large
// segment grows by a quarter when it is 7/8 full, so a big table stays
// between about 70% and 88% full, and a growth rehashes only that segment
// (1/256 of the entries): no stop-the-world rehash of millions of orders on
// the matching path. Deletion shifts the following run back, so there are no tombstones
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
	// Past indexSmallSlots it grows by a quarter, to keep big tables dense
	// (docs/performance.md compares a half, a quarter and an eighth).
	indexMinSlots   = 32
	indexSmallSlots = 1024
)

type indexSlot struct {
	id uint64
	x  ent
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

func (x *orderIndex) get(id uint64) (ent, bool) {
	h := indexHash(id)
	s := x.segOf(h)
	if len(s.slots) == 0 {
		return 0, false
	}
	for i := s.home(h); ; {
		sl := &s.slots[i]
		if sl.id == id {
			return sl.x, true
		}
		if sl.id == 0 {
			return 0, false
		}
		if i++; i == len(s.slots) {
			i = 0
		}
	}
}

// put sets the entry of id (never 0).
func (x *orderIndex) put(id uint64, v ent) {
	h := indexHash(id)
	s := x.segOf(h)
	if (s.n+1)*8 > len(s.slots)*7 {
		s.grow()
	}
	for i := s.home(h); ; {
		sl := &s.slots[i]
		if sl.id == id {
			sl.x = v
			return
		}
		if sl.id == 0 {
			sl.id, sl.x = id, v
			s.n++
			x.n++
			return
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
		n += n / 4
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
func (x *orderIndex) del(id uint64) { x.take(id) }

// take removes the entry of id and returns it, if there is one.
func (x *orderIndex) take(id uint64) (ent, bool) {
	h := indexHash(id)
	s := x.segOf(h)
	if len(s.slots) == 0 {
		return 0, false
	}
	i := s.home(h)
	for {
		if s.slots[i].id == id {
			break
		}
		if s.slots[i].id == 0 {
			return 0, false
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
	v := s.slots[i].x
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
	return v, true
}

// indexBatch gathers entries for an empty index, grouped by segment, so
// that a restore of millions of orders fills the index one segment at a
// time (a cache-sized table) instead of missing the cache on every order.
// A segment's batch is reserved with room for its table, and build turns
// each batch into its table in place (through a scratch copy of one
// segment), so the batch is not garbage once the index is built.
//
// A segment's batch that fills up goes on in a new, larger array (see
// grow), and the full one is kept in full rather than copied: build
// gathers the segment's arrays into the scratch copy it makes anyway.
type indexBatch struct {
	seg  [indexSegments][]indexSlot
	full [indexSegments][][]indexSlot // filled arrays of each segment, in order
	// want is the capacity of a segment's batch for the whole count the
	// header announced; a batch that fills up grows towards it.
	want int
}

// reserve sizes the batch for n entries, up front for at most pre of
// them: each segment's share, the table's headroom (8/7) and three
// standard deviations of the share's spread, so that nearly every
// segment's batch can hold its table. n comes from a header not yet
// checked, so only pre entries are allocated before any arrive; a batch
// that fills up doubles, but never past its share of n (see grow).
//
// The segments' first arrays are one allocation, its 2 MiB-aligned part
// advised for huge pages (hugepage.Advise; aligning it would cost the heap
// up to 2 MiB more) and faulted in on another goroutine
// (hugepage.Prefault): they become the index's tables, which a restore of
// 1M orders otherwise faults in 4 KiB at a time. A table that later grows
// leaves its part behind, allocated until every segment's has been left.
func (b *indexBatch) reserve(n, pre uint64) {
	c := segCap(min(n, 1<<40))
	b.want = c
	c = segCap(min(n, pre))
	all := make([]indexSlot, indexSegments*c)
	hugepage.Advise(all)
	hugepage.Prefault(all)
	for i := range b.seg {
		b.seg[i] = all[i*c : i*c : (i+1)*c]
	}
}

// segCap returns the capacity of a segment's batch for n entries in all.
func segCap(n uint64) int {
	per := int(n / indexSegments)
	return per + per/7 + 3*isqrt(per) + 16
}

// isqrt returns the integer square root of n ≥ 0.
func isqrt(n int) int {
	r := 0
	for bit := 1 << 40; bit > 0; bit >>= 2 {
		if r+bit <= n {
			n -= r + bit
			r = r>>1 + bit
		} else {
			r >>= 1
		}
	}
	return r
}

// add appends an entry to its segment's batch. The 256 batches are 256
// write streams, too many for the hardware prefetcher to follow, and an
// entry written to a line not in the cache waits for it; so every fourth
// add (four 16-byte entries a line) asks for the line four entries ahead,
// which that segment's next adds will write (a few hundred orders later,
// when it has arrived).
func (b *indexBatch) add(id uint64, v ent) {
	h := indexHash(id)
	s := &b.seg[h>>56]
	n := len(*s)
	if n == cap(*s) {
		b.grow(int(h >> 56))
		n = 0
	}
	*s = (*s)[:n+1]
	(*s)[n] = indexSlot{id: id, x: v}
	if n&3 == 0 && n+5 <= cap(*s) {
		prefetchSlot(&(*s)[:n+5][n+4])
	}
}

// grow moves segment i's full batch array to full and gives the segment a
// new, empty one. A header's count is only believed as far as the entries
// that arrive: the new array has twice the last one's capacity, but once
// the segment holds half its share of the header's count (want) or more,
// it is the last step, want itself, the capacity the segment's table
// needs, so the last array can still become the table. The batch then
// holds at most about three times the entries that arrived. An array past
// want (more entries than the header announced, which the restore refuses
// at its end) grows by a quarter. Nothing is copied: a restore of 5M
// orders (a header count above the entries preallocated) copied each
// entry about 1.7 times when a batch grew by copying, and went through
// arrays of 1, 2, 4 and then about 4.9 times the preallocated size where
// it now stops at 1, 2 and 4.9.
func (b *indexBatch) grow(i int) {
	s := &b.seg[i]
	c := cap(*s)
	held := c // every array of the segment is full
	for _, f := range b.full[i] {
		held += len(f)
	}
	var nc int
	switch {
	case held >= b.want:
		nc = c + c/4 + 16
	case 2*held >= b.want:
		nc = b.want
	default:
		nc = min(max(2*c, 64), b.want)
	}
	if c > 0 {
		b.full[i] = append(b.full[i], *s)
	}
	*s = make([]indexSlot, 0, nc)
}

// tableSize returns the slots of a segment table built for m entries.
func tableSize(m int) int { return max(indexMinSlots, m*8/7+1) }

// build fills x, which must be empty, with the batch. It returns the first
// duplicate id, if any (x then holds an unspecified part of the batch).
func (b *indexBatch) build(x *orderIndex) (dup uint64, ok bool) {
	var scratch []indexSlot
	for i := range b.seg {
		entries, full := b.seg[i], b.full[i]
		b.seg[i], b.full[i] = nil, nil
		n := len(entries)
		for _, f := range full {
			n += len(f)
		}
		size := tableSize(n)
		var tab []indexSlot
		c := cap(entries)
		fits := c >= size && c <= 2*size
		if fits || len(full) > 0 {
			// The segment's entries move to the scratch copy, the full
			// arrays' first; then the last array, if it fits, becomes the
			// table.
			scratch = scratch[:0]
			for _, f := range full {
				scratch = append(scratch, f...)
			}
			scratch = append(scratch, entries...)
			if fits {
				tab = entries[:c]
				clear(tab)
			}
			entries = scratch
		}
		if tab == nil {
			tab = make([]indexSlot, size)
		}
		if id, ok := fillTable(tab, entries); !ok {
			return id, false
		}
		x.seg[i] = indexSeg{slots: tab, n: n}
		x.n += n
	}
	return 0, true
}

// fillTable inserts entries into tab, an empty segment table with room
// for them (see tableSize), by linear probing from each entry's home. It
// returns the first duplicate id, if any.
func fillTable(tab []indexSlot, entries []indexSlot) (dup uint64, ok bool) {
	n := uint64(len(tab))
	for _, e := range entries {
		hi, _ := bits.Mul64(indexHash(e.id)<<8, n)
		for j := hi; ; {
			sl := &tab[j]
			if sl.id == 0 {
				*sl = e
				break
			}
			if sl.id == e.id {
				return e.id, false
			}
			if j++; j == n {
				j = 0
			}
		}
	}
	return 0, true
}
