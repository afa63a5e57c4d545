// Interpretations of the specification (engine/doc.go, types.go, record.go).
//
// Where the specification leaves a choice open, the model decides as
// follows; the engine agrees (TestDifferential, TestEngineScenarios), and
// each point is covered by the random stream or a scenario test:
//
//  1. Idempotence: a Source without a high-water mark accepts any Seq,
//     including 0; afterwards its mark is that Seq. Source 0 is an ordinary
//     source. Ignored commands return no events; an unknown command kind
//     still moves the mark (and is rejected bad_command).
//  2. Accepted and Rejected carry the command's Instrument. Their OrderID is
//     the command's OrderID for NewOrder, Cancel and Modify, and 0 for every
//     other kind (define, mass cancel, mark price, unknown kinds).
//  3. Fields a command kind or order type does not use are ignored, never
//     validated and never stored: Ref and Stop of Limit/Market orders, Price
//     of Market and Stop orders. A Stop (stop-market) order's price is 0
//     everywhere: ArmedTrigger record, Cancelled events.
//  4. Self-trade prevention compares accounts by plain equality; account 0
//     is an ordinary account (only MassCancel gives Account 0 a meaning).
//  5. "Would cross" (post-only, at entry, on modify and when a trigger
//     fires) compares prices only: a buy at or above the best ask, a sell
//     at or below the best bid; an empty opposite side never crosses. The
//     accounts of the resting orders do not matter.
//  6. A price level is "touched" by every change of an order at it: an
//     order resting there, leaving it (filled, cancelled, modified away) or
//     changing quantity (fill, decrement, modify in place). Arming, firing
//     or cancelling a trigger touches no level. Depth events follow the
//     order of first touch and carry the level's final total computed by
//     summing its orders; they come after every other effect, just before
//     Release.
//  7. Arrival sequences are taken by every accepted NewOrder (also market,
//     IOC, FOK and stop orders, at arming), by a Modify that loses priority,
//     and by each fired trigger. A Modify in place takes none.
//  8. Modify: "lower quantity" and "no change" compare with the order's
//     current remaining quantity. An order that loses priority is matched
//     as a GTC limit taker with its own account, STP mode and post-only
//     flag; if STP stops it, its remainder is cancelled self_trade and the
//     order is gone. Replaced carries the new price and the full new
//     quantity, before any trade.
//  9. Decrement emits the taker's Cancelled{self_trade} even when the
//     taker's remaining quantity drops to 0. Decrement does not count as STP
//     stopping the taker: a remainder after it rests (GTC) or is cancelled
//     ioc (IOC, market).
//  10. FOK: the dry run skips cancel_oldest self-trade makers without
//     counting their quantity; it fails on meeting a cancel_newest,
//     cancel_both or decrement self-trade maker while quantity remains. A
//     failed FOK gives Cancelled{Qty: full quantity, Remaining: 0, Price:
//     limit price or 0, Reason: fok}. Fired FOK stops do the same dry run.
//  11. Triggers: the loop runs only after an accepted NewOrder, Modify or
//     MarkPrice, on the command's instrument, and re-reads the reference
//     prices before each firing. A newly armed stop whose condition already
//     holds fires in the same command. TriggerFired.Price is the current
//     value of the order's reference. A fired Stop is a market order, a
//     fired StopLimit a limit order at its Price; a post-only fired order
//     that would cross is Cancelled{post_only, Qty: its quantity}.
//  12. Trigger-book order (records and mass cancel), per instrument: buy
//     triggers by (ref, stop ascending, seq), then sell triggers by (ref,
//     stop descending, seq); ref ascending means last before mark.
//  13. Mass cancel: instruments ascending; for each, matching bids then
//     asks in priority order, then matching armed orders in trigger-book
//     order, all Cancelled{mass_cancel}. Events about an order carry the
//     order's instrument; Accepted and Release carry the command's
//     Instrument (0 for all). A mass cancel that finds nothing is still
//     accepted.
//  14. MarkPrice checks price ≤ 0 and tick only, not the band. A trade sets
//     the last trade price, never the mark.
//  15. DefineInstrument: MaxPrice == MinPrice is a valid (one-price) band;
//     a band of exactly 2^32-1 ticks is valid, one more tick is not.
//  16. Quantities: Qty ≤ 0, above [engine.MaxQty] or off lot is
//     bad_quantity, for new orders and modifies alike (added to doc.go
//     after level totals were found to overflow int64 with huge orders).

