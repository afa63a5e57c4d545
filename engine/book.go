package engine

import (
	"github.com/google/btree"
)

// treeDegree is the B-tree degree of every tree: nodes hold up to
// 2*treeDegree-1 items, stored by value, so a walk reads contiguous memory.
const treeDegree = 64

// order is a resting order as stored in a level's slot, by value, in 32
// bytes: pa packs the price as a tick count above the instrument's band
// floor (high 32 bits) with the account as the engine's dense account
// number (low 32 bits), and sk packs the arrival sequence (high 56 bits)
// with flags (low 8 bits), so comparing sk compares arrival sequences. Heap
// per resting order is mostly chunk slots times this size. A tombstone is
// an order with id 0 whose sk is kept (see [level]).
//
// Four machine words: Go passes a struct of at most four words in
// registers and keeps it in registers inside a function (SSA).
type order struct {
	pa  uint64 // price ticks << 32 | dense account number; see pxAcct
	sk  uint64
	id  uint64
	qty int64
}

// pxAcct packs a price in ticks and a dense account number into order.pa.
func pxAcct(px, acct uint32) uint64 { return uint64(px)<<32 | uint64(acct) }

// px returns the order's price in ticks above the band floor.
func (o order) px() uint32 { return uint32(o.pa >> 32) }

// acct returns the order's dense account number, see Engine.acct.
func (o order) acct() uint32 { return uint32(o.pa) }

func (o *order) setPx(px uint32) { o.pa = pxAcct(px, o.acct()) }

// Flag bits of sk, below the arrival sequence. Side, armed and ref are kept
// there too, so an armed order's location (loc) holds them with its
// sequence in one word.
const (
	skPost   = 1 << 0
	skSTP    = 1 // shift; 3 bits
	skSell   = 1 << 4
	skArmed  = 1 << 5
	skRef    = 6 // shift; 2 bits
	skSeqPos = 8
	maxSeq   = 1<<56 - 1
	// maxRestoreSeq is the largest next sequence a restore accepts: half the
	// sequence space, so a restored engine still has 2^55 arrivals (a
	// century at ten million a second) before sequences could wrap.
	maxRestoreSeq = 1 << 55
)

func packSK(seq uint64, stp STP, post bool, side Side) uint64 {
	sk := seq<<skSeqPos | uint64(stp)<<skSTP | b2u(post)
	if side == Sell {
		sk |= skSell
	}
	return sk
}

func skSeq(sk uint64) uint64 { return sk >> skSeqPos }
func skSTPOf(sk uint64) STP  { return STP(sk>>skSTP) & 7 }
func skPostOf(sk uint64) bool {
	return sk&skPost != 0
}
func skSide(sk uint64) Side {
	if sk&skSell != 0 {
		return Sell
	}
	return Buy
}

func (o *order) seq() uint64 { return skSeq(o.sk) }
func (o *order) stp() STP    { return skSTPOf(o.sk) }
func (o *order) post() bool  { return skPostOf(o.sk) }

// ticks converts a price on tick and inside the band to its tick count.
func (b *book) ticks(price int64) uint32 { return uint32((price - b.minPrice) / b.tick) }

// price converts a tick count back to a price.
func (b *book) price(px uint32) int64 { return b.minPrice + int64(px)*b.tick }

// trigger is an armed stop order, by value. Buy triggers are ordered by
// (ref, stop ascending, seq), sell triggers by (ref, stop descending, seq), so
// the orders a reference price fires form a prefix of each ref's run.
type trigger struct {
	stop    int64
	sk      uint64
	id      uint64
	account uint64
	price   int64 // limit price (StopLimit), 0 for Stop
	qty     int64
	typ     OrderType
	tif     TimeInForce
	ref     TriggerRef
}

func (t *trigger) seq() uint64 { return skSeq(t.sk) }
func (t *trigger) stp() STP    { return skSTPOf(t.sk) }
func (t *trigger) post() bool  { return skPostOf(t.sk) }

func lessBidLevel(a, b lvl) bool { return a.price > b.price }
func lessAskLevel(a, b lvl) bool { return a.price < b.price }

func lessBuyTrigger(a, b trigger) bool {
	if a.ref != b.ref {
		return a.ref < b.ref
	}
	if a.stop != b.stop {
		return a.stop < b.stop
	}
	return a.sk < b.sk
}

func lessSellTrigger(a, b trigger) bool {
	if a.ref != b.ref {
		return a.ref < b.ref
	}
	if a.stop != b.stop {
		return a.stop > b.stop
	}
	return a.sk < b.sk
}

