package engine

import (
	"slices"

	"github.com/matchlog/matchlog/internal/invariants"
)

// ent is an order's index entry, its value in [orderIndex]: where the
// order sits, in 8 bytes, so an index slot (id and entry) is 16.
//
//   - A resting order: its price in ticks above its book's band floor (the
//     high 32 bits, which name its level), its slot number in that level
//     (bits 2-31) and its side (bit 1, set for a sell). Bit 0 is clear.
//     The instrument is not in the entry: a command names it, and the
//     order at the entry's slot of that book's level must carry the id
//     (see Engine.live), which no order of another book can.
//   - An armed order: its position in Engine.armed (bits 1-63), which
//     holds its [loc]. Bit 0 is set.
//
// A level's slot numbers stay below maxSlots: a level whose next slot
// reaches it is rebuilt (see level.needsRebuild), which numbers its orders
// from 0 again.
type ent uint64

// maxSlots bounds a level's slot numbers, the 30 bits of an entry. A level
// holds fewer live orders than that (32 GiB of slots).
const maxSlots = 1 << 30

// restEnt is the entry of a resting order at slot s of the level at ticks
// px on side.
func restEnt(s uint64, px uint32, side Side) ent {
	e := ent(px)<<32 | ent(s)<<2
	if side == Sell {
		e |= 2
	}
	return e
}

// armedEnt is the entry of the armed order at position p of Engine.armed.
func armedEnt(p uint64) ent { return ent(p)<<1 | 1 }

func (x ent) armed() bool  { return x&1 != 0 }
func (x ent) slot() uint64 { return uint64(x) >> 2 & (maxSlots - 1) }
func (x ent) px() uint32   { return uint32(x >> 32) }
func (x ent) pos() uint64  { return uint64(x) >> 1 }
func (x ent) side() Side {
	if x&2 != 0 {
		return Sell
	}
	return Buy
}

// loc is where an armed order sits: its trigger-tree key (sequence and
// flags), its stop price in ticks, and its instrument.
type loc struct {
	sk   uint64
	px   uint32
	inst uint32
}

func (l loc) side() Side      { return skSide(l.sk) }
func (l loc) ref() TriggerRef { return TriggerRef(l.sk>>skRef) & 3 }

func triggerSK(seq uint64, stp STP, post bool, side Side, ref TriggerRef) uint64 {
	return packSK(seq, stp, post, side) | skArmed | uint64(ref)<<skRef
}

// touch is a price level changed by the current command, with its latest
// totals.
type touch struct {
	b                 *book
	side              Side
	price, qty, count int64
}

// Engine is a matching engine: many instruments, each with its own book.
// The zero value is not usable; call [New]. An Engine is not safe for
// concurrent use: one goroutine, the single writer, owns it.
type Engine struct {
	books []*book // instrument ascending
	byID  map[uint32]*book
	index orderIndex
	// armed holds each armed order's location at the position its index
	// entry names (see ent); armFree lists the positions not in use.
	armed   []loc
	armFree []uint64
	hwm     map[uint64]*uint64 // source → high-water mark; one lookup a command
	fl      *freeLists
	accts   []uint64          // dense account number → account
	acctNo  map[uint64]uint32 // account → dense account number
	nextSeq uint64
	lp      levelPool
	// The last book and high-water mark looked up, in front of byID and
	// hwm (nil: none): commands come in runs of one instrument and one
	// source, and a hit costs a compare where the map costs a hash probe.
	// Books and marks are never removed while the engine lives; installing
	// a restored state clears both.
	lastBook *book
	lastSrc  uint64
	lastHW   *uint64

	// Per-command state.
	cmd     *Command
	events  []Event
	touched []touch
	scratch []order
	rbuf    []order // a level's live orders, while it is rebuilt
	tscr    []trigger
	srcs    []srcMark
}

// New returns an empty engine.
func New() *Engine {
	return &Engine{
		byID:    make(map[uint32]*book),
		hwm:     make(map[uint64]*uint64),
		fl:      newFreeLists(),
		acctNo:  make(map[uint64]uint32),
		nextSeq: 1,
		lp:      levelPool{epoch: 1},
		events:  make([]Event, 0, 64),
	}
}

