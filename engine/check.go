package engine

import (
	"fmt"
)

// Check verifies the engine's structure and returns the first violation:
// each level's chunks laid out as [level] describes (chunk sizes, the chunk
// list covering head to next, each chunk's live count equal to its live
// slots, only tombstones below head, a live order at head, no epoch newer
// than the writer's), every order of a level at the level's price and in
// strictly ascending arrival order (tombstones included), level totals
// equal to the sum of their orders, empty levels kept without chunks and
// counted (see book.emptied), each side's cached best level (if any) its
// best level, its occupancy map holding exactly its non-empty levels, the
// level map equal to
// the level tree, each side's order count equal to its orders, no crossed
// book, every order and trigger valid for its instrument and indexed
// exactly where it sits (so with the count check, index and slots match
// both ways), no armed order whose condition holds, no index entry without
// an order. It walks everything: tests call it after every command,
// and builds with the invariants tag call it inside [Engine.Apply].
func (e *Engine) Check() error {
	n := 0
	for i, b := range e.books {
		if i > 0 && e.books[i-1].id >= b.id {
			return fmt.Errorf("engine: books out of order: %d then %d", e.books[i-1].id, b.id)
		}
		if e.byID[b.id] != b {
			return fmt.Errorf("engine: instrument %d not in the id map", b.id)
		}
		for si := range 2 {
			c, err := e.checkSide(b, si)
			if err != nil {
				return err
			}
			n += c
			c, err = e.checkTriggers(b, si)
			if err != nil {
				return err
			}
			n += c
		}
		bid, ask := b.scanBest(0), b.scanBest(1)
		if bid != nil && ask != nil && bid.price >= ask.price {
			return fmt.Errorf("engine: instrument %d: crossed book: bid %d, ask %d", b.id, bid.price, ask.price)
		}
		for si, best := range [2]*level{bid, ask} {
			if c := b.bestL[si]; c != nil && c != best {
				return fmt.Errorf("engine: instrument %d %s: cached best level at %d is not the best level", b.id, Side(si+1), c.price)
			}
		}
	}
	empties := 0
	for _, b := range e.books {
		empties += b.empty[0] + b.empty[1]
	}
	if empties != e.lp.empties {
		return fmt.Errorf("engine: books keep %d empty levels, the pool counts %d", empties, e.lp.empties)
	}
	if len(e.byID) != len(e.books) {
		return fmt.Errorf("engine: %d books, %d in the id map", len(e.books), len(e.byID))
	}
	if n != e.index.Len() {
		return fmt.Errorf("engine: %d live orders, %d index entries", n, e.index.Len())
	}
	if err := e.checkArmed(); err != nil {
		return err
	}
	if b := e.lastBook; b != nil && e.byID[b.id] != b {
		return fmt.Errorf("engine: the last book looked up (instrument %d) is not the id map's", b.id)
	}
	if e.lastHW != nil && e.hwm[e.lastSrc] != e.lastHW {
		return fmt.Errorf("engine: the last high-water mark looked up (source %d) is not the source's", e.lastSrc)
	}
	return nil
}

