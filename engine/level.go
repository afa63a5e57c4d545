package engine

import "github.com/matchlog/matchlog/internal/hugepage"

// A price level holds its resting orders itself, in arrival order, in a
// FIFO of fixed-size order slots grouped in chunks:
//
//   - Every slot of a level has an absolute slot number, given in arrival
//     order and never reused until the level is rebuilt. All chunks of a
//     level hold 1<<shift slots, so slot s lives in chunk s>>shift at
//     offset s&(1<<shift-1): finding an order from its index entry costs
//     O(1), whatever the level's size.
//   - A level's last chunk, in the chunk sizes of 16 slots and more,
//     starts with a buffer of half its slots and is given a whole one when
//     an order arrives past that half (see halfShift): every other chunk's
//     buffer holds 1<<shift slots. Slots at or past next are never read.
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
//   - A level of at most inlChunks chunks keeps their entries in its own
//     inline list (inl, the short form), in the level's two cache lines.
//     A longer one (only levels of the largest chunk size: a level of a
//     smaller one is rebuilt into larger chunks before it takes a fifth)
//     keeps them in segments of segChunks entries (the long form, see
//     segList): chunk k is entry (k-base)%segChunks of segment
//     (k-base)/segChunks. Entries of the first segment below first are
//     dead (dropped chunks); entries past the last chunk are empty. A
//     chunk entry is 16 bytes (see chunk).
//   - Copy-on-write by epoch: a level, segment or chunk whose epoch is
//     older than the engine's may be read by a [Frozen] view and is never
//     written. The writer copies the level first (128 bytes with its
//     inline list, and in the long form its list of segment pointers, one
//     a segChunks chunks), then the segment holding the entry of a chunk
//     it writes, then the chunk (1<<shift slots). So the first write to a
//     level after a clone costs a bounded copy, never a copy of the
//     level's orders: for a 100,000-order level, 49-196 segment pointers
//     (the level holds 1,563-6,250 chunks between rebuilds), one 520-byte
//     segment and one 2 KiB chunk.

// Chunk sizes: 1<<shift slots, shift in [minShift, maxShift] by steps of
// shiftStep. The largest chunk, 64 slots (2 KiB), bounds what the first
// write to a chunk after a clone copies, and what a big level's last chunk
// leaves unused; 256-slot chunks cost 85 B of heap an order at 5M orders
// against 70 (docs/performance.md).
const (
	minShift  = 2
	maxShift  = 6
	shiftStep = 2
	// maxChunks is the most chunks a level holds before it moves to
	// larger ones (unless its chunks are already the largest).
	maxChunks = 4
	// chunkClasses is the number of chunk sizes.
	chunkClasses = (maxShift-minShift)/shiftStep + 1
)

// segChunks is the number of chunk entries of a segment.
const segChunks = 32

// chunkSeg is a segment of a long level's chunk entries.
type chunkSeg struct {
	c     [segChunks]chunk
	epoch uint64
}

// level is one price level: its totals and its orders. 128 bytes: its
// header is the heap a level costs beside its chunks' slots, 4 B an order
// in a book of levels of about 30 (docs/performance.md).
type level struct {
	price int64
	qty   int64
	epoch uint64
	head  uint64 // first live slot (== next when empty)
	next  uint64 // slot the next appended order takes
	first uint64 // chunk number of the first chunk
	count int32  // live orders; fewer than maxSlots
	shift uint8
	// nc is the number of entries of inl in use: in the short form (long
	// == nil), inl[:nc] holds the entries of chunks first to first+nc-1,
	// and finding a chunk reads no memory but the level's two cache lines.
	// A level of more than inlChunks chunks (only one of the largest chunk
	// size: a smaller one is rebuilt into larger chunks before it grows a
	// fifth, see Engine.restOrder) is in the long form: long holds its
	// entries, and nc is 0.
	nc   uint8
	inl  [inlChunks]chunk
	long *segList
}

// inlChunks is the capacity of a level's inline chunk list.
const inlChunks = 4