package enginetest

import (
	"sort"

	"github.com/matchlog/matchlog/engine"
)

// order is one live order: resting (typ Limit) or armed (typ Stop or
// StopLimit). price is the limit price, 0 for stop-market orders.
type order struct {
	id      uint64
	account uint64
	side    engine.Side
	typ     engine.OrderType
	tif     engine.TimeInForce
	ref     engine.TriggerRef
	price   int64
	stop    int64
	qty     int64 // remaining
	seq     uint64
	stp     engine.STP
	post    bool
}

// instrument is one instrument and its book.
type instrument struct {
	id                 uint32
	tick, lot          int64
	minPrice, maxPrice int64
	last, mark         int64
	bids               []order // best first: price descending, then seq ascending
	asks               []order // best first: price ascending, then seq ascending
	triggers           []order // armed orders, in no particular order
}

// levelKey names one price level.
type levelKey struct {
	inst  uint32
	side  engine.Side
	price int64
}

// Model is a naive, obviously-correct implementation of the engine's
// specification, used as the reference in differential tests. It is slow
// on purpose: sorted slices, linear scans, depth computed by summing.
type Model struct {
	sources map[uint64]uint64      // source -> high-water mark
	insts   map[uint32]*instrument // defined instruments
	live    map[uint64]uint32      // live (resting or armed) order id -> instrument
	nextSeq uint64

	cmd     *engine.Command // the command being applied
	events  []engine.Event
	touched []levelKey
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{
		sources: map[uint64]uint64{},
		insts:   map[uint32]*instrument{},
		live:    map[uint64]uint32{},
		nextSeq: 1,
	}
}

// Orders returns the number of resting orders and of armed triggers.
func (m *Model) Orders() (resting, armed int) {
	for _, in := range m.insts {
		resting += len(in.bids) + len(in.asks)
		armed += len(in.triggers)
	}
	return resting, armed
}

// Depth appends up to n levels of one side of an instrument's book to dst,
// best first, each summed from its orders.
func (m *Model) Depth(inst uint32, side engine.Side, n int, dst []engine.Level) []engine.Level {
	in := m.insts[inst]
	if in == nil || (side != engine.Buy && side != engine.Sell) {
		return dst
	}
	start := len(dst)
	for _, o := range *in.side(side) {
		if k := len(dst) - 1; k >= start && dst[k].Price == o.price {
			dst[k].Qty += o.qty
			dst[k].Count++
			continue
		}
		if len(dst)-start == n {
			break
		}
		dst = append(dst, engine.Level{Price: o.price, Qty: o.qty, Count: 1})
	}
	return dst
}

// Instruments returns the ids of the defined instruments, ascending.
func (m *Model) Instruments() []uint32 { return m.instIDs() }

// Apply processes one command and returns its events, valid until the next
// call.
func (m *Model) Apply(c *engine.Command) []engine.Event {
	m.events = m.events[:0]
	m.touched = m.touched[:0]
	m.cmd = c

	// 1. Idempotence.
	if hw, ok := m.sources[c.Source]; ok && c.Seq <= hw {
		return m.events
	}
	m.sources[c.Source] = c.Seq

	// 2. Validation, 3. effects.
	switch c.Kind {
	case engine.CmdDefineInstrument:
		m.define(c)
	case engine.CmdNewOrder:
		m.newOrder(c)
	case engine.CmdCancel:
		m.cancel(c)
	case engine.CmdModify:
		m.modify(c)
	case engine.CmdMassCancel:
		m.massCancel(c)
	case engine.CmdMarkPrice:
		m.markPrice(c)
	default:
		m.reject(0, engine.RejBadCommand)
		return m.events
	}
	return m.events
}