func (e *Engine) checkSide(b *book, si int) (int, error) {
	side := Side(si + 1)
	var err error
	n, nl, empty := 0, 0, 0 // orders, levels, empty levels
	var prevPx uint32
	if err := b.lmap[si].check(); err != nil {
		return 0, fmt.Errorf("engine: instrument %d %s: %w", b.id, side, err)
	}
	if err := b.occ[si].check(); err != nil {
		return 0, fmt.Errorf("engine: instrument %d %s: %w", b.id, side, err)
	}
	b.levels[si].Ascend(func(it lvl) bool {
		l := it.l
		if it.price != l.price || b.lmap[si].get(l.price) != l {
			err = fmt.Errorf("engine: instrument %d %s level %d: tree item %d, in the map: %v", b.id, side, l.price, it.price, b.lmap[si].get(l.price) == l)
			return false
		}
		px := b.ticks(l.price)
		if b.checkPrice(l.price) != ReasonNone || (nl > 0 && ((si == 0 && px >= prevPx) || (si == 1 && px <= prevPx))) {
			err = fmt.Errorf("engine: instrument %d %s: level price %d invalid or out of order", b.id, side, l.price)
			return false
		}
		prevPx = px
		nl++
		if l.count == 0 {
			empty++
			if l.qty != 0 || l.nc != 0 || l.inl != ([inlChunks]chunk{}) || l.long != nil || l.head != 0 || l.next != 0 || l.epoch > e.lp.epoch {
				err = fmt.Errorf("engine: instrument %d %s level %d: empty level kept with qty %d, %d chunks, head %d, next %d, epoch %d",
					b.id, side, l.price, l.qty, l.nchunks(), l.head, l.next, l.epoch)
			}
			return err == nil
		}
		if !b.occ[si].has(int64(px)) {
			err = fmt.Errorf("engine: instrument %d %s level %d: not in the occupancy map", b.id, side, l.price)
			return false
		}
		c, lerr := e.checkLevel(b, si, l)
		n += c
		err = lerr
		return err == nil
	})
	if err != nil {
		return 0, err
	}
	if b.levels[si].Len() != b.lmap[si].len() {
		return 0, fmt.Errorf("engine: instrument %d %s: %d levels in the tree, %d in the map", b.id, side, b.levels[si].Len(), b.lmap[si].len())
	}
	if c := b.occ[si].count(); c != nl-empty {
		return 0, fmt.Errorf("engine: instrument %d %s: occupancy map holds %d levels, %d are not empty", b.id, side, c, nl-empty)
	}
	if empty != b.empty[si] {
		return 0, fmt.Errorf("engine: instrument %d %s: %d empty levels kept, %d counted", b.id, side, empty, b.empty[si])
	}
	if n != b.n[si] {
		return 0, fmt.Errorf("engine: instrument %d %s: order count %d, levels hold %d", b.id, side, b.n[si], n)
	}
	return n, nil
}

// checkLevel checks one level's layout, orders and totals and returns its
// number of orders.
func (e *Engine) checkLevel(b *book, si int, l *level) (int, error) {
	side := Side(si + 1)
	where := func() string { return fmt.Sprintf("engine: instrument %d %s level %d", b.id, side, l.price) }
	if l.count < 0 || l.qty <= 0 {
		return 0, fmt.Errorf("%s: bad totals (qty %d, count %d)", where(), l.qty, l.count)
	}
	if l.shift < minShift || l.shift > maxShift || (l.shift-minShift)%shiftStep != 0 || l.epoch > e.lp.epoch {
		return 0, fmt.Errorf("%s: bad chunk shift %d or epoch %d (writer's %d)", where(), l.shift, l.epoch, e.lp.epoch)
	}
	if err := checkChunkList(l); err != nil {
		return 0, fmt.Errorf("%s: %w", where(), err)
	}
	nc := l.nchunks()
	lo, hi := l.first<<l.shift, (l.first+uint64(nc))<<l.shift
	if nc == 0 || l.head < lo || l.head > l.next || l.next > hi || l.next <= hi-1<<l.shift {
		return 0, fmt.Errorf("%s: chunks cover slots [%d, %d), head %d, next %d", where(), lo, hi, l.head, l.next)
	}
	if l.next >= maxSlots {
		return 0, fmt.Errorf("%s: next slot %d past the index entries' %d", where(), l.next, maxSlots-1)
	}
	var qty int64
	var count int32
	var prevSK uint64
	px := b.ticks(l.price)
	for ci := range nc {
		c := l.chunkAt(l.first + uint64(ci))
		maxEpoch := l.epoch
		if l.long != nil {
			maxEpoch = l.long.segs[(l.first+uint64(ci)-l.long.base)/segChunks].epoch
		}
		start := (l.first + uint64(ci)) << l.shift
		// A chunk is whole, but for the last one of a chunk size that
		// starts half-size while its orders fit in half (see halfShift).
		n := int(c.w >> chunkLenBits & 0xff)
		half := ci == nc-1 && l.shift >= halfShift && l.next-start <= 1<<(l.shift-1) && n == 1<<(l.shift-1)
		if (n != 1<<l.shift && !half) || c.p == nil || c.epoch() > maxEpoch {
			return 0, fmt.Errorf("%s: chunk %d: %d slots (want %d, or %d for the last chunk while it holds at most that many), buffer %p, epoch %d (level's or segment's %d)",
				where(), l.first+uint64(ci), n, 1<<l.shift, 1<<(l.shift-1), c.p, c.epoch(), maxEpoch)
		}
		buf := c.buf()
		live := int32(0)
		for s := start; s < start+1<<l.shift && s < l.next; s++ {
			o := buf[s-start]
			if s < l.head {
				if o.id != 0 {
					return 0, fmt.Errorf("%s: slot %d below head %d holds order %d, not a tombstone", where(), s, l.head, o.id)
				}
				continue
			}
			if s > l.head && o.sk <= prevSK {
				return 0, fmt.Errorf("%s: slot %d: order %d not after the slot before (sk %#x after %#x)", where(), s, o.id, o.sk, prevSK)
			}
			prevSK = o.sk
			if o.id == 0 {
				if s == l.head {
					return 0, fmt.Errorf("%s: head %d is a tombstone", where(), s)
				}
				continue
			}
			live++
			if err := e.checkOrder(b, side, l, s, o, px); err != nil {
				return 0, err
			}
			qty += o.qty
			count++
		}
		if live != c.live() {
			return 0, fmt.Errorf("%s: chunk %d occupancy %d, %d live slots", where(), l.first+uint64(ci), c.live(), live)
		}
	}
	if qty != l.qty || count != l.count {
		return 0, fmt.Errorf("%s: totals qty %d count %d, orders sum to qty %d count %d", where(), l.qty, l.count, qty, count)
	}
	return int(count), nil
}