// acct returns the dense number of an account, giving it one the first
// time. Numbers are never reused: the table holds every account ever seen
// (a few bytes each) and only grows by appending, so frozen views can share
// it.
func (e *Engine) acct(account uint64) uint32 {
	if n, ok := e.acctNo[account]; ok {
		return n
	}
	n := uint32(len(e.accts))
	e.accts = append(e.accts, account)
	e.acctNo[account] = n
	return n
}

// Orders returns the number of resting orders.
func (e *Engine) Orders() int {
	n := 0
	for _, b := range e.books {
		n += b.n[0] + b.n[1]
	}
	return n
}

// book returns the book of instrument, nil if none.
func (e *Engine) book(instrument uint32) *book {
	if b := e.lastBook; b != nil && b.id == instrument {
		return b
	}
	b := e.byID[instrument]
	if b != nil {
		e.lastBook = b
	}
	return b
}

// HighWater returns the highest sequence applied from source (its
// idempotent-ingress high-water mark: a command of that source at or below
// it is ignored), and false if no command of source was applied.
func (e *Engine) HighWater(source uint64) (uint64, bool) {
	if hw := e.hwm[source]; hw != nil {
		return *hw, true
	}
	return 0, false
}

// Triggers returns the number of armed stop orders.
func (e *Engine) Triggers() int { return e.index.Len() - e.Orders() }

// Depth appends up to n levels of one side of an instrument's book to dst,
// best first, and returns it. It costs O(n) levels (and the empty levels
// kept among them, see book.emptied), never a walk of orders.
func (e *Engine) Depth(instrument uint32, side Side, n int, dst []Level) []Level {
	b := e.book(instrument)
	if b == nil || (side != Buy && side != Sell) || n <= 0 {
		return dst
	}
	add := func(it lvl) bool {
		l := it.l
		if l.count == 0 {
			return true
		}
		dst = append(dst, Level{Price: l.price, Qty: l.qty, Count: int64(l.count)})
		n--
		return n > 0
	}
	// With empty levels in front of the best (see book.top), from the best
	// level, which the tree finds by a search; otherwise from the tree's
	// first level, which needs none.
	si := sideIndex(side)
	if b.empty[si] > 0 {
		if it, ok := b.levels[si].Min(); ok && it.l.count == 0 {
			if bl := b.top(si); bl != nil {
				b.levels[si].AscendGreaterOrEqual(lvl{price: bl.price}, add)
			}
			return dst
		}
	}
	b.levels[si].Ascend(add)
	return dst
}

// Level is one price level of depth.
type Level struct {
	Price int64
	Qty   int64
	Count int64
}

// Apply processes one command and returns its events. The slice is valid
// until the next call to Apply; the engine keeps no reference to c.
func (e *Engine) Apply(c *Command) []Event {
	e.events = e.events[:0]
	hw, fresh := e.lastHW, false
	if hw == nil || e.lastSrc != c.Source {
		if hw = e.hwm[c.Source]; hw == nil {
			hw, fresh = new(uint64), true
			e.hwm[c.Source] = hw
		}
		e.lastSrc, e.lastHW = c.Source, hw
	}
	if !fresh && c.Seq <= *hw {
		return e.events
	}
	*hw = c.Seq
	e.cmd = c
	var r Reason
	switch c.Kind {
	case CmdDefineInstrument:
		r = e.defineInstrument(c)
	case CmdNewOrder:
		r = e.newOrder(c)
	case CmdCancel:
		r = e.cancel(c)
	case CmdModify:
		r = e.modify(c)
	case CmdMassCancel:
		r = e.massCancel(c)
	case CmdMarkPrice:
		r = e.markPrice(c)
	default:
		r = RejBadCommand
	}
	if r != ReasonNone {
		var id uint64
		if c.Kind == CmdNewOrder || c.Kind == CmdCancel || c.Kind == CmdModify {
			id = c.OrderID
		}
		ev := e.event(EvRejected, c.Instrument)
		ev.OrderID, ev.Reason = id, r
	}
	e.flushDepth()
	e.event(EvRelease, c.Instrument)
	e.cmd = nil
	if invariants.Enabled {
		if err := e.Check(); err != nil {
			panic(err)
		}
	}
	return e.events
}

