package engine

import (
	"errors"
	"fmt"
)

// ErrRestore marks every error a [Restorer] returns.
var ErrRestore = errors.New("engine: restore")

// ErrNotEnded is returned by [Restorer.Err] while the stream has not ended.
var ErrNotEnded = fmt.Errorf("%w: record stream did not end", ErrRestore)

// Restorer is a [Sink] that rebuilds an engine from a record stream. It is
// strict: the header must come first and End last, records must come in the
// stream's order with valid values, counts must match the header and the
// End record, and the End record's hash must equal the hash of what
// arrived. The engine is built aside and installed only when End checks
// out, so a failed or unfinished restore leaves the engine empty, never
// partial; a record after End fails the stream too and empties the engine
// again. After the first error every call returns it.
//
// Orders and triggers must come in stream order (what [Engine.SnapshotTo]
// emits); anything else is refused. That order is also the fast path: the
// orders of each price's run accumulate, and at the run's end the level is
// built once, its orders laid out in its chunks in one pass, and enters the
// level tree at its right end; triggers append at the right end of their
// trees.
type Restorer struct {
	e     *Engine
	st    *Engine // being built
	hd    Header
	phase int
	err   error
	sum   uint64
	n     [4]uint64 // sources, instruments, orders, triggers received

	lastSource uint64
	// The previous order or trigger, to hold the stream to its order.
	prevInst    uint32
	prevSide    Side
	prevOrder   order
	prevTrigger trigger
	// Consecutive orders at one price of one side of one book accumulate
	// here and enter the level tree once.
	runPrice int64
	runBook  *book
	runSide  int
	runOrd   []order // the run's orders
	// The levels of the side being restored, added to its tree as their
	// runs end and to its map, made to their number, when the side ends.
	sideBook *book
	sideSide int
	sideLv   []*level
	// Index entries, inserted at the end in cache-friendly batches.
	ids      indexBatch
	arena    slotArena // the chunk buffers' arena
	lastBook *book
	// acache is a direct-mapped cache in front of the engine's account
	// map: a book has far fewer accounts than orders, and a hit costs a
	// multiply and a compare where the map costs a hash probe. Its size
	// (a power of two, 1<<(64-ashift) entries) follows the header's order
	// count, so a small restore does not clear a large cache.
	acache []acctEntry
	ashift uint
}

// The account cache holds between 1<<minAcctBits and 1<<maxAcctBits
// entries of 16 bytes (64 KiB at most, about one entry per 64 orders): a
// larger one misses the processor's second-level cache as often as it
// saves a map probe.
const (
	minAcctBits = 6
	maxAcctBits = 12
)

// acctEntry caches the dense number of an account; no is the number plus
// one, 0 for an empty entry.
type acctEntry struct {
	account uint64
	no      uint64
}

// acct returns the dense number of account in the engine being built.
func (r *Restorer) acct(account uint64) uint32 {
	c := &r.acache[(account*0x9E3779B97F4A7C15)>>r.ashift]
	if c.no != 0 && c.account == account {
		return uint32(c.no - 1)
	}
	n := r.st.acct(account)
	*c = acctEntry{account: account, no: uint64(n) + 1}
	return n
}

const (
	phaseHeader = iota
	phaseSources
	phaseMarks
	phaseOrders
	phaseTriggers
	phaseDone
)

// Restorer returns a sink that rebuilds e from a record stream. e must be
// empty (no instruments, orders or sources); otherwise the restorer fails
// at the header.
func (e *Engine) Restorer() *Restorer {
	return &Restorer{e: e}
}

// Err returns nil once the stream has ended and the engine is installed,
// the first error met, or [ErrNotEnded].
func (r *Restorer) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.phase != phaseDone {
		return ErrNotEnded
	}
	return nil
}

func (r *Restorer) fail(format string, args ...any) error {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrRestore}, args...)...)
		r.st = nil
		if r.phase == phaseDone {
			r.uninstall()
		}
	}
	return r.err
}