func (e *Engine) checkOrder(b *book, side Side, l *level, s uint64, o order, px uint32) error {
	switch {
	case o.px() != px:
		return fmt.Errorf("engine: instrument %d %s: order %d at ticks %d in the level at price %d (ticks %d)", b.id, side, o.id, o.px(), l.price, px)
	case o.qty <= 0 || o.qty%b.lot != 0 || o.seq() == 0 || o.seq() >= e.nextSeq ||
		skSide(o.sk) != side || o.sk&skArmed != 0 || int(o.acct()) >= len(e.accts):
		return fmt.Errorf("engine: instrument %d %s: invalid order %d (ticks %d, account number %d, qty %d, sk %#x)", b.id, side, o.id, o.px(), o.acct(), o.qty, o.sk)
	}
	if x, ok := e.index.get(o.id); !ok || x != restEnt(s, px, side) {
		return fmt.Errorf("engine: order %d: index entry %#x (present %v) does not match slot %d of its level", o.id, uint64(x), ok, s)
	}
	return nil
}

func (e *Engine) checkTriggers(b *book, si int) (int, error) {
	side := Side(si + 1)
	var err error
	n := 0
	b.triggers[si].Ascend(func(t trigger) bool {
		c := Command{Type: t.typ, TIF: t.tif, Ref: t.ref, Post: t.post()}
		if (t.typ != Stop && t.typ != StopLimit) || !validType(&c) || b.checkPrice(t.stop) != ReasonNone || t.qty <= 0 || t.qty%b.lot != 0 {
			err = fmt.Errorf("engine: instrument %d %s: invalid trigger %+v", b.id, side, t)
			return false
		}
		ref := b.lastTrade
		if t.ref == RefMark {
			ref = b.mark
		}
		if ref != 0 && ((side == Buy && ref >= t.stop) || (side == Sell && ref <= t.stop)) {
			err = fmt.Errorf("engine: trigger %d (%s stop %d, %s %d) should have fired", t.id, side, t.stop, t.ref, ref)
			return false
		}
		x, ok := e.index.get(t.id)
		if !ok || !x.armed() || x.pos() >= uint64(len(e.armed)) {
			err = fmt.Errorf("engine: trigger %d: index entry %#x (present %v) names no armed position (%d held)", t.id, uint64(x), ok, len(e.armed))
			return false
		}
		if l := e.armed[x.pos()]; l != (loc{sk: t.sk, px: b.ticks(t.stop), inst: b.id}) || t.sk != triggerSK(t.seq(), t.stp(), t.post(), side, t.ref) {
			err = fmt.Errorf("engine: trigger %d: armed position %d holds %+v, which does not match the tree", t.id, x.pos(), l)
			return false
		}
		n++
		return true
	})
	return n, err
}

