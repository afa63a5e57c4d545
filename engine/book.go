package engine

import (
	"github.com/google/btree"
)

// treeDegree is the B-tree degree of every tree: nodes hold up to
// 2*treeDegree-1 items, stored by value, so a walk reads contiguous memory.
const treeDegree = 64

// order is a resting order as stored in a side tree, by value, in 32
// bytes: pa packs the price as a tick count above the instrument's band
// floor (high 32 bits) with the account as the engine's dense account
// number (low 32 bits), and sk packs the arrival sequence (high 56 bits)
// with flags (low 8 bits), so comparing sk compares arrival sequences. Heap
// per resting order is mostly B-tree node capacity times this size, so
// every byte here counts about twice.
//
// Four machine words, not five: google/btree calls its comparator through
// a function value with two items by value, and Go passes a struct of at
// most four words in registers and keeps it in registers inside a function
// (SSA), while a five-field struct goes through memory, its second copy on
// the stack, on every comparison of every tree search.
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
// there too, so an index entry is 16 bytes.
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

// level is one price level's totals. Each side keeps its levels twice: in
// a tree ordered by price (for depth and for cutting partitions) and in a
// map by price (so a change of totals costs one hash lookup, not a tree
// search). Levels are shared by pointer between the two and with the trees
// of [Frozen] views, so they follow a copy-on-write rule of their own: a
// level whose epoch is older than the engine's (it may be seen by a clone)
// is never written; the writer replaces it with a fresh copy first.
type level struct {
	price int64
	qty   int64
	count int64
	epoch uint64
}

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

func lessBid(a, b order) bool {
	return a.px() > b.px() || (a.px() == b.px() && a.sk < b.sk)
}

func lessAsk(a, b order) bool {
	return a.px() < b.px() || (a.px() == b.px() && a.sk < b.sk)
}

func lessBidLevel(a, b *level) bool { return a.price > b.price }
func lessAskLevel(a, b *level) bool { return a.price < b.price }

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
	orders   *btree.FreeListG[order]
	levels   *btree.FreeListG[*level]
	triggers *btree.FreeListG[trigger]
}

func newFreeLists() *freeLists {
	return &freeLists{
		orders:   btree.NewFreeListG[order](1024),
		levels:   btree.NewFreeListG[*level](256),
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

	orders   [2]*btree.BTreeG[order]
	levels   [2]*btree.BTreeG[*level]
	triggers [2]*btree.BTreeG[trigger]
	lmap     [2]map[int64]*level // the writer's; nil in frozen views
}

func newBook(id uint32, tick, lot, minPrice, maxPrice int64, fl *freeLists) *book {
	return &book{
		id: id, tick: tick, lot: lot, minPrice: minPrice, maxPrice: maxPrice,
		orders: [2]*btree.BTreeG[order]{
			btree.NewWithFreeListG(treeDegree, lessBid, fl.orders),
			btree.NewWithFreeListG(treeDegree, lessAsk, fl.orders),
		},
		levels: [2]*btree.BTreeG[*level]{
			btree.NewWithFreeListG(treeDegree, lessBidLevel, fl.levels),
			btree.NewWithFreeListG(treeDegree, lessAskLevel, fl.levels),
		},
		triggers: [2]*btree.BTreeG[trigger]{
			btree.NewWithFreeListG(treeDegree, lessBuyTrigger, fl.triggers),
			btree.NewWithFreeListG(treeDegree, lessSellTrigger, fl.triggers),
		},
		lmap: [2]map[int64]*level{make(map[int64]*level), make(map[int64]*level)},
	}
}

// clone returns a copy-on-write copy of b: O(1) per tree.
func (b *book) clone() *book {
	c := *b
	c.lmap = [2]map[int64]*level{}
	for i := range 2 {
		c.orders[i] = b.orders[i].Clone()
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
	best, ok := b.orders[sideIndex(opposite(s))].Min()
	return ok && crosses(s, price, b.price(best.px()))
}

// levels recycles level structs the writer owns. Levels that a frozen view
// may see are left to the garbage collector.
type levelPool struct {
	free  []*level
	epoch uint64 // bumped by every clone
}

func (p *levelPool) get(price int64) *level {
	var l *level
	if n := len(p.free); n > 0 {
		l = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		l = new(level)
	}
	*l = level{price: price, epoch: p.epoch}
	return l
}

func (p *levelPool) put(l *level) {
	if l.epoch == p.epoch && len(p.free) < 4096 {
		p.free = append(p.free, l)
	}
}

// addLevel changes the totals of the level at price by dq and dc, creating
// or removing the level as needed, and returns the new totals.
func (b *book) addLevel(p *levelPool, si int, price, dq, dc int64) level {
	l := b.lmap[si][price]
	switch {
	case l == nil:
		l = p.get(price)
		b.lmap[si][price] = l
		b.levels[si].ReplaceOrInsert(l)
	case l.epoch != p.epoch:
		c := p.get(price)
		c.qty, c.count = l.qty, l.count
		l = c
		b.lmap[si][price] = l
		b.levels[si].ReplaceOrInsert(l)
	}
	l.qty += dq
	l.count += dc
	if l.count == 0 {
		delete(b.lmap[si], price)
		b.levels[si].Delete(l)
		p.put(l)
		return level{price: price}
	}
	return *l
}
