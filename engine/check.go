package engine

import (
	"fmt"
)

// Check verifies the engine's structure and returns the first violation:
// each side tree strictly in price-time order, level totals equal to the sum
// of their orders, no empty level, no crossed book, every order and trigger
// valid for its instrument and indexed where it sits, no armed order whose
// condition holds, no index entry without an order. It walks everything: tests call it after every command,
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
		bid, okb := b.orders[0].Min()
		ask, oka := b.orders[1].Min()
		if okb && oka && bid.px() >= ask.px() {
			return fmt.Errorf("engine: instrument %d: crossed book: bid %d, ask %d", b.id, b.price(bid.px()), b.price(ask.px()))
		}
	}
	if len(e.byID) != len(e.books) {
		return fmt.Errorf("engine: %d books, %d in the id map", len(e.books), len(e.byID))
	}
	if n != e.index.Len() {
		return fmt.Errorf("engine: %d live orders, %d index entries", n, e.index.Len())
	}
	return nil
}

func (e *Engine) checkSide(b *book, si int) (int, error) {
	side := Side(si + 1)
	less := lessBid
	if si == 1 {
		less = lessAsk
	}
	var err error
	var prev order
	var cur level
	n := 0
	levels := b.levels[si]
	flush := func() {
		if cur.count == 0 || err != nil {
			return
		}
		l, ok := levels.Get(&cur)
		if !ok || l.qty != cur.qty || l.count != cur.count || b.lmap[si][cur.price] != l {
			err = fmt.Errorf("engine: instrument %d %s level %d: totals %+v (in map: %v), orders sum to %+v",
				b.id, side, cur.price, l, b.lmap[si][cur.price] == l, cur)
		}
	}
	b.orders[si].Ascend(func(o order) bool {
		switch {
		case n > 0 && !less(prev, o):
			err = fmt.Errorf("engine: instrument %d %s: order %d not after order %d", b.id, side, o.id, prev.id)
		case o.qty <= 0 || o.qty%b.lot != 0 || b.checkPrice(b.price(o.px())) != ReasonNone || o.seq() == 0 || o.seq() >= e.nextSeq ||
			skSide(o.sk) != side || o.sk&skArmed != 0 || int(o.acct()) >= len(e.accts):
			err = fmt.Errorf("engine: instrument %d %s: invalid order %d (ticks %d, account number %d, qty %d, sk %#x)", b.id, side, o.id, o.px(), o.acct(), o.qty, o.sk)
		default:
			l, ok := e.index.get(o.id)
			if !ok || l != (loc{sk: o.sk, px: o.px(), inst: b.id}) {
				err = fmt.Errorf("engine: order %d: index %+v (present %v) does not match the tree", o.id, l, ok)
			}
		}
		if err != nil {
			return false
		}
		if price := b.price(o.px()); n == 0 || price != cur.price {
			flush()
			cur = level{price: price}
		}
		cur.qty += o.qty
		cur.count++
		prev = o
		n++
		return err == nil
	})
	flush()
	if err != nil {
		return 0, err
	}
	var total int64
	levels.Ascend(func(l *level) bool {
		if l.count <= 0 || l.qty <= 0 {
			err = fmt.Errorf("engine: instrument %d %s: empty level %+v", b.id, side, l)
			return false
		}
		total += l.count
		return true
	})
	if err == nil && levels.Len() != len(b.lmap[si]) {
		err = fmt.Errorf("engine: instrument %d %s: %d levels in the tree, %d in the map", b.id, side, levels.Len(), len(b.lmap[si]))
	}
	if err == nil && total != int64(n) {
		err = fmt.Errorf("engine: instrument %d %s: levels count %d orders, tree holds %d", b.id, side, total, n)
	}
	return n, err
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
		l, ok := e.index.get(t.id)
		if !ok || l != (loc{sk: t.sk, px: b.ticks(t.stop), inst: b.id}) || t.sk != triggerSK(t.seq(), t.stp(), t.post(), side, t.ref) {
			err = fmt.Errorf("engine: trigger %d: index %+v (present %v) does not match the tree", t.id, l, ok)
			return false
		}
		n++
		return true
	})
	return n, err
}
