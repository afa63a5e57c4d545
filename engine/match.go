package engine

import "math"

// taker is an order being matched: o holds its id, account, limit price in
// ticks, remaining quantity and packed sequence/flags; limit is the limit
// price (0 for market orders).
type taker struct {
	o      order
	limit  int64
	side   Side
	market bool
	tif    TimeInForce
}

// set makes t the taker of an order of b with key sk: a market order when
// market (its limit 0), else a limit order at limit. It stores every field
// in place: a taker built apart and copied in (as a function returning one
// compiles) is written with narrow stores and read back with wide loads,
// a store-forwarding stall on the path of every order.
func (t *taker) set(b *book, side Side, market bool, tif TimeInForce, limit int64, sk, id uint64, acct uint32, qty int64) {
	var px uint32
	if market {
		limit = 0
	} else {
		px = b.ticks(limit)
	}
	t.o.pa, t.o.sk, t.o.id, t.o.qty = pxAcct(px, acct), sk, id, qty
	t.limit, t.side, t.market, t.tif = limit, side, market, tif
}

// reaches reports whether the taker may trade at a maker's price.
func (t *taker) reaches(px uint32) bool {
	if t.market {
		return true
	}
	if t.side == Buy {
		return px <= t.o.px()
	}
	return px >= t.o.px()
}

// take matches a taker against the book and then cancels or rests its
// remainder. It reports whether the remainder rests.
func (e *Engine) take(b *book, t *taker) (rested bool) {
	if t.tif == FOK && !e.fillable(b, t) {
		ev := e.event(EvCancelled, b.id)
		ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Reason = t.o.id, t.side, t.limit, t.o.qty, CxlFOK
		return false
	}
	stopped := e.match(b, t)
	switch {
	case t.o.qty <= 0:
		return false
	case stopped:
		e.cancelTaker(b, t, CxlSelfTrade)
		return false
	case t.market || t.tif != GTC:
		e.cancelTaker(b, t, CxlIOC)
		return false
	}
	e.rest(b, t)
	return true
}

func (e *Engine) cancelTaker(b *book, t *taker, why Reason) {
	ev := e.event(EvCancelled, b.id)
	ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Reason = t.o.id, t.side, t.limit, t.o.qty, why
	t.o.qty = 0
}

func (e *Engine) rest(b *book, t *taker) {
	e.restOrder(b, t.side, t.limit, t.o)
}

// match trades the taker against the opposite side until it is filled, the
// book no longer crosses, or self-trade prevention stops it (reported true).
func (e *Engine) match(b *book, t *taker) (stopped bool) {
	ms := opposite(t.side)
	msi := sideIndex(ms)
	stp := t.o.stp()
	for t.o.qty > 0 {
		l := b.top(msi)
		if l == nil {
			return false
		}
		m := *l.at(l.head)
		if !t.reaches(m.px()) {
			return false
		}
		l = b.writable(&e.lp, msi, l)
		if stp != STPNone && m.acct() == t.o.acct() {
			switch stp {
			case STPCancelNewest:
				return true
			case STPCancelOldest, STPCancelBoth:
				e.unrest(b, ms, l, l.head)
				e.cancelled(b, ms, &m, CxlSelfTrade)
				if stp == STPCancelBoth {
					return true
				}
			case STPDecrement:
				q := min(t.o.qty, m.qty)
				e.reduceMaker(b, ms, l, &m, q)
				ev := e.event(EvCancelled, b.id)
				ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Remaining, ev.Reason = m.id, ms, b.price(m.px()), q, m.qty, CxlSelfTrade
				t.o.qty -= q
				ev = e.event(EvCancelled, b.id)
				ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Remaining, ev.Reason = t.o.id, t.side, t.limit, q, t.o.qty, CxlSelfTrade
			}
			continue
		}
		q := min(t.o.qty, m.qty)
		t.o.qty -= q
		e.reduceMaker(b, ms, l, &m, q)
		price := b.price(m.px())
		b.lastTrade = price
		ev := e.event(EvTrade, b.id)
		ev.OrderID, ev.Maker, ev.Side, ev.Price, ev.Qty, ev.Remaining, ev.MakerRemaining = t.o.id, m.id, t.side, price, q, t.o.qty, m.qty
	}
	return false
}

