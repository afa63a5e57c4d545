package bench

import "github.com/matchlog/matchlog/engine"

// Records is an engine's record stream held in memory: an [engine.Sink]
// that keeps every record, and a source that replays them into another
// sink. Restore benchmarks replay it into an [engine.Restorer] so that only
// the restore is timed, not an encoder or a decoder.
type Records struct {
	Header   engine.Header
	Sources  [][2]uint64
	Marks    []MarkRecord
	Resting  []RestingRecord
	Triggers []TriggerRecord
	End      EndRecord
}

// MarkRecord is one instrument record.
type MarkRecord struct {
	Instrument                                     uint32
	Tick, Lot, MinPrice, MaxPrice, LastTrade, Mark int64
}

// RestingRecord is one resting-order record.
type RestingRecord struct {
	OrderID, Account uint64
	Price, Qty       int64
	Seq              uint64
	Instrument       uint32
	Side             engine.Side
	STP              engine.STP
	Post             bool
}

// TriggerRecord is one armed-trigger record.
type TriggerRecord struct {
	OrderID, Account uint64
	Stop, Price, Qty int64
	Seq              uint64
	Instrument       uint32
	Side             engine.Side
	Type             engine.OrderType
	TIF              engine.TimeInForce
	Ref              engine.TriggerRef
	STP              engine.STP
	Post             bool
}

// EndRecord is the end record.
type EndRecord struct {
	Sources, Instruments, Orders, Triggers, StateHash uint64
}

var _ engine.Sink = (*Records)(nil)

// OnHeader implements [engine.Sink]; it sizes the record slices.
func (r *Records) OnHeader(h engine.Header) error {
	*r = Records{Header: h,
		Sources:  make([][2]uint64, 0, h.Sources),
		Marks:    make([]MarkRecord, 0, h.Instruments),
		Resting:  make([]RestingRecord, 0, h.Orders),
		Triggers: make([]TriggerRecord, 0, h.Triggers)}
	return nil
}

// OnSourceHighWater implements [engine.Sink].
func (r *Records) OnSourceHighWater(source, seq uint64) error {
	r.Sources = append(r.Sources, [2]uint64{source, seq})
	return nil
}

// OnMark implements [engine.Sink].
func (r *Records) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	r.Marks = append(r.Marks, MarkRecord{instrument, tick, lot, minPrice, maxPrice, lastTrade, mark})
	return nil
}

// OnResting implements [engine.Sink].
func (r *Records) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	r.Resting = append(r.Resting, RestingRecord{OrderID: orderID, Account: account, Price: price, Qty: qty,
		Seq: seq, Instrument: instrument, Side: side, STP: stp, Post: post})
	return nil
}

// OnArmedTrigger implements [engine.Sink].
func (r *Records) OnArmedTrigger(instrument uint32, side engine.Side, orderID, account uint64, typ engine.OrderType,
	tif engine.TimeInForce, ref engine.TriggerRef, stop, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	r.Triggers = append(r.Triggers, TriggerRecord{OrderID: orderID, Account: account, Stop: stop, Price: price,
		Qty: qty, Seq: seq, Instrument: instrument, Side: side, Type: typ, TIF: tif, Ref: ref, STP: stp, Post: post})
	return nil
}

// OnEnd implements [engine.Sink].
func (r *Records) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	r.End = EndRecord{sources, instruments, orders, triggers, stateHash}
	return nil
}

// Replay streams the records into s, stopping at the first error.
func (r *Records) Replay(s engine.Sink) error {
	if err := s.OnHeader(r.Header); err != nil {
		return err
	}
	for _, x := range r.Sources {
		if err := s.OnSourceHighWater(x[0], x[1]); err != nil {
			return err
		}
	}
	for i := range r.Marks {
		m := &r.Marks[i]
		if err := s.OnMark(m.Instrument, m.Tick, m.Lot, m.MinPrice, m.MaxPrice, m.LastTrade, m.Mark); err != nil {
			return err
		}
	}
	for i := range r.Resting {
		o := &r.Resting[i]
		if err := s.OnResting(o.Instrument, o.Side, o.OrderID, o.Account, o.Price, o.Qty, o.Seq, o.STP, o.Post); err != nil {
			return err
		}
	}
	for i := range r.Triggers {
		t := &r.Triggers[i]
		if err := s.OnArmedTrigger(t.Instrument, t.Side, t.OrderID, t.Account, t.Type, t.TIF, t.Ref,
			t.Stop, t.Price, t.Qty, t.Seq, t.STP, t.Post); err != nil {
			return err
		}
	}
	e := &r.End
	return s.OnEnd(e.Sources, e.Instruments, e.Orders, e.Triggers, e.StateHash)
}

// Restore rebuilds a new engine from the records.
func (r *Records) Restore() (*engine.Engine, error) {
	e := engine.New()
	rs := e.Restorer()
	if err := r.Replay(rs); err != nil {
		return nil, err
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return e, nil
}