// ---- event helpers ----

func (m *Model) emit(e engine.Event) {
	e.Source = m.cmd.Source
	e.Seq = m.cmd.Seq
	m.events = append(m.events, e)
}

func (m *Model) reject(orderID uint64, r engine.Reason) {
	m.emit(engine.Event{Kind: engine.EvRejected, Instrument: m.cmd.Instrument, OrderID: orderID, Reason: r})
	m.emit(engine.Event{Kind: engine.EvRelease, Instrument: m.cmd.Instrument})
}

func (m *Model) accept(orderID uint64) {
	m.emit(engine.Event{Kind: engine.EvAccepted, Instrument: m.cmd.Instrument, OrderID: orderID})
}

// finish emits the depth events of every touched level, then Release.
func (m *Model) finish() {
	for _, k := range m.touched {
		in := m.insts[k.inst]
		book := in.bids
		if k.side == engine.Sell {
			book = in.asks
		}
		var qty, count int64
		for _, o := range book {
			if o.price == k.price {
				qty += o.qty
				count++
			}
		}
		m.emit(engine.Event{Kind: engine.EvDepth, Instrument: k.inst, Side: k.side, Price: k.price, Qty: qty, Count: count})
	}
	m.emit(engine.Event{Kind: engine.EvRelease, Instrument: m.cmd.Instrument})
}

func (m *Model) touch(inst uint32, side engine.Side, price int64) {
	k := levelKey{inst, side, price}
	for _, t := range m.touched {
		if t == k {
			return
		}
	}
	m.touched = append(m.touched, k)
}

func (m *Model) cancelled(inst uint32, o *order, qty, remaining int64, r engine.Reason) {
	m.emit(engine.Event{Kind: engine.EvCancelled, Instrument: inst, OrderID: o.id, Side: o.side,
		Price: o.price, Qty: qty, Remaining: remaining, Reason: r})
}

// ---- book helpers ----

func (in *instrument) side(s engine.Side) *[]order {
	if s == engine.Buy {
		return &in.bids
	}
	return &in.asks
}

func opposite(s engine.Side) engine.Side {
	if s == engine.Buy {
		return engine.Sell
	}
	return engine.Buy
}

// better reports whether a comes before b in the priority order of side s.
func better(s engine.Side, a, b *order) bool {
	if a.price != b.price {
		if s == engine.Buy {
			return a.price > b.price
		}
		return a.price < b.price
	}
	return a.seq < b.seq
}

// rest inserts o into its side of the book at its priority position.
func (m *Model) rest(in *instrument, o order) {
	book := in.side(o.side)
	i := 0
	for i < len(*book) && !better(o.side, &o, &(*book)[i]) {
		i++
	}
	*book = append(*book, order{})
	copy((*book)[i+1:], (*book)[i:])
	(*book)[i] = o
	m.live[o.id] = in.id
	m.touch(in.id, o.side, o.price)
}

// removeAt removes the i-th order of a side and forgets its id.
func (m *Model) removeAt(in *instrument, s engine.Side, i int) {
	book := in.side(s)
	o := (*book)[i]
	*book = append((*book)[:i], (*book)[i+1:]...)
	delete(m.live, o.id)
	m.touch(in.id, s, o.price)
}

// find returns where a live order of instrument in is: side and index in the
// book, or armed index in triggers (side 0).
func (in *instrument) find(id uint64) (s engine.Side, i int, armed bool, ok bool) {
	for i := range in.bids {
		if in.bids[i].id == id {
			return engine.Buy, i, false, true
		}
	}
	for i := range in.asks {
		if in.asks[i].id == id {
			return engine.Sell, i, false, true
		}
	}
	for i := range in.triggers {
		if in.triggers[i].id == id {
			return 0, i, true, true
		}
	}
	return 0, 0, false, false
}

// crosses reports whether a limit order of side s at price would cross the
// best opposite price.
func (in *instrument) crosses(s engine.Side, price int64) bool {
	opp := *in.side(opposite(s))
	if len(opp) == 0 {
		return false
	}
	if s == engine.Buy {
		return price >= opp[0].price
	}
	return price <= opp[0].price
}