// event appends an event of the current command and returns it for the
// caller to fill in. It writes the event in place, zeroed by stores into
// the slice itself: an Event built on the stack and copied in (or a zero
// value copied in, as a generic append of a zero element compiles) is
// written with narrow stores and read back with wide loads, a
// store-forwarding stall per event on the path of every command.
func (e *Engine) event(kind EventKind, instrument uint32) *Event {
	n := len(e.events)
	if n == cap(e.events) {
		e.events = append(e.events, Event{})
	} else {
		e.events = e.events[:n+1]
		e.events[n] = Event{}
	}
	ev := &e.events[n]
	ev.Kind, ev.Instrument, ev.Source, ev.Seq = kind, instrument, e.cmd.Source, e.cmd.Seq
	return ev
}

func (e *Engine) accept(orderID uint64) {
	ev := e.event(EvAccepted, e.cmd.Instrument)
	ev.OrderID = orderID
}

// touch notes a level's new totals as changed by the current command, for
// its Depth event.
func (e *Engine) touch(b *book, side Side, price, qty, count int64) {
	for i := range e.touched {
		t := &e.touched[i]
		if t.price == price && t.side == side && t.b == b {
			t.qty, t.count = qty, count
			return
		}
	}
	// In place, every field stored once, as in event: no touch built or
	// zeroed on the stack and copied.
	n := len(e.touched)
	if n == cap(e.touched) {
		e.touched = append(e.touched, touch{})
	} else {
		e.touched = e.touched[:n+1]
	}
	t := &e.touched[n]
	t.b, t.side, t.price, t.qty, t.count = b, side, price, qty, count
}

// rest appends o, a new resting order at price, to its level on side
// side, creating the level if needed.
func (e *Engine) restOrder(b *book, side Side, price int64, o order) {
	si := sideIndex(side)
	l := b.wlevel(&e.lp, si, price)
	switch {
	case l == nil:
		l = b.addLevel(&e.lp, si, price)
	case l.count == 0:
		b.empty[si]--
		e.lp.empties--
	case l.inlineFull():
		// The level outgrows its chunk size: larger chunks before the
		// order would take a fifth.
		e.rebuild(b, l)
	}
	s := e.lp.push(l, o)
	b.n[si]++
	if l.count == 1 {
		b.filled(si, o.px(), l)
	}
	e.index.put(o.id, restEnt(s, o.px(), side))
	e.touch(b, side, price, l.qty, int64(l.count))
	if l.needsRebuild() {
		e.rebuild(b, l)
	}
}

// unrest removes the resting order at slot s of l, a writable level of
// side side, with its index entry, and returns the order. l may be gone or
// recycled afterwards (see book.emptied).
func (e *Engine) unrest(b *book, side Side, l *level, s uint64) order {
	o := e.lift(b, side, l, s)
	e.index.del(o.id)
	return o
}

// lift is unrest without the index: the order's entry stays, stale, for
// a caller that rests the order again at once (a move, whose put then
// overwrites the entry in place) or deletes the entry itself.
func (e *Engine) lift(b *book, side Side, l *level, s uint64) order {
	si := sideIndex(side)
	o := e.lp.pop(l, s)
	b.n[si]--
	e.touch(b, side, l.price, l.qty, int64(l.count))
	switch {
	case l.count == 0:
		b.drained(si, o.px(), l)
		b.emptied(&e.lp, si, l)
	case l.needsRebuild():
		e.rebuild(b, l)
	}
	return o
}

// setQty sets the quantity of the live order at slot s of l, a writable
// level of side side.
func (e *Engine) setQty(b *book, side Side, l *level, s uint64, qty int64) {
	ws := e.lp.wslot(l, s)
	l.qty += qty - ws.qty
	ws.qty = qty
	e.touch(b, side, l.price, l.qty, int64(l.count))
}