// segList holds the chunk entries of a level in the long form: segs holds
// them from chunk number base, n chunks from the level's first on
// (first-base < segChunks). A level's segList is its own: copying a level
// copies it.
type segList struct {
	segs []*chunkSeg
	base uint64
	n    int
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

// restoreShift returns the chunk size a restore lays a level of n orders
// out in: the smallest that holds them in at most maxChunks chunks, the
// size the level would have reached by growing one order at a time (a
// level moves to larger chunks only past maxChunks). shiftFor's headroom
// would put a level of 33 to 128 orders in 64-slot chunks, of which a
// level of 40 fills 62%: a restored book of 1M orders in levels of about
// 31 took 77 B an order against 68 for the same book grown through
// commands. A restored level that then grows past its maxChunks chunks is
// rebuilt once, as a grown one is.
func restoreShift(n int) uint8 {
	s := uint8(minShift)
	for s < maxShift && n > maxChunks<<s {
		s += shiftStep
	}
	return s
}

// chunkAt returns the entry of chunk number k of l (which must be one of
// l's chunks), for reading.
func (l *level) chunkAt(k uint64) *chunk {
	if l.long == nil {
		return &l.inl[k-l.first]
	}
	i := k - l.long.base
	return &l.long.segs[i/segChunks].c[i%segChunks]
}

// nchunks returns the number of l's chunks.
func (l *level) nchunks() int {
	if l.long == nil {
		return int(l.nc)
	}
	return l.long.n
}

// at returns slot s of l (which must lie in l's chunks), for reading.
func (l *level) at(s uint64) *order {
	return &l.chunkAt(s >> l.shift).buf()[s&(1<<l.shift-1)]
}

// slots returns the number of slots l's chunks hold.
func (l *level) slots() int { return l.nchunks() << l.shift }

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
		c := l.chunkAt(s >> l.shift)
		end := min(to, (s|mask)+1)
		if c.live() > 0 {
			for _, o := range c.buf()[s&mask : s&mask+(end-s)] {
				if o.id != 0 && !fn(o) {
					return false
				}
			}
		}
		s = end
	}
	return true
}

// walkRuns calls fn with every maximal run of consecutive live orders in
// slots [from, to), in order, until fn returns false; it reports whether
// fn never did. A run never crosses a chunk: each is a subslice of one
// chunk's slots. A chunk whose slots in range are all live (its live
// count says so) is passed as one run without a scan.
func (l *level) walkRuns(from, to uint64, fn func([]order) bool) bool {
	mask := uint64(1)<<l.shift - 1
	for s := from; s < to; {
		c := l.chunkAt(s >> l.shift)
		end := min(to, (s|mask)+1)
		if live := c.live(); live > 0 {
			os := c.buf()[s&mask : s&mask+(end-s)]
			// A range that holds all of the chunk's slots from the
			// level's head to its next, with as many live orders as
			// slots, is one run: no slot to scan.
			if start := s &^ mask; (s == start || s == l.head) && (end == start+mask+1 || end == l.next) && uint64(live) == end-s {
				if !fn(os) {
					return false
				}
				s = end
				continue
			}
			for len(os) > 0 {
				i := 0
				for i < len(os) && os[i].id == 0 {
					i++
				}
				j := i
				for j < len(os) && os[j].id != 0 {
					j++
				}
				if j > i && !fn(os[i:j]) {
					return false
				}
				os = os[j:]
			}
		}
		s = end
	}
	return true
}