// reaches reports whether a taker of side s with limit price meets a maker at
// makerPrice (market orders always do).
func reaches(s engine.Side, market bool, limit, makerPrice int64) bool {
	if market {
		return true
	}
	if s == engine.Buy {
		return makerPrice <= limit
	}
	return makerPrice >= limit
}

func (in *instrument) validPrice(p int64) engine.Reason {
	if p <= 0 || p%in.tick != 0 {
		return engine.RejBadPrice
	}
	if p < in.minPrice || p > in.maxPrice {
		return engine.RejPriceOutOfBand
	}
	return engine.ReasonNone
}

// ---- commands ----

func (m *Model) define(c *engine.Command) {
	switch {
	case c.Instrument == 0:
		m.reject(0, engine.RejBadInstrument)
		return
	case m.insts[c.Instrument] != nil:
		m.reject(0, engine.RejDuplicateInstrument)
		return
	case c.Tick <= 0 || c.Lot <= 0 || c.MinPrice <= 0 || c.MaxPrice < c.MinPrice ||
		c.MinPrice%c.Tick != 0 || c.MaxPrice%c.Tick != 0 || (c.MaxPrice-c.MinPrice)/c.Tick > 1<<32-1:
		m.reject(0, engine.RejBadInstrument)
		return
	}
	m.insts[c.Instrument] = &instrument{id: c.Instrument, tick: c.Tick, lot: c.Lot, minPrice: c.MinPrice, maxPrice: c.MaxPrice}
	m.accept(0)
	m.finish()
}

func (m *Model) newOrder(c *engine.Command) {
	in := m.insts[c.Instrument]
	if in == nil {
		m.reject(c.OrderID, engine.RejUnknownInstrument)
		return
	}
	if c.Side != engine.Buy && c.Side != engine.Sell {
		m.reject(c.OrderID, engine.RejBadSide)
		return
	}
	isStop := c.Type == engine.Stop || c.Type == engine.StopLimit
	hasPrice := c.Type == engine.Limit || c.Type == engine.StopLimit
	typeOK := c.Type >= engine.Limit && c.Type <= engine.StopLimit
	tifOK := c.TIF >= engine.GTC && c.TIF <= engine.FOK
	refOK := !isStop || c.Ref == engine.RefLastTrade || c.Ref == engine.RefMark
	if !typeOK || !tifOK || !refOK ||
		((c.Type == engine.Market || c.Type == engine.Stop) && c.TIF == engine.GTC) ||
		(c.Post && (c.Type == engine.Market || c.Type == engine.Stop || c.TIF != engine.GTC)) {
		m.reject(c.OrderID, engine.RejBadType)
		return
	}
	if c.STP > engine.STPDecrement {
		m.reject(c.OrderID, engine.RejBadSTP)
		return
	}
	if c.Qty <= 0 || c.Qty > engine.MaxQty || c.Qty%in.lot != 0 {
		m.reject(c.OrderID, engine.RejBadQuantity)
		return
	}
	if hasPrice {
		if r := in.validPrice(c.Price); r != engine.ReasonNone {
			m.reject(c.OrderID, r)
			return
		}
	}
	if isStop {
		if r := in.validPrice(c.Stop); r != engine.ReasonNone {
			m.reject(c.OrderID, r)
			return
		}
	}
	if _, live := m.live[c.OrderID]; c.OrderID == 0 || live {
		m.reject(c.OrderID, engine.RejDuplicateOrderID)
		return
	}
	if c.Type == engine.Limit && c.Post && in.crosses(c.Side, c.Price) {
		m.reject(c.OrderID, engine.RejPostOnlyWouldCross)
		return
	}

	m.accept(c.OrderID)
	o := order{id: c.OrderID, account: c.Account, side: c.Side, typ: c.Type, tif: c.TIF,
		qty: c.Qty, seq: m.nextSeq, stp: c.STP, post: c.Post}
	m.nextSeq++
	if hasPrice {
		o.price = c.Price
	}
	if isStop {
		o.ref = c.Ref
		o.stop = c.Stop
		in.triggers = append(in.triggers, o)
		m.live[o.id] = in.id
	} else {
		m.execute(in, o, c.Type == engine.Market)
	}
	m.runTriggers(in)
	m.finish()
}