// freeLists recycle tree nodes across every book of an engine, so steady
// state inserts and deletes allocate nothing.
type freeLists struct {
	levels   *btree.FreeListG[lvl]
	triggers *btree.FreeListG[trigger]
}

func newFreeLists() *freeLists {
	return &freeLists{
		levels:   btree.NewFreeListG[lvl](256),
		triggers: btree.NewFreeListG[trigger](64),
	}
}

// book is one instrument: its definition, reference prices and trees. Index
// 0 of each array is the buy side, 1 the sell side.
type book struct {
	id        uint32
	tick      int64
	lot       int64
	minPrice  int64
	maxPrice  int64
	lastTrade int64
	mark      int64

	// Each side keeps its levels twice: in a tree ordered by price, best
	// first (for matching, depth, walks and cuts), and in a table by price
	// (so finding the level of an order costs one hash lookup, not a tree
	// search; see levelMap). The tree's items and the table share the levels, which
	// follow the copy-on-write rule of [level].
	levels   [2]*btree.BTreeG[lvl]
	triggers [2]*btree.BTreeG[trigger]
	lmap     [2]levelMap // the writer's; empty in frozen views
	n        [2]int      // resting orders of each side
	// empty counts the empty levels each side keeps in its tree and map
	// (see keepEmpty).
	empty [2]int
	// bestL caches each side's best non-empty level for the writer (see
	// top), or is nil when it must be looked up again; then, if hinted,
	// every level better than the tick count hint is empty. occ holds the
	// tick counts of each side's non-empty levels. They are kept by
	// restOrder (filled), lift (drained), cow (the best level copied) and
	// the restore (occ). Empty in frozen views.
	bestL  [2]*level
	hint   [2]int64
	hinted [2]bool
	occ    [2]occMap
}

func newBook(id uint32, tick, lot, minPrice, maxPrice int64, fl *freeLists) *book {
	return &book{
		id: id, tick: tick, lot: lot, minPrice: minPrice, maxPrice: maxPrice,
		levels: [2]*btree.BTreeG[lvl]{
			btree.NewWithFreeListG(treeDegree, lessBidLevel, fl.levels),
			btree.NewWithFreeListG(treeDegree, lessAskLevel, fl.levels),
		},
		triggers: [2]*btree.BTreeG[trigger]{
			btree.NewWithFreeListG(treeDegree, lessBuyTrigger, fl.triggers),
			btree.NewWithFreeListG(treeDegree, lessSellTrigger, fl.triggers),
		},
	}
}

// clone returns a copy-on-write copy of b: O(1) per tree.
func (b *book) clone() *book {
	c := *b
	c.lmap = [2]levelMap{}
	c.bestL, c.hinted, c.occ = [2]*level{}, [2]bool{}, [2]occMap{}
	for i := range 2 {
		c.levels[i] = b.levels[i].Clone()
		c.triggers[i] = b.triggers[i].Clone()
	}
	return &c
}

func sideIndex(s Side) int { return int(s) - 1 }

func opposite(s Side) Side { return 3 - s }

// crosses reports whether a taker on side s with limit price limit may trade
// with a maker at price p.
func crosses(s Side, limit, p int64) bool {
	if s == Buy {
		return p <= limit
	}
	return p >= limit
}

// wouldCross reports whether a limit order at price on side s would meet the
// best opposite order.
func (b *book) wouldCross(s Side, price int64) bool {
	best := b.best(sideIndex(opposite(s)))
	return best != nil && crosses(s, price, best.price)
}

// best returns the best non-empty level of side si, or nil.
func (b *book) best(si int) *level { return b.top(si) }

// scanBest is best without the cache: the first non-empty level of the
// tree.
func (b *book) scanBest(si int) *level {
	var best *level
	b.levels[si].Ascend(func(it lvl) bool {
		if it.l.count > 0 {
			best = it.l
			return false
		}
		return true
	})
	return best
}