// walkRunsAhead is walkRuns for a walk that prefetches (orderWalk): the
// chunks of l past the walk's budget (prefetchChunkBytes from the level's
// first chunk, fetched levels ahead by orderWalk.visit) are prefetched one
// chunk ahead, so entering chunk k fetches chunk k+1, which then has the
// time of k's orders to arrive. A level within the budget (nearly every
// level of a book of up to a few dozen orders a level) is walked by
// walkRuns alone.
func (l *level) walkRunsAhead(from, to uint64, fn func([]order) bool) bool {
	if from >= to {
		return true
	}
	ahead := l.first + uint64(prefetchChunkBytes>>(l.shift+5))
	last := (to - 1) >> l.shift
	if last < ahead {
		return l.walkRuns(from, to, fn)
	}
	for s := from; s < to; {
		k := s >> l.shift
		if k+1 >= ahead && k+1 <= last {
			if c := l.chunkAt(k + 1); c.p != nil {
				prefetchOrders(c.p, len(c.buf())*32)
			}
		}
		end := min(to, (k+1)<<l.shift)
		if !l.walkRuns(s, end, fn) {
			return false
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
		c := l.chunkAt(s >> l.shift)
		if live := int64(c.live()); live <= r {
			r -= live
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
	free []*level
	bufs [chunkClasses][][]order
	// halves holds the free half-size buffers of each chunk size of at
	// least 1<<halfShift slots: a level's last chunk (see tailBuf).
	halves [chunkClasses][][]order
	// segs and lists recycle the segments and segment lists of the
	// writer's levels in the long form: a level of the largest chunks
	// that churns enters the long form as it grows a fifth chunk and
	// leaves it when it is rebuilt sparse, without allocating each time.
	segs  []*chunkSeg
	lists []*segList
	epoch uint64 // bumped by every clone
	// empties is the number of empty levels the engine's books keep (the
	// sum of their book.empty); see book.emptied.
	empties int
}

func classOf(shift uint8) int { return int(shift-minShift) / shiftStep }

// maxFreeBufs bounds each class's free list to about 512 KiB of slots.
func maxFreeBufs(shift uint8) int { return (512 << 10) / (32 << shift) }

// slabBytes is the size of one allocation that refills an empty free
// list: buffers and levels are carved from slabs, so a
// book that grows allocates once per slab, not once per level or chunk.
const slabBytes = 8 << 10

// slotArena hands out a restore's chunk buffers, whole and half-size,
// carved one after another from arenas: a restore lays out a whole book at
// once, in price order. An arena is sized for the slots the restore still
// expects to need, at least arenaMinSlots and at most arenaMaxSlots; one
// of 2 MiB or more is made of whole huge pages (hugepage.Make), which
// another goroutine faults in ahead of the restore (hugepage.Prefault: it
// changes no byte of them). A new process restoring 1M orders otherwise
// meets a page fault every 4 KiB of them, and on a virtual machine the
// kernel's zeroing of fresh huge pages can take as long as the restore's
// own work: most of a restart's time (docs/performance.md).
//
// An arena stays allocated while any one of its buffers lives. Its
// buffers hold adjacent levels, which mostly live and empty together, and
// a buffer a level gives back goes to the pool's free lists like any
// other; the memory arenas can pin is that of the restored book's slots.
// The header's count, not yet checked, only sizes arenas: each is
// allocated when a run needs it, so a restore holds at most one arena
// more than the orders that arrived need.
type slotArena struct {
	free []order
	// spare is the memory of the current arena's allocation before its
	// huge pages (hugepage.Make's head): used, in 4 KiB pages, when the
	// arena is exhausted, before a new arena is made.
	spare []order
	// carved and orders count the slots handed out and the orders they
	// hold: their ratio sizes the next arena (see want).
	carved, orders int
}

// arenaMinSlots is the smallest arena: 32 KiB, the slab a small restore
// takes (a slab of 8 KiB costs about a microsecond of the allocator's
// time, several nanoseconds an order of a restore).
const arenaMinSlots = (32 << 10) / 32

// arenaMaxSlots is the largest arena: 64 MiB, 2M slots, so that a restore
// of 1M orders (1.1M slots in levels of about 30) fits one arena's huge
// pages. The header's count is not yet checked when it sizes the first
// arena: a header that announces more orders than arrive costs at most
// this much memory until the restore fails. Tests lower it.
var arenaMaxSlots = (64 << 20) / 32

// want returns the number of slots a restore with more orders to come
// (those of the run at hand included) expects to lay out: at the ratio of
// slots to orders so far, or 9/8 before any (levels end in partly
// filled chunks), and at most arenaMaxSlots.
func (a *slotArena) want(more uint64) int {
	most := uint64(arenaMaxSlots)
	more = min(more, most)
	if a.orders == 0 {
		return int(min(more+more/8, most))
	}
	return int(min(more*uint64(a.carved)/uint64(a.orders)+1, most))
}

// take returns a buffer of n slots. want is the number of slots the
// restore still expects to lay out, this buffer's included.
func (a *slotArena) take(n, want int) []order {
	if len(a.free) < n {
		if len(a.spare) >= n {
			a.free, a.spare = a.spare, nil
		} else {
			a.free, a.spare = hugepage.Make[order](min(max(want, n, arenaMinSlots), arenaMaxSlots))
			a.free = a.free[:cap(a.free)]
			hugepage.Prefault(a.free)
		}
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	a.carved += n
	return b
}

// buf returns a buffer of 1<<shift slots. The writer's buffers of the
// smallest size are each an allocation of their own, not carved from a
// slab: nearly every level starts in them and leaves them as it grows,
// and a slab stays allocated while any one of its buffers lives, so a
// book grown to 1M orders in levels of about 30 kept 3.1 B an order of
// dead slabs (docs/performance.md). An empty free list is still refilled
// with a slab's worth of them at once, so the number of refills (the
// allocations a steady state meets) stays that of a slab.
func (p *levelPool) buf(shift uint8) []order {
	if shift == minShift {
		return takeEach(&p.bufs[classOf(shift)], 1<<shift)
	}
	return p.bufFrom(shift)
}

// takeEach pops a buffer of size slots from the free list fl, refilling
// it with a slab's worth of buffers allocated one by one when it is
// empty: buffers that come and go in their own time, each freed whole.
func takeEach(fl *[][]order, size int) []order {
	if len(*fl) == 0 {
		for range max(1, slabBytes/(32*size)) {
			*fl = append(*fl, make([]order, size))
		}
	}
	return pop(fl)
}

// pop removes and returns the last buffer of the free list fl, which must
// not be empty.
func pop(fl *[][]order) []order {
	n := len(*fl)
	b := (*fl)[n-1]
	*fl = (*fl)[:n-1]
	return b
}

// bufFrom returns a buffer of 1<<shift slots, refilling the free list
// from a slab of slabBytes when it is empty.
func (p *levelPool) bufFrom(shift uint8) []order {
	return take(&p.bufs[classOf(shift)], 1<<shift)
}

// halfShift is the smallest chunk size whose chunks start half-size: a
// level's last chunk of 1<<shift slots, shift at least halfShift, is given
// a buffer of half as many (tailBuf) and made whole when an order arrives
// past its half (push). The unused slots of a level's last chunk, half a
// chunk on average and 5-7 B of heap an order in a book of 1M orders in
// levels of 30 to 50, fall by half. Smaller chunks are always whole:
// the levels of the mix's small books (one or two orders) would otherwise
// copy on most second or third arrivals.
const halfShift = 4

// tailBuf returns a buffer for a level's new last chunk of 1<<shift slots
// that will hold n orders (n <= 1<<shift): half-size when the chunk size
// allows it and the orders fit. Half-size buffers are allocations of
// their own (takeEach), not carved from slabs: each lives only until its
// chunk fills its half, and a slab stays allocated while any one of its
// buffers lives (a 5M-order book grown through commands kept 4 B an order
// of such slabs).
func (p *levelPool) tailBuf(shift uint8, n int) []order {
	if !isHalf(shift, n) {
		return p.bufFrom(shift)
	}
	return takeEach(&p.halves[classOf(shift)], 1<<(shift-1))
}

// isHalf reports whether a level's new last chunk of 1<<shift slots that
// will hold n orders takes a half-size buffer.
func isHalf(shift uint8, n int) bool { return shift >= halfShift && n <= 1<<(shift-1) }

// take pops a buffer of size slots from the free list fl, refilling it
// from a slab of slabBytes when it is empty.
func take(fl *[][]order, size int) []order {
	if len(*fl) == 0 {
		n := max(1, slabBytes/(32*size))
		slab := make([]order, n*size)
		for i := range n {
			*fl = append(*fl, slab[i*size:(i+1)*size:(i+1)*size])
		}
	}
	return pop(fl)
}

// release gives c's buffer back if the writer owns it.
func (p *levelPool) release(c *chunk, shift uint8) {
	p.releaseUpTo(c, shift, maxFreeBufs(shift))
}

// putBuf gives back b, a whole or half-size buffer of a chunk of 1<<shift
// slots, if its free list holds fewer than limit buffers.
func (p *levelPool) putBuf(b []order, shift uint8, limit int) {
	fl := &p.bufs[classOf(shift)]
	if len(b) != 1<<shift {
		fl = &p.halves[classOf(shift)]
	}
	if len(*fl) < limit {
		*fl = append(*fl, b)
	}
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
	if c.epoch() == p.epoch {
		p.putBuf(c.buf(), shift, limit)
	}
	c.p, c.w = nil, 0
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
	*l = level{price: price, epoch: p.epoch, shift: minShift}
	return l
}

// releaseAll gives back the buffers of l's chunks that the writer owns,
// keeping at most limit buffers a size, and leaves l, the writer's, with
// no chunks, in the short form. It writes no segment a frozen view may
// see: such a segment holds only chunks the writer does not own (a chunk
// written since the latest clone sits in a segment copied since then),
// and only the segments the writer owns are recycled (putSeg).
func (p *levelPool) releaseAll(l *level, limit int) {
	if l.long == nil {
		for i := range l.nc {
			p.releaseUpTo(&l.inl[i], l.shift, limit)
		}
		l.nc = 0
		return
	}
	for k := l.first; k < l.first+uint64(l.long.n); k++ {
		if c := l.chunkAt(k); c.epoch() == p.epoch {
			p.putBuf(c.buf(), l.shift, limit)
		}
	}
	p.putList(l.long)
	l.long = nil
}

// clear gives back the chunks of l, the writer's and empty, and resets its
// slot numbering: an empty level kept in its book holds no chunks.
func (p *levelPool) clear(l *level) {
	p.releaseAll(l, maxFreeBufs(l.shift))
	l.head, l.next, l.first, l.shift = 0, 0, 0, minShift
}

// put recycles l, which has left its book, with its chunks.
func (p *levelPool) put(l *level) {
	if l.epoch != p.epoch {
		return
	}
	p.releaseAll(l, maxFreeBufs(l.shift))
	if len(p.free) < 4096 {
		p.free = append(p.free, l)
	}
}

// maxFreeSegs bounds the free segments and segment lists kept.
const maxFreeSegs = 64

// newSeg returns an empty segment of the writer's epoch.
func (p *levelPool) newSeg() *chunkSeg {
	if n := len(p.segs); n > 0 {
		g := p.segs[n-1]
		p.segs = p.segs[:n-1]
		g.epoch = p.epoch
		return g
	}
	return &chunkSeg{epoch: p.epoch}
}

// putSeg keeps g, a segment no level uses any more, for reuse if the
// writer owns it (no frozen view may see it).
func (p *levelPool) putSeg(g *chunkSeg) {
	if g.epoch == p.epoch && len(p.segs) < maxFreeSegs {
		*g = chunkSeg{}
		p.segs = append(p.segs, g)
	}
}

// newList returns an empty segment list from chunk number base.
func (p *levelPool) newList(base uint64) *segList {
	if n := len(p.lists); n > 0 {
		ls := p.lists[n-1]
		p.lists = p.lists[:n-1]
		ls.base = base
		return ls
	}
	return &segList{base: base}
}

// putList keeps ls, the segment list of a writer's level that leaves the
// long form (a writer's level's list is its own, see segList), and the
// segments of it the writer owns, for reuse.
func (p *levelPool) putList(ls *segList) {
	for i, g := range ls.segs {
		p.putSeg(g)
		ls.segs[i] = nil
	}
	ls.segs, ls.n = ls.segs[:0], 0
	if len(p.lists) < maxFreeSegs {
		p.lists = append(p.lists, ls)
	}
}

// copyLevel returns the writer's copy of a level a frozen view may see:
// the totals and the inline chunk list or the list of segment pointers;
// the segments and chunks stay shared until written.
func (p *levelPool) copyLevel(l *level) *level {
	c := p.get(l.price)
	*c = *l
	c.epoch = p.epoch
	if l.long != nil {
		c.long = p.newList(l.long.base)
		c.long.segs, c.long.n = append(c.long.segs, l.long.segs...), l.long.n
	}
	return c
}

// wseg returns segment j of l, the writer's, for writing, copying it first
// if a frozen view may see it.
func (p *levelPool) wseg(l *level, j uint64) *chunkSeg {
	g := l.long.segs[j]
	if g.epoch != p.epoch {
		ng := p.newSeg()
		ng.c = g.c
		l.long.segs[j] = ng
		g = ng
	}
	return g
}

// wchunk returns chunk number k of l for writing, copying its segment (in
// the long form) and then the chunk first if a frozen view may see them. l
// must be the writer's.
func (p *levelPool) wchunk(l *level, k uint64) *chunk {
	var c *chunk
	if l.long == nil {
		c = &l.inl[k-l.first]
	} else {
		i := k - l.long.base
		c = &p.wseg(l, i/segChunks).c[i%segChunks]
	}
	if c.epoch() != p.epoch {
		b := p.buf(l.shift)
		copy(b, c.buf())
		c.setBuf(b, p.epoch)
	}
	return c
}

// wslot returns slot s of l for writing.
func (p *levelPool) wslot(l *level, s uint64) *order {
	return &p.wchunk(l, s>>l.shift).buf()[s&(1<<l.shift-1)]
}

// addChunk appends an empty chunk to l, the writer's, moving it to the
// long form when its inline list is full.
func (p *levelPool) addChunk(l *level) {
	if l.long == nil {
		if n := l.nc; n < inlChunks {
			l.inl[n].set(p.newTail(l.shift), p.epoch, 0)
			l.nc++
			return
		}
		g := p.newSeg()
		copy(g.c[:], l.inl[:])
		l.inl, l.nc = [inlChunks]chunk{}, 0
		l.long = p.newList(l.first)
		l.long.segs, l.long.n = append(l.long.segs, g), inlChunks
	}
	i := l.first + uint64(l.long.n) - l.long.base
	if i/segChunks == uint64(len(l.long.segs)) {
		l.long.segs = append(l.long.segs, p.newSeg())
	}
	p.wseg(l, i/segChunks).c[i%segChunks].set(p.newTail(l.shift), p.epoch, 0)
	l.long.n++
}

// newTail returns the buffer of a chunk of 1<<shift slots that push adds
// for one order: half-size where the chunk size allows (see halfShift).
func (p *levelPool) newTail(shift uint8) []order {
	if shift >= halfShift {
		return takeEach(&p.halves[classOf(shift)], 1<<(shift-1))
	}
	return p.buf(shift)
}

// push appends o at l's tail, adding it to the totals, and returns its
// slot. l must be the writer's.
func (p *levelPool) push(l *level, o order) uint64 {
	s := l.next
	k := s >> l.shift
	if k-l.first == uint64(l.nchunks()) {
		p.addChunk(l)
	}
	c := p.wchunk(l, k)
	i := s & (1<<l.shift - 1)
	if i == uint64(c.len()) {
		// The last chunk's half is full: it becomes whole.
		b := p.buf(l.shift)
		old := c.buf()
		copy(b, old)
		p.putBuf(old, l.shift, maxFreeBufs(l.shift))
		c.setBuf(b, p.epoch)
	}
	c.buf()[i] = o
	c.addLive(1)
	l.next++
	l.qty += o.qty
	l.count++
	return s
}

// pop removes the live order at slot s of l, taking it off the totals,
// leaves a tombstone and returns the order. l must be the writer's.
func (p *levelPool) pop(l *level, s uint64) order {
	c := p.wchunk(l, s>>l.shift)
	ws := &c.buf()[s&(1<<l.shift-1)]
	o := *ws
	ws.id = 0
	c.addLive(-1)
	l.qty -= o.qty
	l.count--
	if s != l.head {
		return o
	}
	// Advance head past the tombstones, dropping dead chunks at the front.
	mask := uint64(1)<<l.shift - 1
	for l.head < l.next {
		c := l.chunkAt(l.head >> l.shift)
		if c.live() == 0 {
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
	if l.long != nil {
		p.dropSegs(l)
		return o
	}
	drop := uint8(0)
	for drop+1 < l.nc && (l.first+uint64(drop)+1)<<l.shift <= l.head {
		p.release(&l.inl[drop], l.shift)
		drop++
	}
	if drop > 0 {
		n := copy(l.inl[:], l.inl[drop:l.nc])
		clear(l.inl[n:])
		l.nc = uint8(n)
		l.first += uint64(drop)
	}
	return o
}

// dropSegs drops the chunks of l, a writable level in the long form, that
// lie wholly below head (keeping at least one), and the segments left
// with no chunk. A dropped chunk's entry is cleared only in a segment the
// writer owns: one a frozen view may see holds no chunk the writer owns.
func (p *levelPool) dropSegs(l *level) {
	for l.long.n > 1 && (l.first+1)<<l.shift <= l.head {
		i := l.first - l.long.base
		if g := l.long.segs[i/segChunks]; g.epoch == p.epoch {
			p.release(&g.c[i%segChunks], l.shift)
		}
		l.first++
		l.long.n--
		if l.first-l.long.base == segChunks {
			p.putSeg(l.long.segs[0])
			n := copy(l.long.segs, l.long.segs[1:])
			l.long.segs[n] = nil
			l.long.segs = l.long.segs[:n]
			l.long.base += segChunks
		}
	}
}

// fill lays the orders out in l, which must be the writer's and hold no
// chunks (in the short form), from slot 0 in chunks of 1<<shift slots,
// adding them to the totals. New buffers come from the restore's arena a
// (want is the number of slots the restore still expects to lay out,
// these orders' included), or, when a is nil, from the pool's free lists
// (see tailBuf). A last chunk of 1<<halfShift slots or more that the
// orders fill at most half of gets a half-size buffer either way.
//
// A level of at most inlChunks chunks keeps them in its inline list; a
// longer one is laid out in the long form.
func (p *levelPool) fill(l *level, orders []order, shift uint8, a *slotArena, want int) {
	l.shift, l.first, l.head, l.next = shift, 0, 0, 0
	n := (len(orders) + 1<<shift - 1) >> shift
	if n > inlChunks {
		l.long = p.newList(0)
		for range (n + segChunks - 1) / segChunks {
			l.long.segs = append(l.long.segs, p.newSeg())
		}
	}
	for len(orders) > 0 {
		var b []order
		if a == nil {
			b = p.tailBuf(shift, len(orders))
		} else {
			size := 1 << shift
			if isHalf(shift, len(orders)) {
				size >>= 1
			}
			b = a.take(size, want)
			want -= size
		}
		n := copy(b, orders)
		clear(b[n:])
		var c *chunk
		if l.long == nil {
			c = &l.inl[l.nc]
			l.nc++
		} else {
			c = &l.long.segs[l.long.n/segChunks].c[l.long.n%segChunks]
			l.long.n++
		}
		c.set(b, p.epoch, n)
		for _, o := range orders[:n] {
			l.qty += o.qty
		}
		orders = orders[n:]
		l.next += uint64(n)
		l.count += int32(n)
	}
}

// inlineFull reports whether the next order appended to l would take a
// fifth chunk in a chunk size below the largest: l is then rebuilt
// first, in larger chunks (this is how a level moves to larger chunks),
// so only levels of the largest chunks take the long form.
func (l *level) inlineFull() bool {
	return l.long == nil && l.nc == inlChunks && l.shift < maxShift && l.next>>l.shift == l.first+inlChunks
}

// needsRebuild reports whether l should be rebuilt after a change: too
// few live slots, or slot numbers near the bound of an index entry. (A
// level that outgrows its chunk size is rebuilt before the order that
// would take a fifth chunk, see inlineFull.)
func (l *level) needsRebuild() bool {
	sl := l.slots()
	return sl > 4<<minShift && int(l.count)*4 < sl || l.next >= renumberAt
}

// renumberAt is the next slot at which a level is rebuilt to number its
// orders from 0 again, so its slot numbers fit an index entry (maxSlots).
// A level reaches it only after about a billion arrivals at one price
// with enough of them live that it never fell sparse; tests lower it.
var renumberAt uint64 = maxSlots - 1