// uninstall empties the engine again: a record after End makes the whole
// stream invalid, and an invalid stream must leave the engine as it was
// before the restore (empty, which Restorer requires).
func (r *Restorer) uninstall() {
	empty, e := New(), r.e
	e.books, e.byID, e.index, e.hwm, e.nextSeq = empty.books, empty.byID, empty.index, empty.hwm, empty.nextSeq
	e.armed, e.armFree = empty.armed, empty.armFree
	e.accts, e.acctNo = empty.accts, empty.acctNo
	e.lp.empties = 0
	e.lastBook, e.lastHW = nil, nil
}

// advance moves to phase p, refusing to go back.
func (r *Restorer) advance(p int, what string) error {
	if r.err != nil {
		return r.err
	}
	if r.phase == phaseHeader || r.phase > p || r.phase == phaseDone {
		if r.phase == phaseHeader {
			return r.fail("%s before header", what)
		}
		return r.fail("%s out of order", what)
	}
	r.phase = p
	return nil
}

// OnHeader implements [Sink].
func (r *Restorer) OnHeader(h Header) error {
	if r.err != nil {
		return r.err
	}
	if r.phase != phaseHeader {
		return r.fail("second header")
	}
	if h.Version != RecordVersion {
		return r.fail("record version %d, want %d", h.Version, RecordVersion)
	}
	if len(r.e.books) != 0 || r.e.index.Len() != 0 || len(r.e.hwm) != 0 || r.e.nextSeq != 1 {
		return r.fail("engine is not empty")
	}
	if h.NextSeq == 0 || h.NextSeq > maxRestoreSeq {
		return r.fail("next sequence %d outside [1, 2^55]", h.NextSeq)
	}
	// The header's counts size the index batch, but only maxPrealloc
	// entries are allocated up front: a corrupt header must not make the
	// restorer allocate gigabytes before the first record. Past them the
	// batch grows as entries arrive, towards the header's count.
	const maxPrealloc = 1 << 20
	r.hd = h
	r.st = New()
	r.st.fl = r.e.fl
	r.st.nextSeq = h.NextSeq
	r.ids.reserve(sat(h.Orders, h.Triggers), maxPrealloc)
	bits := uint(minAcctBits)
	for bits < maxAcctBits && uint64(1)<<(bits+6) < h.Orders {
		bits++
	}
	r.acache, r.ashift = make([]acctEntry, 1<<bits), 64-bits
	r.sum = HashHeader(h.Version, h.NextSeq)
	r.phase = phaseSources
	return nil
}

// sat returns a+b, or the largest uint64 if that overflows.
func sat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// OnSourceHighWater implements [Sink].
func (r *Restorer) OnSourceHighWater(source, seq uint64) error {
	if err := r.advance(phaseSources, "source high-water record"); err != nil {
		return err
	}
	if r.n[0] > 0 && source <= r.lastSource {
		return r.fail("source %d after source %d", source, r.lastSource)
	}
	if r.n[0] == r.hd.Sources {
		return r.fail("more than the header's %d sources", r.hd.Sources)
	}
	r.n[0]++
	r.lastSource = source
	r.st.hwm[source] = &seq
	r.sum += HashSource(source, seq)
	return nil
}

// OnMark implements [Sink].
func (r *Restorer) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	if err := r.advance(phaseMarks, "instrument record"); err != nil {
		return err
	}
	if r.n[1] == r.hd.Instruments {
		return r.fail("more than the header's %d instruments", r.hd.Instruments)
	}
	if instrument == 0 || !validInstrument(tick, lot, minPrice, maxPrice) || lastTrade < 0 || mark < 0 {
		return r.fail("instrument %d: bad definition", instrument)
	}
	if n := len(r.st.books); n > 0 && r.st.books[n-1].id >= instrument {
		return r.fail("instrument %d after instrument %d", instrument, r.st.books[n-1].id)
	}
	r.n[1]++
	b := newBook(instrument, tick, lot, minPrice, maxPrice, r.st.fl)
	b.lastTrade, b.mark = lastTrade, mark
	r.st.books = append(r.st.books, b)
	r.st.byID[instrument] = b
	r.sum += HashMark(instrument, tick, lot, minPrice, maxPrice, lastTrade, mark)
	return nil
}