// reduceMaker takes q off the best order m of side ms (the order at the
// head of l, the side's best level, writable), removing it when it reaches
// zero.
func (e *Engine) reduceMaker(b *book, ms Side, l *level, m *order, q int64) {
	m.qty -= q
	if m.qty == 0 {
		e.unrest(b, ms, l, l.head)
	} else {
		e.setQty(b, ms, l, l.head, m.qty)
	}
}

// fillable is the fill-or-kill dry run: it walks the makers the match would
// meet, without changing anything, and reports whether the taker would fill
// completely. Without self-trade prevention the level totals answer it in
// O(levels).
func (e *Engine) fillable(b *book, t *taker) bool {
	msi := sideIndex(opposite(t.side))
	need := t.o.qty
	stp := t.o.stp()
	if stp == STPNone {
		b.levels[msi].Ascend(func(it lvl) bool {
			l := it.l
			if !t.market && !crosses(t.side, t.limit, l.price) {
				return false
			}
			need -= l.qty
			return need > 0
		})
		return need <= 0
	}
	ok := false
	b.walkOrders(msi, func(m order) bool {
		if !t.reaches(m.px()) {
			return false
		}
		if m.acct() == t.o.acct() {
			// cancel_oldest skips the maker it would cancel; every other
			// mode stops the taker or decrements it without a fill.
			return stp == STPCancelOldest
		}
		need -= m.qty
		if need <= 0 {
			ok = true
			return false
		}
		return true
	})
	return ok
}

// runTriggers fires, one at a time and lowest arrival sequence first, every
// armed order of b whose condition holds, until none does.
func (e *Engine) runTriggers(b *book) {
	for b.triggers[0].Len()+b.triggers[1].Len() > 0 {
		si, t, ok := e.nextTrigger(b)
		if !ok {
			return
		}
		b.triggers[si].Delete(t)
		e.disarm(t.id)
		side := Side(si + 1)
		ref := b.lastTrade
		if t.ref == RefMark {
			ref = b.mark
		}
		ev := e.event(EvTriggerFired, b.id)
		ev.OrderID, ev.Side, ev.Price = t.id, side, ref
		seq := e.nextSeq
		e.nextSeq++
		var tk taker
		tk.set(b, side, t.typ == Stop, t.tif, t.price, packSK(seq, t.stp(), t.post(), side), t.id, e.acct(t.account), t.qty)
		if t.post() && !tk.market && b.wouldCross(side, t.price) {
			e.cancelTaker(b, &tk, CxlPostOnly)
			continue
		}
		e.take(b, &tk)
	}
}

// nextTrigger finds the triggered order with the lowest arrival sequence.
// The orders a reference price fires are a prefix of each (side, ref) run of
// the trigger trees, so only fired orders are visited.
func (e *Engine) nextTrigger(b *book) (si int, best trigger, found bool) {
	for s := range 2 {
		for _, ref := range [2]TriggerRef{RefLastTrade, RefMark} {
			p := b.lastTrade
			if ref == RefMark {
				p = b.mark
			}
			if p == 0 {
				continue
			}
			pivot := trigger{ref: ref, stop: math.MinInt64}
			if s == 1 {
				pivot.stop = math.MaxInt64
			}
			b.triggers[s].AscendGreaterOrEqual(pivot, func(t trigger) bool {
				if t.ref != ref || (s == 0 && t.stop > p) || (s == 1 && t.stop < p) {
					return false
				}
				if !found || t.sk < best.sk {
					si, best, found = s, t, true
				}
				return true
			})
		}
	}
	return si, best, found
}
