package engine

import "math/bits"

// A price level holds its resting orders itself, in arrival order, in a
// FIFO of fixed-size order slots grouped in chunks:
//
//   - Every slot of a level has an absolute slot number, given in arrival
//     order and never reused until the level is rebuilt. All chunks of a
//     level hold 1<<shift slots, so slot s lives in chunk s>>shift at
//     offset s&(1<<shift-1): finding an order from its index entry costs
//     O(1), whatever the level's size.
//   - A new order is appended at slot next. A removed order leaves a
//     tombstone (id 0; its sequence stays, so the slots stay sorted by
//     arrival sequence and a partition can seek a sequence by binary
//     search). head is the first live slot; no live slot lies below it.
//     Chunks entirely below head are dropped from the front.
//   - A level is rebuilt (its live orders copied into new chunks from slot
//     0, their index entries rewritten) when it grows past maxChunks
//     chunks (it moves to larger chunks) or when fewer than a quarter of
//     its slots hold live orders. Either takes a number of operations
//     proportional to the orders copied since the previous rebuild, so a
//     cancel or an append is O(1) amortized.
//   - Copy-on-write by epoch: a level or chunk whose epoch is older than
//     the engine's may be read by a [Frozen] view and is never written. The
//     writer copies the level (its chunk list, O(chunks)) and then each
//     chunk it writes (O(chunk size)) first, so the first write to a level
//     after a clone costs a bounded copy, never a copy of the level's
//     orders.

// Chunk sizes: 1<<shift slots, shift in [minShift, maxShift] by steps of
// shiftStep.
const (
	minShift  = 2
	maxShift  = 8
	shiftStep = 2
	// maxChunks is the most chunks a level holds before it moves to
	// larger ones (unless its chunks are already the largest).
	maxChunks = 4
	// chunkClasses is the number of chunk sizes.
	chunkClasses = (maxShift-minShift)/shiftStep + 1
)

// chunk is a run of 1<<shift order slots of one level.
type chunk struct {
	s     []order // len 1<<shift
	epoch uint64
	live  int32 // live (non-tombstone) slots below the level's next
}

// level is one price level: its totals and its orders.
type level struct {
	price  int64
	qty    int64
	count  int64
	epoch  uint64
	head   uint64 // first live slot (== next when empty)
	next   uint64 // slot the next appended order takes
	first  uint64 // chunk number of chunks[0]
	shift  uint8
	chunks []chunk
}

// lvl is an item of a level tree: the level's price (so the comparator
// reads no pointer) and the level.
type lvl struct {
	price int64
	l     *level
}

// shiftFor returns the chunk size for a level of n orders: the smallest
// whose chunks number at most half of maxChunks, so a rebuilt level has
// room to grow before the next rebuild.
func shiftFor(n int) uint8 {
	s := uint8(minShift)
	for s < maxShift && n > (maxChunks/2)<<s {
		s += shiftStep
	}
	return s
}

// at returns slot s of l (which must lie in l's chunks), for reading.
func (l *level) at(s uint64) *order {
	return &l.chunks[s>>l.shift-l.first].s[s&(1<<l.shift-1)]
}

// slots returns the number of slots l's chunks hold.
func (l *level) slots() int { return len(l.chunks) << l.shift }