// checkChunkList checks the form of l's chunk list: in the short form, at
// most inlChunks entries of the inline list in use and none past them; in
// the long form (only of the largest chunk size), an empty inline list and
// segments that cover exactly the level's chunks, none newer than the
// level, with nothing past the last chunk.
func checkChunkList(l *level) error {
	if l.long == nil && l.nc > inlChunks {
		return fmt.Errorf("short chunk list of %d entries (at most %d)", l.nc, inlChunks)
	}
	first := int(l.nc)
	if l.long != nil {
		first = 0
	}
	for i := first; i < inlChunks; i++ {
		if l.inl[i] != (chunk{}) {
			return fmt.Errorf("inline chunk entry %d, not in use, is not empty", i)
		}
	}
	if l.long == nil {
		return nil
	}
	ls := l.long
	if l.nc != 0 || l.shift != maxShift {
		return fmt.Errorf("long form with %d entries in its inline list, in chunks of %d slots (only the largest, %d, grow long)", l.nc, 1<<l.shift, 1<<maxShift)
	}
	if ls.n < 1 || l.first < ls.base || l.first-ls.base >= segChunks {
		return fmt.Errorf("segments from chunk %d hold %d chunks from chunk %d", ls.base, ls.n, l.first)
	}
	end := l.first - ls.base + uint64(ls.n)
	if want := (end + segChunks - 1) / segChunks; uint64(len(ls.segs)) != want {
		return fmt.Errorf("%d segments for chunks [%d, %d), want %d", len(ls.segs), l.first, l.first+uint64(ls.n), want)
	}
	for j, g := range ls.segs {
		if g == nil || g.epoch > l.epoch {
			return fmt.Errorf("segment %d missing or newer than the level (epoch %d)", j, l.epoch)
		}
	}
	last := ls.segs[len(ls.segs)-1]
	for i := (end-1)%segChunks + 1; i < segChunks; i++ {
		if last.c[i] != (chunk{}) {
			return fmt.Errorf("segment entry %d past the last chunk is not empty", i)
		}
	}
	return nil
}

// checkArmed checks the armed positions. checkTriggers checked that every
// trigger's entry names a position holding its location, which no other
// trigger's is (its key holds its sequence), so the triggers hold distinct
// positions; the free ones must be the rest, each listed once and holding
// nothing.
func (e *Engine) checkArmed() error {
	triggers := 0
	for _, b := range e.books {
		triggers += b.triggers[0].Len() + b.triggers[1].Len()
	}
	if triggers+len(e.armFree) != len(e.armed) {
		return fmt.Errorf("engine: %d armed positions: %d triggers and %d free", len(e.armed), triggers, len(e.armFree))
	}
	held := make([]bool, len(e.armed))
	for _, b := range e.books {
		for si := range 2 {
			b.triggers[si].Ascend(func(t trigger) bool {
				x, _ := e.index.get(t.id)
				held[x.pos()] = true
				return true
			})
		}
	}
	for _, p := range e.armFree {
		if p >= uint64(len(e.armed)) || held[p] || e.armed[p] != (loc{}) {
			return fmt.Errorf("engine: free armed position %d of %d is held, listed twice or not cleared", p, len(e.armed))
		}
		held[p] = true
	}
	return nil
}