func (r *Restorer) checkOrder(what string, instrument uint32, side Side, orderID uint64, price, qty int64, seq uint64, stp STP) (*book, error) {
	b := r.lastBook
	if b == nil || b.id != instrument {
		b = r.st.byID[instrument]
		r.lastBook = b
	}
	switch {
	case b == nil:
		return nil, r.fail("%s %d: unknown instrument %d", what, orderID, instrument)
	case side != Buy && side != Sell:
		return nil, r.fail("%s %d: bad side %d", what, orderID, side)
	case orderID == 0:
		return nil, r.fail("%s: order id 0", what)
	case b.checkQty(qty) != ReasonNone:
		return nil, r.fail("%s %d: bad quantity %d", what, orderID, qty)
	case price != 0 && b.checkPrice(price) != ReasonNone, price == 0 && what == "resting order":
		return nil, r.fail("%s %d: bad price %d", what, orderID, price)
	case seq == 0 || seq >= r.hd.NextSeq || seq > maxSeq:
		return nil, r.fail("%s %d: sequence %d outside [1, %d)", what, orderID, seq, r.hd.NextSeq)
	case stp > STPDecrement:
		return nil, r.fail("%s %d: bad STP mode %d", what, orderID, stp)
	}
	return b, nil
}

// sortsBefore reports whether a comes before b in the price-time order of
// side: price (best first), then arrival sequence.
func sortsBefore(side Side, a, b order) bool {
	if a.px() == b.px() {
		return a.sk < b.sk
	}
	return (a.px() > b.px()) == (side == Buy)
}

func triggerSortsBefore(side Side, a, b trigger) bool {
	if side == Buy {
		return lessBuyTrigger(a, b)
	}
	return lessSellTrigger(a, b)
}

// OnResting implements [Sink].
func (r *Restorer) OnResting(instrument uint32, side Side, orderID, account uint64, price, qty int64, seq uint64, stp STP, post bool) error {
	if r.phase != phaseOrders || r.err != nil {
		if err := r.advance(phaseOrders, "resting order"); err != nil {
			return err
		}
	}
	if r.n[2] == r.hd.Orders {
		return r.fail("more than the header's %d resting orders", r.hd.Orders)
	}
	if rb := r.runBook; rb != nil && rb.id == instrument && r.runSide == int(side)-1 && r.runPrice == price {
		// An order that continues the run: the instrument, the side and
		// the price passed every check that depends on them at the run's
		// first order, which also gave the run its price in ticks. What
		// remains is checked here, in line (the path of nearly every
		// order; a call for it cost measurably); runError reports a
		// failure, the first in checkOrder's order.
		sk := packSK(seq, stp, post, side)
		if orderID == 0 || rb.checkQty(qty) != ReasonNone || seq == 0 || seq >= r.hd.NextSeq || seq > maxSeq ||
			stp > STPDecrement || r.prevOrder.sk >= sk || uint64(len(r.runOrd)) >= levelMax {
			return r.runError(rb, orderID, qty, seq, stp)
		}
		var an uint32
		if c := &r.acache[(account*0x9E3779B97F4A7C15)>>r.ashift]; c.no != 0 && c.account == account {
			an = uint32(c.no - 1)
		} else {
			an = r.acct(account)
		}
		o := order{pa: r.prevOrder.pa&^(1<<32-1) | uint64(an), sk: sk, id: orderID, qty: qty}
		r.prevOrder = o
		r.n[2]++
		r.runOrd = append(r.runOrd, o)
		return nil
	}
	b, err := r.checkOrder("resting order", instrument, side, orderID, price, qty, seq, stp)
	if err != nil {
		return err
	}
	si := sideIndex(side)
	o := order{pa: pxAcct(b.ticks(price), r.acct(account)), sk: packSK(seq, stp, post, side), id: orderID, qty: qty}
	if r.n[2] > 0 && !(r.prevInst < instrument || (r.prevInst == instrument && (r.prevSide < side ||
		(r.prevSide == side && sortsBefore(side, r.prevOrder, o))))) {
		return r.fail("resting order %d out of stream order", orderID)
	}
	r.prevInst, r.prevSide, r.prevOrder = instrument, side, o
	r.n[2]++
	// An order that continues the run took the path above: this one
	// starts a new run.
	r.flushRun()
	r.runBook, r.runSide, r.runPrice = b, si, price
	r.runOrd = append(r.runOrd[:0], o)
	return nil
}