// seek returns the first slot in [head, next) whose sequence key is at or
// after sk, or next: a binary search, as tombstones keep their keys.
func (l *level) seek(sk uint64) uint64 {
	lo, hi := l.head, l.next
	for lo < hi {
		m := lo + (hi-lo)/2
		if l.at(m).sk < sk {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// walk calls fn with every live order in slots [from, to) in order, until fn
// returns false; it reports whether fn never did.
func (l *level) walk(from, to uint64, fn func(order) bool) bool {
	mask := uint64(1)<<l.shift - 1
	for s := from; s < to; {
		c := &l.chunks[s>>l.shift-l.first]
		end := min(to, (s|mask)+1)
		if c.live > 0 {
			for _, o := range c.s[s&mask : s&mask+(end-s)] {
				if o.id != 0 && !fn(o) {
					return false
				}
			}
		}
		s = end
	}
	return true
}

// rankSlot returns the slot of l's live order of rank r (0 for the oldest);
// r must be below l.count. It skips whole chunks by their live counts.
func (l *level) rankSlot(r int64) uint64 {
	mask := uint64(1)<<l.shift - 1
	for s := l.head; ; {
		c := &l.chunks[s>>l.shift-l.first]
		if int64(c.live) <= r {
			r -= int64(c.live)
			s = (s | mask) + 1
			continue
		}
		for ; ; s++ {
			if l.at(s).id != 0 {
				if r == 0 {
					return s
				}
				r--
			}
		}
	}
}

// levelPool recycles the levels and chunk buffers the writer owns, and
// holds the writer's epoch. Levels and chunks that a frozen view may see
// are left to the garbage collector.
type levelPool struct {
	free  []*level
	bufs  [chunkClasses][][]order
	lists [listClasses][][]chunk // empty chunk lists by capacity 4<<class
	epoch uint64                 // bumped by every clone
	// empties is the number of empty levels the engine's books keep (the
	// sum of their book.empty); see book.emptied.
	empties int
}

// listClasses is the number of pooled chunk-list capacities (4 to 32,768
// chunks); longer lists are left to the garbage collector.
const listClasses = 14

// grow gives l, the writer's, a chunk list with room for one more chunk,
// from the pool when it can, and pools the old one: the writer's level
// owns its list (a frozen view's level has a list of its own).
func (p *levelPool) grow(l *level) {
	p.relist(l, max(4, 2*cap(l.chunks)))
}

// relist gives l, the writer's, a chunk list of capacity c (a power of two,
// at least 4 and len(l.chunks)) holding its chunks, from the pool when it
// can, and pools the old one.
func (p *levelPool) relist(l *level, c int) {
	k := bits.Len(uint(c>>2)) - 1
	var nl []chunk
	if k < listClasses {
		fl := &p.lists[k]
		if len(*fl) == 0 {
			n := max(1, slabBytes/(40*c))
			slab := make([]chunk, n*c)
			for i := range n {
				*fl = append(*fl, slab[i*c:i*c:(i+1)*c])
			}
		}
		nl = (*fl)[len(*fl)-1]
		*fl = (*fl)[:len(*fl)-1]
	} else {
		nl = make([]chunk, 0, c)
	}
	nl = append(nl, l.chunks...)
	old := l.chunks
	l.chunks = nl
	if oc := cap(old); oc >= 4 && oc&(oc-1) == 0 {
		if k := bits.Len(uint(oc>>2)) - 1; k < listClasses && len(p.lists[k]) < 1024 {
			clear(old)
			p.lists[k] = append(p.lists[k], old[:0])
		}
	}
}

// listCap returns the chunk-list capacity a level of n chunks is given
// when it is laid out afresh: the smallest power of two, at least 4, that
// holds n.
func listCap(n int) int {
	c := 4
	for c < n {
		c *= 2
	}
	return c
}

func classOf(shift uint8) int { return int(shift-minShift) / shiftStep }

// maxFreeBufs bounds each class's free list to about 512 KiB of slots.
func maxFreeBufs(shift uint8) int { return (512 << 10) / (32 << shift) }

// slabBytes is the size of one allocation that refills an empty free
// list: buffers, levels and short chunk lists are carved from slabs, so a
// book that grows allocates once per slab, not once per level or chunk.
const slabBytes = 8 << 10

// restoreSlabBytes is the slab size of a restore's chunk buffers (see
// fill): a restore allocates all of a book's buffers at once, and an 8 KiB
// slab costs about a microsecond of the allocator's time, several
// nanoseconds an order. Larger slabs pin more memory while any one of
// their buffers lives, but a restore carves them in price order, so a
// slab holds adjacent levels, which mostly live and empty together.
const restoreSlabBytes = 32 << 10

func (p *levelPool) buf(shift uint8) []order { return p.bufFrom(shift, slabBytes) }

// bufFrom returns a buffer of 1<<shift slots, refilling the free list
// from a slab of slab bytes when it is empty.
func (p *levelPool) bufFrom(shift uint8, slab int) []order {
	fl := &p.bufs[classOf(shift)]
	if len(*fl) == 0 {
		size := 1 << shift
		n := max(1, slab/(32*size))
		slab := make([]order, n*size)
		for i := range n {
			*fl = append(*fl, slab[i*size:(i+1)*size:(i+1)*size])
		}
	}
	n := len(*fl)
	b := (*fl)[n-1]
	*fl = (*fl)[:n-1]
	return b
}

// release gives c's buffer back if the writer owns it.
func (p *levelPool) release(c *chunk, shift uint8) {
	p.releaseUpTo(c, shift, maxFreeBufs(shift))
}

// growKeepBufs bounds the free list of a chunk size when a level that moves
// to larger chunks gives back its smaller ones. A slab stays allocated
// while any one of its buffers is referenced, and a growing book releases
// the small buffers of every level it grows, scattered over many slabs: a
// free list kept at its full bound then pins one slab a buffer (at 1M
// orders, about 8 B of heap per resting order). Other releases (a level
// emptied, dropped, or rebuilt at its size) keep the full bound, so the
// mix's steady state still allocates nothing.
const growKeepBufs = 256

// releaseUpTo gives c's buffer back if the writer owns it and the free
// list of its size holds fewer than limit buffers.
func (p *levelPool) releaseUpTo(c *chunk, shift uint8, limit int) {
	fl := &p.bufs[classOf(shift)]
	if c.epoch == p.epoch && len(*fl) < limit {
		*fl = append(*fl, c.s)
	}
	c.s = nil
}

func (p *levelPool) get(price int64) *level {
	if len(p.free) == 0 {
		slab := make([]level, 64)
		for i := range slab {
			p.free = append(p.free, &slab[i])
		}
	}
	l := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	*l = level{price: price, epoch: p.epoch, shift: minShift, chunks: l.chunks[:0]}
	return l
}

// clear gives back the chunks of l, the writer's and empty, and resets its
// slot numbering: an empty level kept in its book holds no chunks.
func (p *levelPool) clear(l *level) {
	for i := range l.chunks {
		p.release(&l.chunks[i], l.shift)
	}
	l.chunks = l.chunks[:0]
	l.head, l.next, l.first, l.shift = 0, 0, 0, minShift
}

// put recycles l, which has left its book, with its chunks.
func (p *levelPool) put(l *level) {
	if l.epoch != p.epoch {
		return
	}
	for i := range l.chunks {
		p.release(&l.chunks[i], l.shift)
	}
	l.chunks = l.chunks[:0]
	if len(p.free) < 4096 {
		p.free = append(p.free, l)
	}
}

// copyLevel returns the writer's copy of a level a frozen view may see:
// the totals and the chunk list; the chunks stay shared until written.
func (p *levelPool) copyLevel(l *level) *level {
	c := p.get(l.price)
	chunks := append(c.chunks[:0], l.chunks...)
	*c = *l
	c.chunks, c.epoch = chunks, p.epoch
	return c
}

// wchunk returns chunk number k of l for writing, copying it first if a
// frozen view may see it. l must be the writer's.
func (p *levelPool) wchunk(l *level, k uint64) *chunk {
	c := &l.chunks[k-l.first]
	if c.epoch != p.epoch {
		b := p.buf(l.shift)
		copy(b, c.s)
		c.s, c.epoch = b, p.epoch
	}
	return c
}

// wslot returns slot s of l for writing.
func (p *levelPool) wslot(l *level, s uint64) *order {
	return &p.wchunk(l, s>>l.shift).s[s&(1<<l.shift-1)]
}

// push appends o at l's tail, adding it to the totals, and returns its
// slot. l must be the writer's.
func (p *levelPool) push(l *level, o order) uint64 {
	s := l.next
	k := s >> l.shift
	if k-l.first == uint64(len(l.chunks)) {
		if len(l.chunks) == cap(l.chunks) {
			p.grow(l)
		}
		l.chunks = append(l.chunks, chunk{s: p.buf(l.shift), epoch: p.epoch})
	}
	c := p.wchunk(l, k)
	c.s[s&(1<<l.shift-1)] = o
	c.live++
	l.next++
	l.qty += o.qty
	l.count++
	return s
}

// pop removes the live order at slot s of l, taking it off the totals,
// leaves a tombstone and returns the order. l must be the writer's.
func (p *levelPool) pop(l *level, s uint64) order {
	c := p.wchunk(l, s>>l.shift)
	ws := &c.s[s&(1<<l.shift-1)]
	o := *ws
	ws.id = 0
	c.live--
	l.qty -= o.qty
	l.count--
	if s != l.head {
		return o
	}
	// Advance head past the tombstones, dropping dead chunks at the front.
	mask := uint64(1)<<l.shift - 1
	for l.head < l.next {
		c := &l.chunks[l.head>>l.shift-l.first]
		if c.live == 0 {
			l.head = (l.head | mask) + 1
		} else if l.at(l.head).id == 0 {
			l.head++
			continue
		} else {
			break
		}
	}
	if l.head >= l.next {
		l.head = l.next
	}
	drop := 0
	for drop < len(l.chunks)-1 && (l.first+uint64(drop)+1)<<l.shift <= l.head {
		p.release(&l.chunks[drop], l.shift)
		drop++
	}
	if drop > 0 {
		n := copy(l.chunks, l.chunks[drop:])
		clear(l.chunks[n:])
		l.chunks = l.chunks[:n]
		l.first += uint64(drop)
	}
	return o
}

// fill lays the orders out in l, which must be the writer's and hold no
// chunks, from slot 0 in chunks of 1<<shift slots, adding them to the
// totals. New buffers come in slabs of slab bytes (slabBytes, or
// restoreSlabBytes for a restore).
//
// l's chunk list is first fitted to the chunks the orders need (see
// listCap), so a level that grew a long list at a smaller chunk size does
// not keep it: a list entry is 40 bytes a chunk.
func (p *levelPool) fill(l *level, orders []order, shift uint8, slab int) {
	l.shift, l.first, l.head, l.next = shift, 0, 0, 0
	if c := listCap((len(orders) + 1<<shift - 1) >> shift); cap(l.chunks) != c {
		p.relist(l, c)
	}
	for len(orders) > 0 {
		b := p.bufFrom(shift, slab)
		n := copy(b, orders)
		clear(b[n:])
		l.chunks = append(l.chunks, chunk{s: b, epoch: p.epoch, live: int32(n)})
		for _, o := range orders[:n] {
			l.qty += o.qty
		}
		orders = orders[n:]
		l.next += uint64(n)
		l.count += int64(n)
	}
}

// needsRebuild reports whether l should be rebuilt after a change: too
// many chunks for its chunk size, or too few live slots.
func (l *level) needsRebuild() bool {
	if len(l.chunks) > maxChunks && l.shift < maxShift {
		return true
	}
	sl := l.slots()
	return sl > 4<<minShift && l.count*4 < int64(sl)
}