// rebuild copies the live orders of l, a writable level, into new chunks
// sized for their number, from slot 0, and rewrites their index entries.
func (e *Engine) rebuild(b *book, l *level) {
	e.rbuf = e.rbuf[:0]
	l.walk(l.head, l.next, func(o order) bool {
		e.rbuf = append(e.rbuf, o)
		return true
	})
	shift := shiftFor(len(e.rbuf))
	limit := maxFreeBufs(l.shift)
	if shift > l.shift {
		limit = min(limit, growKeepBufs)
	}
	e.lp.releaseAll(l, limit)
	l.qty, l.count = 0, 0
	e.lp.fill(l, e.rbuf, shift, nil, 0)
	for i, o := range e.rbuf {
		e.index.put(o.id, restEnt(uint64(i), o.px(), skSide(o.sk)))
	}
}

// flushDepth emits a Depth event for every level the command touched. It
// reads each touch in place: a touch copied out whole is loaded with wide
// loads over the narrow stores touch just made, which the processor cannot
// forward.
func (e *Engine) flushDepth() {
	for i := range e.touched {
		t := &e.touched[i]
		ev := e.event(EvDepth, t.b.id)
		ev.Side, ev.Price, ev.Qty, ev.Count = t.side, t.price, t.qty, t.count
	}
	e.touched = e.touched[:0]
}

func (e *Engine) defineInstrument(c *Command) Reason {
	switch {
	case c.Instrument == 0:
		return RejBadInstrument
	case e.book(c.Instrument) != nil:
		return RejDuplicateInstrument
	case !validInstrument(c.Tick, c.Lot, c.MinPrice, c.MaxPrice):
		return RejBadInstrument
	}
	e.addBook(newBook(c.Instrument, c.Tick, c.Lot, c.MinPrice, c.MaxPrice, e.fl))
	e.accept(0)
	return ReasonNone
}

// validInstrument checks a definition. The band may span at most 2^32-1
// ticks, so a price fits the 32-bit tick count of a stored order.
func validInstrument(tick, lot, minPrice, maxPrice int64) bool {
	return tick > 0 && lot > 0 && minPrice > 0 && maxPrice >= minPrice && minPrice%tick == 0 && maxPrice%tick == 0 &&
		(maxPrice-minPrice)/tick <= 1<<32-1
}