func (m *Model) cancel(c *engine.Command) {
	in := m.insts[c.Instrument]
	if in == nil {
		m.reject(c.OrderID, engine.RejUnknownInstrument)
		return
	}
	s, i, armed, ok := in.find(c.OrderID)
	if !ok {
		m.reject(c.OrderID, engine.RejUnknownOrder)
		return
	}
	m.accept(c.OrderID)
	if armed {
		o := in.triggers[i]
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlRequested)
		in.triggers = append(in.triggers[:i], in.triggers[i+1:]...)
		delete(m.live, o.id)
	} else {
		o := (*in.side(s))[i]
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlRequested)
		m.removeAt(in, s, i)
	}
	m.finish()
}

func (m *Model) modify(c *engine.Command) {
	in := m.insts[c.Instrument]
	if in == nil {
		m.reject(c.OrderID, engine.RejUnknownInstrument)
		return
	}
	s, i, armed, ok := in.find(c.OrderID)
	if !ok {
		m.reject(c.OrderID, engine.RejUnknownOrder)
		return
	}
	if armed {
		m.reject(c.OrderID, engine.RejNotModifiable)
		return
	}
	if c.Qty <= 0 || c.Qty > engine.MaxQty || c.Qty%in.lot != 0 {
		m.reject(c.OrderID, engine.RejBadQuantity)
		return
	}
	if r := in.validPrice(c.Price); r != engine.ReasonNone {
		m.reject(c.OrderID, r)
		return
	}
	o := (*in.side(s))[i]
	if c.Price == o.price && c.Qty == o.qty {
		m.reject(c.OrderID, engine.RejNoChange)
		return
	}
	if o.post && in.crosses(o.side, c.Price) {
		m.reject(c.OrderID, engine.RejPostOnlyWouldCross)
		return
	}

	m.accept(c.OrderID)
	m.emit(engine.Event{Kind: engine.EvReplaced, Instrument: in.id, OrderID: o.id, Side: o.side, Price: c.Price, Qty: c.Qty})
	if c.Price == o.price && c.Qty < o.qty {
		(*in.side(s))[i].qty = c.Qty
		m.touch(in.id, s, o.price)
	} else {
		m.removeAt(in, s, i)
		o.price = c.Price
		o.qty = c.Qty
		o.tif = engine.GTC
		o.seq = m.nextSeq
		m.nextSeq++
		m.execute(in, o, false)
	}
	m.runTriggers(in)
	m.finish()
}