// top returns the best non-empty level of side si, or nil: the writer's
// best, for matching and depth. It is cached (bestL) until the best level
// empties, then looked up again from the tick count of the best level that
// emptied (hint: every level better than it is empty) in the side's
// occupancy map, which skips the empty levels in between a word of 64
// ticks at a time; past a gap wider than the words the map reads
// (occScanWords), the tree is walked from the end of the gap, over the
// empty levels kept there (at most the budget of emptied). A side with no
// order answers nil at once, and its first order's level becomes the
// cached best. The empty levels in front of the best stay in the tree and
// the level table (within the budget of emptied), where an order resting
// at one of those prices, the likeliest for orders near the spread, reuses
// its level instead of paying an insertion in the tree; and the cache and
// the map spare the writer a walk over them.
func (b *book) top(si int) *level {
	if l := b.bestL[si]; l != nil || b.n[si] == 0 {
		return l
	}
	var best *level
	find := func(it lvl) bool {
		if it.l.count > 0 {
			best = it.l
			return false
		}
		return true
	}
	if b.hinted[si] {
		t, found := b.occ[si].next(b.hint[si], si == 1)
		switch {
		case found:
			best = b.lmap[si].get(b.minPrice + t*b.tick)
		case t >= 0:
			// No level within the words the map read: walk the tree
			// from the first price past them.
			b.levels[si].AscendGreaterOrEqual(lvl{price: b.minPrice + t*b.tick}, find)
		}
	} else {
		b.levels[si].Ascend(find)
	}
	b.bestL[si] = best
	return best
}

// filled notes that l, a level of side si at tick count px, has gained its
// first order (already counted in b.n).
func (b *book) filled(si int, px uint32, l *level) {
	b.occ[si].set(int64(px))
	switch bl := b.bestL[si]; {
	case bl != nil:
		if better(si, l.price, bl.price) {
			b.bestL[si] = l
		}
	case b.n[si] == 1:
		// The side's only order: l is the best.
		b.bestL[si] = l
	case b.hinted[si] && better(si, int64(px), b.hint[si]):
		// Every level better than the hint is empty, so l is the best.
		b.bestL[si] = l
	}
}

// drained notes that l, a level of side si at tick count px, has lost its
// last order.
func (b *book) drained(si int, px uint32, l *level) {
	b.occ[si].clear(int64(px))
	if b.bestL[si] == l {
		b.bestL[si] = nil
		b.hint[si], b.hinted[si] = int64(px), true
	}
}

// better reports whether price is better than price q on side si (or a
// tick count than another).
func better(si int, price, q int64) bool {
	if si == 0 {
		return price > q
	}
	return price < q
}

// wlevel returns the level at price on side si for writing (a copy if a
// frozen view may see it), or nil if there is none.
func (b *book) wlevel(p *levelPool, si int, price int64) *level {
	l := b.lmap[si].get(price)
	if l != nil && l.epoch != p.epoch {
		l = b.cow(p, si, l)
	}
	return l
}

// writable returns l, a level of side si, for writing.
func (b *book) writable(p *levelPool, si int, l *level) *level {
	if l.epoch != p.epoch {
		l = b.cow(p, si, l)
	}
	return l
}

func (b *book) cow(p *levelPool, si int, l *level) *level {
	c := p.copyLevel(l)
	if b.bestL[si] == l {
		b.bestL[si] = c
	}
	b.lmap[si].put(c.price, c)
	b.levels[si].ReplaceOrInsert(lvl{price: c.price, l: c})
	return c
}

// addLevel enters a new, empty level at price on side si.
func (b *book) addLevel(p *levelPool, si int, price int64) *level {
	l := p.get(price)
	b.lmap[si].put(price, l)
	b.levels[si].ReplaceOrInsert(lvl{price: price, l: l})
	return l
}

// keepEmpty is the most empty levels an engine keeps in its books; see
// emptied.
const keepEmpty = 2048

// emptied handles l, a writable level of side si that has just lost its
// last order. A book whose orders move between nearby prices (a level of
// one or two orders empties and another appears on almost every move)
// would otherwise delete a level from the price tree and insert one on
// every move; so while the engine keeps fewer than keepEmpty empty levels,
// an emptied level stays, without chunks, in its side's tree and map, and
// an order arriving at that price reuses it. Every reader skips empty
// levels; the writer finds its best level through a cache (see top), so
// the empty levels in front of the best cost it nothing. Once the budget
// is spent, an emptied level takes the place of the empty level farthest
// in front of its side's best, if there is one (the tree's first item,
// empty), so a trending book's budget follows its prices; otherwise it
// leaves the tree and the map. A fixed budget, rather than one that
// follows the book's size, lets the tree and the map reach their largest
// size once, so a steady state allocates nothing.
func (b *book) emptied(p *levelPool, si int, l *level) {
	if p.empties < keepEmpty {
		p.clear(l)
		b.empty[si]++
		p.empties++
		return
	}
	if it, ok := b.levels[si].Min(); ok && it.l.count == 0 && it.l != l {
		b.levels[si].DeleteMin()
		b.lmap[si].del(it.price)
		p.put(it.l)
		p.clear(l)
		return
	}
	b.lmap[si].del(l.price)
	b.levels[si].Delete(lvl{price: l.price})
	p.put(l)
}