// runError returns the error of an order that continues the current run
// (the same instrument, side and price as the order before it) and fails
// one of the checks OnResting makes of it: the first in checkOrder's
// order, then the run's arrival order.
func (r *Restorer) runError(b *book, orderID uint64, qty int64, seq uint64, stp STP) error {
	switch {
	case orderID == 0:
		return r.fail("resting order: order id 0")
	case b.checkQty(qty) != ReasonNone:
		return r.fail("resting order %d: bad quantity %d", orderID, qty)
	case seq == 0 || seq >= r.hd.NextSeq || seq > maxSeq:
		return r.fail("resting order %d: sequence %d outside [1, %d)", orderID, seq, r.hd.NextSeq)
	case stp > STPDecrement:
		return r.fail("resting order %d: bad STP mode %d", orderID, stp)
	case uint64(len(r.runOrd)) >= levelMax:
		return r.levelFull(orderID)
	}
	return r.fail("resting order %d out of stream order", orderID)
}

// levelMax is the most orders a restored level holds: its slots, numbered
// from 0, must fit an index entry (see ent). Tests lower it.
var levelMax uint64 = maxSlots - 1

// levelFull is the error of a resting order past the most a level holds.
func (r *Restorer) levelFull(orderID uint64) error {
	return r.fail("resting order %d: more than %d orders at one price level", orderID, levelMax)
}

// flushRun adds the current level run, a new level, to its side: orders
// arrive in stream order, so each level is one run and the level tree
// grows at its right end.
func (r *Restorer) flushRun() {
	if r.runBook == nil {
		return
	}
	b, si := r.runBook, r.runSide
	// The records' digests, from the orders as the run holds them (every
	// field of a resting-order record is there, the account by its dense
	// number): one short loop of independent multiply chains, two at a
	// time, which the processor overlaps, rather than one long chain
	// inside each record's callback.
	r.sum += hashRestingRun(b.id, Side(si+1), r.runPrice, r.runOrd, r.st.accts)
	if r.sideBook != b || r.sideSide != si {
		r.flushSide()
		r.sideBook, r.sideSide = b, si
	}
	l := r.e.lp.get(r.runPrice)
	b.levels[si].ReplaceOrInsert(lvl{price: l.price, l: l})
	r.sideLv = append(r.sideLv, l)
	// The orders still to lay out: this run's and those the header
	// announces past it (n[2] <= Orders: OnResting).
	more := uint64(len(r.runOrd)) + r.hd.Orders - r.n[2]
	r.e.lp.fill(l, r.runOrd, restoreShift(len(r.runOrd)), &r.arena, r.arena.want(more))
	r.arena.orders += len(r.runOrd)
	b.occ[si].set(int64(r.runOrd[0].px()))
	b.n[si] += len(r.runOrd)
	side := Side(si + 1)
	for i, o := range r.runOrd {
		r.ids.add(o.id, restEnt(uint64(i), o.px(), side))
	}
	r.runBook = nil
}

