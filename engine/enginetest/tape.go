package enginetest

import "github.com/matchlog/matchlog/engine"

// RecordKind names the kind of a [Record].
type RecordKind uint8

// Record kinds, in stream order.
const (
	RecHeader RecordKind = iota + 1
	RecSource
	RecMark
	RecResting
	RecTrigger
	RecEnd
)

// Record is one record of a record stream, with the fields of every kind
// (only those of its kind are meaningful).
type Record struct {
	Kind RecordKind

	Header engine.Header // RecHeader

	Source, SourceSeq uint64 // RecSource

	Instrument                     uint32 // RecMark, RecResting, RecTrigger
	Tick, Lot, MinPrice, MaxPrice  int64  // RecMark
	LastTrade, Mark                int64  // RecMark
	Side                           engine.Side
	OrderID, Account               uint64
	Type                           engine.OrderType
	TIF                            engine.TimeInForce
	Ref                            engine.TriggerRef
	Stop, Price, Qty               int64
	Seq                            uint64
	STP                            engine.STP
	Post                           bool
	Sources, Instruments           uint64 // RecEnd counts
	Orders, Triggers, EndStateHash uint64
}

// Tape is a recorded record stream that can be edited and replayed: a
// [engine.Sink] that appends, and [Tape.Replay] that plays it into another
// sink.
type Tape []Record

// OnHeader implements [engine.Sink].
func (t *Tape) OnHeader(h engine.Header) error {
	*t = append(*t, Record{Kind: RecHeader, Header: h})
	return nil
}

// OnSourceHighWater implements [engine.Sink].
func (t *Tape) OnSourceHighWater(source, seq uint64) error {
	*t = append(*t, Record{Kind: RecSource, Source: source, SourceSeq: seq})
	return nil
}

// OnMark implements [engine.Sink].
func (t *Tape) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	*t = append(*t, Record{Kind: RecMark, Instrument: instrument, Tick: tick, Lot: lot, MinPrice: minPrice, MaxPrice: maxPrice,
		LastTrade: lastTrade, Mark: mark})
	return nil
}

// OnResting implements [engine.Sink] and [engine.RestingSink].
func (t *Tape) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	*t = append(*t, Record{Kind: RecResting, Instrument: instrument, Side: side, OrderID: orderID, Account: account,
		Price: price, Qty: qty, Seq: seq, STP: stp, Post: post})
	return nil
}

// OnArmedTrigger implements [engine.Sink].
func (t *Tape) OnArmedTrigger(instrument uint32, side engine.Side, orderID, account uint64, typ engine.OrderType, tif engine.TimeInForce, ref engine.TriggerRef,
	stop, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	*t = append(*t, Record{Kind: RecTrigger, Instrument: instrument, Side: side, OrderID: orderID, Account: account,
		Type: typ, TIF: tif, Ref: ref, Stop: stop, Price: price, Qty: qty, Seq: seq, STP: stp, Post: post})
	return nil
}

// OnEnd implements [engine.Sink].
func (t *Tape) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	*t = append(*t, Record{Kind: RecEnd, Sources: sources, Instruments: instruments, Orders: orders, Triggers: triggers,
		EndStateHash: stateHash})
	return nil
}

// Play sends one record to s.
func (r *Record) Play(s engine.Sink) error {
	switch r.Kind {
	case RecHeader:
		return s.OnHeader(r.Header)
	case RecSource:
		return s.OnSourceHighWater(r.Source, r.SourceSeq)
	case RecMark:
		return s.OnMark(r.Instrument, r.Tick, r.Lot, r.MinPrice, r.MaxPrice, r.LastTrade, r.Mark)
	case RecResting:
		return s.OnResting(r.Instrument, r.Side, r.OrderID, r.Account, r.Price, r.Qty, r.Seq, r.STP, r.Post)
	case RecTrigger:
		return s.OnArmedTrigger(r.Instrument, r.Side, r.OrderID, r.Account, r.Type, r.TIF, r.Ref, r.Stop, r.Price, r.Qty, r.Seq, r.STP, r.Post)
	case RecEnd:
		return s.OnEnd(r.Sources, r.Instruments, r.Orders, r.Triggers, r.EndStateHash)
	}
	return nil
}

// Replay plays the tape into s and returns the first error a callback
// returned (it stops there, as a well-behaved producer does).
func (t Tape) Replay(s engine.Sink) error {
	for i := range t {
		if err := t[i].Play(s); err != nil {
			return err
		}
	}
	return nil
}

// Clone returns a copy of the tape that may be edited.
func (t Tape) Clone() Tape { return append(Tape(nil), t...) }
