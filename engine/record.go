package engine

// RecordVersion is the version of the record stream that [Engine.SnapshotTo]
// emits and [Engine.Restorer] accepts. It changes whenever the meaning of a
// record field changes. Never reuse a value.
const RecordVersion = 1

// Header opens a record stream. Counts let a restorer size its tables up
// front and let a strict loader check the stream's end.
type Header struct {
	Version     uint32
	NextSeq     uint64 // the engine's next arrival sequence
	Sources     uint64 // number of SourceHighWater records that follow
	Instruments uint64 // number of Mark records
	Orders      uint64 // number of Resting records
	Triggers    uint64 // number of ArmedTrigger records
}

// Sink receives an engine's state as a stream of records, in this order:
//
//	OnHeader
//	OnSourceHighWater  × Header.Sources       source ascending
//	OnMark             × Header.Instruments   instrument ascending
//	OnResting          × Header.Orders        instrument ascending, bids then asks, price-time priority
//	OnArmedTrigger     × Header.Triggers      instrument ascending, then trigger-book order
//	OnEnd
//
// Every callback takes primitives only, so a sink can encode each record in
// place without the engine allocating anything per record. A non-nil error
// stops the stream and is returned by [Engine.SnapshotTo].
type Sink interface {
	OnHeader(h Header) error
	OnSourceHighWater(source, seq uint64) error
	// OnMark carries one instrument: its definition, last trade price and
	// mark price (0 when there is none yet).
	OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error
	OnResting(instrument uint32, side Side, orderID, account uint64, price, qty int64, seq uint64, stp STP, post bool) error
	OnArmedTrigger(instrument uint32, side Side, orderID, account uint64, typ OrderType, tif TimeInForce, ref TriggerRef,
		stop, price, qty int64, seq uint64, stp STP, post bool) error
	// OnEnd closes the stream with the number of records of each kind and
	// the engine's state hash.
	OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error
}

// RestingSink receives resting orders only: what a [Partition] emits.
type RestingSink interface {
	OnResting(instrument uint32, side Side, orderID, account uint64, price, qty int64, seq uint64, stp STP, post bool) error
}

// RunSink is a [RestingSink] that also takes resting-order records a run
// at a time. When a [Sink] or a [RestingSink] handed to the engine is a
// RunSink, the engine calls OnRestingRun in place of OnResting for every
// order, with runs of consecutive records in stream order: the records of
// a run's orders are exactly those OnResting would have received, one
// after the other. A sink encodes a run in one loop, without a call per
// record.
type RunSink interface {
	RestingSink
	// OnRestingRun receives the records of run's orders, in run order.
	// The orders the run refers to may be read only during the call.
	OnRestingRun(run RestingRun) error
}

// RestingRun is a run of consecutive resting-order records of one price
// level: one instrument, one side, one price, orders in time priority.
type RestingRun struct {
	Instrument uint32
	Side       Side
	Price      int64
	orders     []order // live orders only, no gaps
	accts      []uint64
}

// Len returns the number of records in the run (at least 1).
func (r *RestingRun) Len() int { return len(r.orders) }

// At returns the fields of the run's i-th record, 0 <= i < Len(); the
// instrument, side and price are the run's. Its receiver is a pointer,
// so a loop over a run's records copies no run.
func (r *RestingRun) At(i int) (orderID, account uint64, qty int64, seq uint64, stp STP, post bool) {
	o := &r.orders[i]
	return o.id, r.accts[o.acct()], o.qty, skSeq(o.sk), skSTPOf(o.sk), skPostOf(o.sk)
}