func (m *Model) massCancel(c *engine.Command) {
	var ids []uint32
	if c.Instrument == 0 {
		for id := range m.insts {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	} else {
		if m.insts[c.Instrument] == nil {
			m.reject(0, engine.RejUnknownInstrument)
			return
		}
		ids = []uint32{c.Instrument}
	}
	m.accept(0)
	match := func(o *order) bool { return c.Account == 0 || o.account == c.Account }
	for _, id := range ids {
		in := m.insts[id]
		for _, s := range []engine.Side{engine.Buy, engine.Sell} {
			for i := 0; i < len(*in.side(s)); {
				o := (*in.side(s))[i]
				if !match(&o) {
					i++
					continue
				}
				m.cancelled(in.id, &o, o.qty, 0, engine.CxlMassCancel)
				m.removeAt(in, s, i)
			}
		}
		for _, o := range in.triggerBook() {
			if !match(&o) {
				continue
			}
			m.cancelled(in.id, &o, o.qty, 0, engine.CxlMassCancel)
			for i := range in.triggers {
				if in.triggers[i].id == o.id {
					in.triggers = append(in.triggers[:i], in.triggers[i+1:]...)
					break
				}
			}
			delete(m.live, o.id)
		}
	}
	m.finish()
}

func (m *Model) markPrice(c *engine.Command) {
	in := m.insts[c.Instrument]
	if in == nil {
		m.reject(0, engine.RejUnknownInstrument)
		return
	}
	if c.Price <= 0 || c.Price%in.tick != 0 {
		m.reject(0, engine.RejBadPrice)
		return
	}
	m.accept(0)
	in.mark = c.Price
	m.runTriggers(in)
	m.finish()
}

// ---- matching ----

// execute processes o as a taker: market (no limit price) or limit at
// o.price, with its TIF, STP mode and post-only flag; a GTC remainder rests.
func (m *Model) execute(in *instrument, o order, market bool) {
	// New post-only orders and modifies were validated not to cross; only a
	// fired post-only stop-limit can get here crossing.
	if o.post && in.crosses(o.side, o.price) {
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlPostOnly)
		return
	}
	if o.tif == engine.FOK && !m.dryRun(in, &o, market) {
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlFOK)
		return
	}
	stopped := m.match(in, &o, market)
	if o.qty == 0 {
		return
	}
	switch {
	case stopped:
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlSelfTrade)
	case market || o.tif != engine.GTC:
		m.cancelled(in.id, &o, o.qty, 0, engine.CxlIOC)
	default:
		o.typ = engine.Limit
		m.rest(in, o)
	}
}

// dryRun reports whether a FOK taker would fill completely.
func (m *Model) dryRun(in *instrument, t *order, market bool) bool {
	r := t.qty
	for _, mk := range *in.side(opposite(t.side)) {
		if r == 0 || !reaches(t.side, market, t.price, mk.price) {
			break
		}
		if t.stp != engine.STPNone && mk.account == t.account {
			if t.stp == engine.STPCancelOldest {
				continue
			}
			return false // cancel_newest, cancel_both stop the run; decrement ends it unfilled
		}
		r -= min(r, mk.qty)
	}
	return r == 0
}

// match runs taker t against the opposite side. It reports whether STP
// stopped the taker.
func (m *Model) match(in *instrument, t *order, market bool) (stopped bool) {
	ms := opposite(t.side)
	for t.qty > 0 && len(*in.side(ms)) > 0 {
		mk := &(*in.side(ms))[0]
		if !reaches(t.side, market, t.price, mk.price) {
			break
		}
		if t.stp != engine.STPNone && mk.account == t.account {
			switch t.stp {
			case engine.STPCancelNewest:
				return true
			case engine.STPCancelOldest:
				m.cancelled(in.id, mk, mk.qty, 0, engine.CxlSelfTrade)
				m.removeAt(in, ms, 0)
				continue
			case engine.STPCancelBoth:
				m.cancelled(in.id, mk, mk.qty, 0, engine.CxlSelfTrade)
				m.removeAt(in, ms, 0)
				return true
			case engine.STPDecrement:
				q := min(t.qty, mk.qty)
				mk.qty -= q
				m.cancelled(in.id, mk, q, mk.qty, engine.CxlSelfTrade)
				m.touch(in.id, ms, mk.price)
				if mk.qty == 0 {
					m.removeAt(in, ms, 0)
				}
				t.qty -= q
				m.cancelled(in.id, t, q, t.qty, engine.CxlSelfTrade)
				continue
			}
		}
		q := min(t.qty, mk.qty)
		mk.qty -= q
		t.qty -= q
		in.last = mk.price
		m.emit(engine.Event{Kind: engine.EvTrade, Instrument: in.id, OrderID: t.id, Maker: mk.id, Side: t.side,
			Price: mk.price, Qty: q, Remaining: t.qty, MakerRemaining: mk.qty})
		m.touch(in.id, ms, mk.price)
		if mk.qty == 0 {
			m.removeAt(in, ms, 0)
		}
	}
	return false
}

// ---- triggers ----

func (o *order) refPrice(in *instrument) int64 {
	if o.ref == engine.RefMark {
		return in.mark
	}
	return in.last
}