func (e *Engine) addBook(b *book) {
	i, _ := slices.BinarySearchFunc(e.books, b.id, func(x *book, id uint32) int {
		return cmpU32(x.id, id)
	})
	e.books = slices.Insert(e.books, i, b)
	e.byID[b.id] = b
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkPrice validates a limit or stop price against the instrument.
func (b *book) checkPrice(p int64) Reason {
	if p <= 0 || p%b.tick != 0 {
		return RejBadPrice
	}
	if p < b.minPrice || p > b.maxPrice {
		return RejPriceOutOfBand
	}
	return ReasonNone
}

// MaxQty is the largest quantity of one order. It keeps every level total
// and every sum the engine forms far from int64 overflow: a level would
// need 2^23 orders of this size to overflow.
const MaxQty = 1 << 40

func (b *book) checkQty(q int64) Reason {
	if q <= 0 || q > MaxQty || (b.lot != 1 && q%b.lot != 0) { // a lot of 1 spares the division
		return RejBadQuantity
	}
	return ReasonNone
}

func (e *Engine) newOrder(c *Command) Reason {
	b := e.book(c.Instrument)
	if b == nil {
		return RejUnknownInstrument
	}
	if c.Side != Buy && c.Side != Sell {
		return RejBadSide
	}
	if !validType(c) {
		return RejBadType
	}
	if c.STP > STPDecrement {
		return RejBadSTP
	}
	if r := b.checkQty(c.Qty); r != ReasonNone {
		return r
	}
	if c.Type == Limit || c.Type == StopLimit {
		if r := b.checkPrice(c.Price); r != ReasonNone {
			return r
		}
	}
	if c.Type == Stop || c.Type == StopLimit {
		if r := b.checkPrice(c.Stop); r != ReasonNone {
			return r
		}
	}
	if _, live := e.index.get(c.OrderID); live || c.OrderID == 0 {
		return RejDuplicateOrderID
	}
	if c.Type == Limit && c.Post && b.wouldCross(c.Side, c.Price) {
		return RejPostOnlyWouldCross
	}
	e.accept(c.OrderID)
	seq := e.nextSeq
	e.nextSeq++
	switch c.Type {
	case Stop, StopLimit:
		price := c.Price
		if c.Type == Stop {
			price = 0
		}
		t := trigger{stop: c.Stop, sk: triggerSK(seq, c.STP, c.Post, c.Side, c.Ref), id: c.OrderID, account: c.Account,
			price: price, qty: c.Qty, typ: c.Type, tif: c.TIF, ref: c.Ref}
		b.triggers[sideIndex(c.Side)].ReplaceOrInsert(t)
		e.arm(c.OrderID, loc{sk: t.sk, px: b.ticks(c.Stop), inst: b.id})
	default:
		var tk taker
		tk.set(b, c.Side, c.Type == Market, c.TIF, c.Price, packSK(seq, c.STP, c.Post, c.Side), c.OrderID, e.acct(c.Account), c.Qty)
		e.take(b, &tk)
	}
	e.runTriggers(b)
	return ReasonNone
}

func validType(c *Command) bool {
	if c.Type < Limit || c.Type > StopLimit || c.TIF < GTC || c.TIF > FOK {
		return false
	}
	if (c.Type == Market || c.Type == Stop) && (c.TIF == GTC || c.Post) {
		return false
	}
	if c.Post && c.TIF != GTC {
		return false
	}
	if (c.Type == Stop || c.Type == StopLimit) && c.Ref != RefLastTrade && c.Ref != RefMark {
		return false
	}
	return true
}

// arm enters the index entry of armed order id, at l.
func (e *Engine) arm(id uint64, l loc) {
	var p uint64
	if n := len(e.armFree); n > 0 {
		p = e.armFree[n-1]
		e.armFree = e.armFree[:n-1]
		e.armed[p] = l
	} else {
		p = uint64(len(e.armed))
		e.armed = append(e.armed, l)
	}
	e.index.put(id, armedEnt(p))
}

// disarm removes the index entry of armed order id and frees its position.
func (e *Engine) disarm(id uint64) {
	if x, ok := e.index.take(id); ok && x.armed() {
		e.armed[x.pos()] = loc{}
		e.armFree = append(e.armFree, x.pos())
	}
}

// live returns the book and index entry of an order id live on the
// command's instrument and, for a resting order, its level (as read, not
// made writable). The entry does not name the instrument: a resting
// order is on b only if the slot its entry names, in b's level at its
// price and side, holds it; an armed order's location names it.
func (e *Engine) live(c *Command) (*book, ent, *level, Reason) {
	b := e.book(c.Instrument)
	if b == nil {
		return nil, 0, nil, RejUnknownInstrument
	}
	x, ok := e.index.get(c.OrderID)
	if !ok {
		return nil, 0, nil, RejUnknownOrder
	}
	if x.armed() {
		if e.armed[x.pos()].inst != c.Instrument {
			return nil, 0, nil, RejUnknownOrder
		}
		return b, x, nil, ReasonNone
	}
	lv := b.lmap[sideIndex(x.side())].get(b.price(x.px()))
	if s := x.slot(); lv == nil || s < lv.head || s >= lv.next || lv.at(s).id != c.OrderID {
		return nil, 0, nil, RejUnknownOrder
	}
	return b, x, lv, ReasonNone
}

func (e *Engine) cancel(c *Command) Reason {
	b, x, lv, r := e.live(c)
	if r != ReasonNone {
		return r
	}
	e.accept(c.OrderID)
	if x.armed() {
		l := e.armed[x.pos()]
		t, _ := b.triggers[sideIndex(l.side())].Delete(trigger{ref: l.ref(), stop: b.price(l.px), sk: l.sk})
		e.cancelTrigger(b, l.side(), &t, CxlRequested)
		return ReasonNone
	}
	side := x.side()
	lv = b.writable(&e.lp, sideIndex(side), lv)
	o := e.unrest(b, side, lv, x.slot())
	e.cancelled(b, side, &o, CxlRequested)
	return ReasonNone
}

// cancelled emits the Cancelled event of a resting order o removed whole.
func (e *Engine) cancelled(b *book, side Side, o *order, why Reason) {
	ev := e.event(EvCancelled, b.id)
	ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Reason = o.id, side, b.price(o.px()), o.qty, why
}

func (e *Engine) cancelTrigger(b *book, side Side, t *trigger, why Reason) {
	e.disarm(t.id)
	ev := e.event(EvCancelled, b.id)
	ev.OrderID, ev.Side, ev.Price, ev.Qty, ev.Reason = t.id, side, t.price, t.qty, why
}

func (e *Engine) modify(c *Command) Reason {
	b, x, lv, r := e.live(c)
	if r != ReasonNone {
		return r
	}
	if x.armed() {
		return RejNotModifiable
	}
	if r := b.checkQty(c.Qty); r != ReasonNone {
		return r
	}
	if r := b.checkPrice(c.Price); r != ReasonNone {
		return r
	}
	side := x.side()
	si := sideIndex(side)
	price := lv.price
	o := *lv.at(x.slot())
	if c.Price == price && c.Qty == o.qty {
		return RejNoChange
	}
	if o.post() && c.Price != price && b.wouldCross(side, c.Price) {
		return RejPostOnlyWouldCross
	}
	e.accept(c.OrderID)
	ev := e.event(EvReplaced, b.id)
	ev.OrderID, ev.Side, ev.Price, ev.Qty = o.id, side, c.Price, c.Qty
	lv = b.writable(&e.lp, si, lv)
	if c.Price == price && c.Qty < o.qty {
		e.setQty(b, side, lv, x.slot(), c.Qty)
		return ReasonNone
	}
	// Out of its level before it matches as a taker: it loses its place
	// and gets a new sequence.
	// The index entry stays while the order matches (nothing looks the
	// taker up by id) and is overwritten if it rests again.
	e.lift(b, side, lv, x.slot())
	seq := e.nextSeq
	e.nextSeq++
	var tk taker
	tk.set(b, side, false, GTC, c.Price, packSK(seq, o.stp(), o.post(), side), o.id, o.acct(), c.Qty)
	if !e.take(b, &tk) {
		e.index.del(o.id)
	}
	e.runTriggers(b)
	return ReasonNone
}

func (e *Engine) massCancel(c *Command) Reason {
	if c.Instrument != 0 && e.book(c.Instrument) == nil {
		return RejUnknownInstrument
	}
	e.accept(0)
	for _, b := range e.books {
		if c.Instrument == 0 || b.id == c.Instrument {
			e.massCancelBook(b, c.Account)
		}
	}
	return ReasonNone
}

func (e *Engine) massCancelBook(b *book, account uint64) {
	acct, known := e.acctNo[account]
	for si := range 2 {
		side := Side(si + 1)
		e.scratch = e.scratch[:0]
		if account == 0 || known {
			b.walkOrders(si, func(o order) bool {
				if account == 0 || o.acct() == acct {
					e.scratch = append(e.scratch, o)
				}
				return true
			})
		}
		for i := range e.scratch {
			o := &e.scratch[i]
			x, _ := e.index.get(o.id) // its slot may change as its level is rebuilt
			lv := b.wlevel(&e.lp, si, b.price(o.px()))
			e.unrest(b, side, lv, x.slot())
			e.cancelled(b, side, o, CxlMassCancel)
		}
	}
	for si := range 2 {
		e.tscr = e.tscr[:0]
		b.triggers[si].Ascend(func(t trigger) bool {
			if account == 0 || t.account == account {
				e.tscr = append(e.tscr, t)
			}
			return true
		})
		for i := range e.tscr {
			t := &e.tscr[i]
			b.triggers[si].Delete(*t)
			e.cancelTrigger(b, Side(si+1), t, CxlMassCancel)
		}
	}
}

func (e *Engine) markPrice(c *Command) Reason {
	b := e.book(c.Instrument)
	if b == nil {
		return RejUnknownInstrument
	}
	if c.Price <= 0 || c.Price%b.tick != 0 {
		return RejBadPrice
	}
	e.accept(0)
	b.mark = c.Price
	e.runTriggers(b)
	return ReasonNone
}