// flushSide gives the side whose levels were restored last its level
// table, sized for their number once (a table grown one level at a time
// would rehash as it grows).
func (r *Restorer) flushSide() {
	if r.sideBook == nil {
		return
	}
	m := &r.sideBook.lmap[r.sideSide]
	m.reserve(len(r.sideLv))
	for _, l := range r.sideLv {
		m.put(l.price, l)
	}
	clear(r.sideLv)
	r.sideLv, r.sideBook = r.sideLv[:0], nil
}

// OnArmedTrigger implements [Sink].
func (r *Restorer) OnArmedTrigger(instrument uint32, side Side, orderID, account uint64, typ OrderType, tif TimeInForce, ref TriggerRef,
	stop, price, qty int64, seq uint64, stp STP, post bool) error {
	if err := r.advance(phaseTriggers, "armed trigger"); err != nil {
		return err
	}
	r.flushRun()
	r.flushSide()
	if r.n[3] == r.hd.Triggers {
		return r.fail("more than the header's %d armed triggers", r.hd.Triggers)
	}
	b, err := r.checkOrder("armed trigger", instrument, side, orderID, price, qty, seq, stp)
	if err != nil {
		return err
	}
	c := Command{Type: typ, TIF: tif, Ref: ref, Post: post}
	if (typ != Stop && typ != StopLimit) || !validType(&c) || (typ == Stop) != (price == 0) || b.checkPrice(stop) != ReasonNone {
		return r.fail("armed trigger %d: bad type, time in force, reference, stop or price", orderID)
	}
	t := trigger{stop: stop, sk: triggerSK(seq, stp, post, side, ref), id: orderID, account: account, price: price, qty: qty, typ: typ, tif: tif, ref: ref}
	if r.n[3] > 0 && !(r.prevInst < instrument || (r.prevInst == instrument && (r.prevSide < side ||
		(r.prevSide == side && triggerSortsBefore(side, r.prevTrigger, t))))) {
		return r.fail("armed trigger %d out of stream order", orderID)
	}
	r.prevInst, r.prevSide, r.prevTrigger = instrument, side, t
	r.ids.add(orderID, armedEnt(uint64(len(r.st.armed))))
	r.st.armed = append(r.st.armed, loc{sk: t.sk, px: b.ticks(stop), inst: instrument})
	b.triggers[sideIndex(side)].ReplaceOrInsert(t)
	r.n[3]++
	r.sum += HashTrigger(instrument, side, orderID, account, typ, tif, ref, stop, price, qty, seq, stp, post)
	return nil
}

// OnEnd implements [Sink]. It checks the counts and the hash, and installs
// the rebuilt state into the engine.
func (r *Restorer) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	if err := r.advance(phaseDone, "end record"); err != nil {
		return err
	}
	r.phase = phaseTriggers // not done until every check passes
	r.flushRun()
	r.flushSide()
	got := [4]uint64{sources, instruments, orders, triggers}
	want := [4]uint64{r.hd.Sources, r.hd.Instruments, r.hd.Orders, r.hd.Triggers}
	if got != want || r.n != want {
		return r.fail("counts: header %v, end record %v, received %v (sources, instruments, orders, triggers)", want, got, r.n)
	}
	if stateHash != r.sum {
		return r.fail("state hash %#016x in end record, %#016x computed", stateHash, r.sum)
	}
	if id, ok := r.ids.build(&r.st.index); !ok {
		return r.fail("order id %d appears twice", id)
	}
	for _, b := range r.st.books {
		bid, ask := b.best(0), b.best(1)
		if bid != nil && ask != nil && bid.price >= ask.price {
			return r.fail("instrument %d: crossed book (bid %d, ask %d)", b.id, bid.price, ask.price)
		}
	}
	st := r.st
	r.st = nil
	e := r.e
	e.books, e.byID, e.index, e.hwm, e.nextSeq = st.books, st.byID, st.index, st.hwm, st.nextSeq
	e.armed, e.armFree = st.armed, st.armFree
	e.accts, e.acctNo = st.accts, st.acctNo
	e.lp.empties = 0 // a restored book keeps no empty level
	e.lastBook, e.lastHW = nil, nil
	r.phase = phaseDone
	return nil
}