func (o *order) satisfied(in *instrument) bool {
	ref := o.refPrice(in)
	if ref == 0 {
		return false
	}
	if o.side == engine.Buy {
		return ref >= o.stop
	}
	return ref <= o.stop
}

// runTriggers fires satisfied armed orders of in, lowest arrival sequence
// first, until none is satisfied.
func (m *Model) runTriggers(in *instrument) {
	for {
		best := -1
		for i := range in.triggers {
			if in.triggers[i].satisfied(in) && (best < 0 || in.triggers[i].seq < in.triggers[best].seq) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		o := in.triggers[best]
		in.triggers = append(in.triggers[:best], in.triggers[best+1:]...)
		delete(m.live, o.id)
		m.emit(engine.Event{Kind: engine.EvTriggerFired, Instrument: in.id, OrderID: o.id, Side: o.side, Price: o.refPrice(in)})
		o.seq = m.nextSeq
		m.nextSeq++
		m.execute(in, o, o.typ == engine.Stop)
	}
}

// triggerBook returns a copy of in's armed orders in trigger-book order.
func (in *instrument) triggerBook() []order {
	t := append([]order(nil), in.triggers...)
	sort.Slice(t, func(a, b int) bool {
		x, y := &t[a], &t[b]
		if x.side != y.side {
			return x.side == engine.Buy
		}
		if x.ref != y.ref {
			return x.ref < y.ref
		}
		if x.stop != y.stop {
			if x.side == engine.Buy {
				return x.stop < y.stop
			}
			return x.stop > y.stop
		}
		return x.seq < y.seq
	})
	return t
}

// ---- records ----

// StateHash returns the state hash: the sum computed by [engine.Hasher] over
// the model's record stream.
func (m *Model) StateHash() uint64 {
	var h engine.Hasher
	_ = m.emitRecords(&h, 0)
	return h.Sum
}

// SnapshotTo streams the model's state to s in record-stream order.
func (m *Model) SnapshotTo(s engine.Sink) error {
	return m.emitRecords(s, m.StateHash())
}

// RestingTo streams only the resting orders, in record-stream order.
func (m *Model) RestingTo(s engine.RestingSink) error {
	for _, id := range m.instIDs() {
		in := m.insts[id]
		for _, book := range [][]order{in.bids, in.asks} {
			for _, o := range book {
				if err := s.OnResting(in.id, o.side, o.id, o.account, o.price, o.qty, o.seq, o.stp, o.post); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (m *Model) instIDs() []uint32 {
	ids := make([]uint32, 0, len(m.insts))
	for id := range m.insts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids
}

func (m *Model) emitRecords(s engine.Sink, hash uint64) error {
	srcs := make([]uint64, 0, len(m.sources))
	for src := range m.sources {
		srcs = append(srcs, src)
	}
	sort.Slice(srcs, func(a, b int) bool { return srcs[a] < srcs[b] })
	ids := m.instIDs()
	resting, armed := m.Orders()
	h := engine.Header{Version: engine.RecordVersion, NextSeq: m.nextSeq, Sources: uint64(len(srcs)),
		Instruments: uint64(len(ids)), Orders: uint64(resting), Triggers: uint64(armed)}
	if err := s.OnHeader(h); err != nil {
		return err
	}
	for _, src := range srcs {
		if err := s.OnSourceHighWater(src, m.sources[src]); err != nil {
			return err
		}
	}
	for _, id := range ids {
		in := m.insts[id]
		if err := s.OnMark(in.id, in.tick, in.lot, in.minPrice, in.maxPrice, in.last, in.mark); err != nil {
			return err
		}
	}
	if err := m.RestingTo(s); err != nil {
		return err
	}
	for _, id := range ids {
		in := m.insts[id]
		for _, o := range in.triggerBook() {
			if err := s.OnArmedTrigger(in.id, o.side, o.id, o.account, o.typ, o.tif, o.ref, o.stop, o.price, o.qty, o.seq, o.stp, o.post); err != nil {
				return err
			}
		}
	}
	return s.OnEnd(h.Sources, h.Instruments, h.Orders, h.Triggers, hash)
}
