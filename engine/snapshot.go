package engine

import (
	"cmp"
	"slices"
)

type srcMark struct{ source, seq uint64 }

// state is what a record stream is made of: the engine's own books when a
// live engine streams itself, or cloned books in a [Frozen] view.
type state struct {
	nextSeq uint64
	sources []srcMark // source ascending
	books   []*book   // instrument ascending
	accts   []uint64  // dense account number → account (append-only, shared)
}

// orderCount is the number of resting orders and armed triggers.
func (s *state) counts() (orders, triggers uint64) {
	for _, b := range s.books {
		orders += uint64(b.n[0] + b.n[1])
		triggers += uint64(b.triggers[0].Len() + b.triggers[1].Len())
	}
	return orders, triggers
}

// emitter walks a state into a sink (none: hash only). Its methods are the
// tree callbacks, bound once, so a walk allocates nothing. Resting orders
// come a run at a time (see [RunSink]): one digest loop a run
// ([hashRestingRun]), then one call of the sink for the run when it takes
// runs, or one OnResting a record when it does not.
//
// At most one of full, sink and rs is set, and runSink only alone or beside
// sink or rs (then the same value); each is the caller's own interface
// value. The emitter never converts one interface type to another: in Go
// such a conversion is a type assertion whose per-site cache the runtime
// grows, at random, with an allocation, and a snapshot's entry points
// ([Frozen.SnapshotRunsTo], [Partition.EmitRuns]) must allocate nothing.
type emitter struct {
	accts   []uint64
	full    SnapshotRunSink // every record, resting orders by runs
	sink    Sink            // every record, resting orders one by one
	rs      RestingSink     // resting orders one by one (a Partition's)
	runSink RunSink         // resting orders by runs (a Partition's)
	run     RestingRun
	b       *book
	side    Side
	sum     uint64
	n       uint64
	err     error
}

func newEmitter(accts []uint64) *emitter {
	w := &emitter{accts: accts}
	w.run.accts = accts
	return w
}

// out reports whether the emitter writes records other than resting orders.
func (w *emitter) out() bool { return w.full != nil || w.sink != nil }

func (w *emitter) header(h Header) error {
	if w.full != nil {
		return w.full.OnHeader(h)
	}
	return w.sink.OnHeader(h)
}

func (w *emitter) source(source, seq uint64) error {
	if w.full != nil {
		return w.full.OnSourceHighWater(source, seq)
	}
	return w.sink.OnSourceHighWater(source, seq)
}

func (w *emitter) mark(b *book) error {
	if w.full != nil {
		return w.full.OnMark(b.id, b.tick, b.lot, b.minPrice, b.maxPrice, b.lastTrade, b.mark)
	}
	return w.sink.OnMark(b.id, b.tick, b.lot, b.minPrice, b.maxPrice, b.lastTrade, b.mark)
}

func (w *emitter) end(sources, instruments, orders, triggers uint64) error {
	if w.full != nil {
		return w.full.OnEnd(sources, instruments, orders, triggers, w.sum)
	}
	return w.sink.OnEnd(sources, instruments, orders, triggers, w.sum)
}

// emitTo streams s into sink (nil: hash only), by runs when sink is a
// RunSink: the check [Engine.SnapshotTo] and [Frozen.SnapshotTo] make of a
// sink of unknown kind (a type assertion, see [emitter]).
func (s *state) emitTo(sink Sink, withOrders bool) (uint64, error) {
	w := newEmitter(s.accts)
	if sink != nil {
		w.sink = sink
		if withOrders {
			w.runSink, _ = sink.(RunSink)
		}
	}
	return s.emit(w, withOrders)
}

// emitRuns streams s into a sink known to take runs.
func (s *state) emitRuns(sink SnapshotRunSink) (uint64, error) {
	w := newEmitter(s.accts)
	w.full = sink
	return s.emit(w, true)
}

func (w *emitter) runs(os []order) bool {
	w.n += uint64(len(os))
	price := w.b.price(os[0].px())
	w.sum += hashRestingRun(w.b.id, w.side, price, os, w.accts)
	switch {
	case w.full != nil:
		w.run.Price, w.run.orders = price, os
		w.err = w.full.OnRestingRun(w.run)
		w.run.orders = nil
	case w.runSink != nil:
		w.run.Price, w.run.orders = price, os
		w.err = w.runSink.OnRestingRun(w.run)
		w.run.orders = nil
	case w.rs != nil:
		for i := range os {
			o := &os[i]
			if w.err = w.rs.OnResting(w.b.id, w.side, o.id, w.accts[o.acct()], price, o.qty, o.seq(), o.stp(), o.post()); w.err != nil {
				break
			}
		}
	case w.sink != nil:
		for i := range os {
			o := &os[i]
			if w.err = w.sink.OnResting(w.b.id, w.side, o.id, w.accts[o.acct()], price, o.qty, o.seq(), o.stp(), o.post()); w.err != nil {
				break
			}
		}
	}
	return w.err == nil
}

func (w *emitter) trigger(t trigger) bool {
	w.sum += HashTrigger(w.b.id, w.side, t.id, t.account, t.typ, t.tif, t.ref, t.stop, t.price, t.qty, t.seq(), t.stp(), t.post())
	switch {
	case w.full != nil:
		w.err = w.full.OnArmedTrigger(w.b.id, w.side, t.id, t.account, t.typ, t.tif, t.ref, t.stop, t.price, t.qty, t.seq(), t.stp(), t.post())
	case w.sink != nil:
		w.err = w.sink.OnArmedTrigger(w.b.id, w.side, t.id, t.account, t.typ, t.tif, t.ref, t.stop, t.price, t.qty, t.seq(), t.stp(), t.post())
	}
	return w.err == nil
}

// emit streams s into the emitter w (one without a sink only hashes) and
// returns the state hash. Without orders it leaves out the resting-order
// records (the header still counts them) and their digests.
func (s *state) emit(w *emitter, withOrders bool) (uint64, error) {
	orders, triggers := s.counts()
	out := w.out()
	w.sum = HashHeader(RecordVersion, s.nextSeq)
	if out {
		h := Header{Version: RecordVersion, NextSeq: s.nextSeq, Sources: uint64(len(s.sources)),
			Instruments: uint64(len(s.books)), Orders: orders, Triggers: triggers}
		if err := w.header(h); err != nil {
			return 0, err
		}
	}
	for _, m := range s.sources {
		w.sum += HashSource(m.source, m.seq)
		if out {
			if err := w.source(m.source, m.seq); err != nil {
				return 0, err
			}
		}
	}
	for _, b := range s.books {
		w.sum += HashMark(b.id, b.tick, b.lot, b.minPrice, b.maxPrice, b.lastTrade, b.mark)
		if out {
			if err := w.mark(b); err != nil {
				return 0, err
			}
		}
	}
	runFn := w.runs
	for _, b := range s.books {
		if !withOrders {
			break
		}
		w.b = b
		for si := range 2 {
			w.side = Side(si + 1)
			w.run.Instrument, w.run.Side = b.id, w.side
			ow := orderWalk{b: b, buy: si == 0, runs: runFn}
			ow.run(b.levels[si])
			if w.err != nil {
				return 0, w.err
			}
		}
	}
	trig := w.trigger
	for _, b := range s.books {
		w.b = b
		for si := range 2 {
			w.side = Side(si + 1)
			b.triggers[si].Ascend(trig)
			if w.err != nil {
				return 0, w.err
			}
		}
	}
	if out {
		if err := w.end(uint64(len(s.sources)), uint64(len(s.books)), orders, triggers); err != nil {
			return 0, err
		}
	}
	return w.sum, nil
}

// liveState is the engine's own state, for streaming without a clone. Its
// sources slice is the engine's reused scratch.
func (e *Engine) liveState() state {
	e.srcs = e.srcs[:0]
	for src, seq := range e.hwm {
		e.srcs = append(e.srcs, srcMark{src, *seq})
	}
	slices.SortFunc(e.srcs, func(a, b srcMark) int { return cmp.Compare(a.source, b.source) })
	return state{nextSeq: e.nextSeq, sources: e.srcs, books: e.books, accts: e.accts}
}

// SnapshotTo streams the engine's state to s (see [Sink] for the order),
// ending with its state hash. The engine must not change meanwhile; to
// stream while the writer goes on, use [Engine.Clone].
func (e *Engine) SnapshotTo(s Sink) error {
	st := e.liveState()
	_, err := st.emitTo(s, true)
	return err
}

// SnapshotRunSink is a [Sink] that takes resting orders a run at a time
// (see [RunSink]).
type SnapshotRunSink interface {
	Sink
	OnRestingRun(run RestingRun) error
}

// SnapshotRunsTo is [Engine.SnapshotTo] into a sink known to take runs:
// the same records, without asking the sink's kind at run time (see
// [Frozen.SnapshotRunsTo]).
func (e *Engine) SnapshotRunsTo(s SnapshotRunSink) error {
	st := e.liveState()
	_, err := st.emitRuns(s)
	return err
}

// StateHash returns the deterministic 64-bit hash of the whole state: the
// hash of the record stream [Engine.SnapshotTo] would emit. It walks every
// order.
func (e *Engine) StateHash() uint64 {
	st := e.liveState()
	h, _ := st.emitTo(nil, true)
	return h
}

// Frozen is a read-only, copy-on-write view of an engine at one moment. Any
// goroutine may read it while the engine's writer goes on; its methods may
// be called concurrently with each other.
type Frozen struct {
	st state
}

// Clone returns a frozen view of the engine's state. Each book's trees are
// cloned lazily (copy-on-write), so the cost is O(instruments + sources),
// whatever the number of orders; the writer pays for the copy-on-write as it
// touches tree nodes, levels and chunks afterwards (see [level]).
func (e *Engine) Clone() *Frozen {
	live := e.liveState()
	if e.lp.epoch == maxChunkEpoch {
		// 2^48-1 clones of one engine: past what a chunk entry holds.
		panic("engine: Clone: the engine's epochs are used up (2^48-1 clones)")
	}
	e.lp.epoch++ // every level existing now may be seen by the view
	f := &Frozen{st: state{nextSeq: e.nextSeq, sources: slices.Clone(live.sources), books: make([]*book, len(e.books)),
		accts: e.accts[:len(e.accts):len(e.accts)]}}
	for i, b := range e.books {
		f.st.books[i] = b.clone()
	}
	return f
}

// SnapshotTo streams the frozen state to s.
func (f *Frozen) SnapshotTo(s Sink) error {
	_, err := f.st.emitTo(s, true)
	return err
}

// SnapshotRunsTo is [Frozen.SnapshotTo] into a sink known to take runs: the
// same records and calls, without the run-time check SnapshotTo makes of
// its sink's kind. That check is a type assertion whose per-site cache the
// Go runtime grows, at random, with an allocation; a take that must not
// allocate calls this.
func (f *Frozen) SnapshotRunsTo(s SnapshotRunSink) error {
	_, err := f.st.emitRuns(s)
	return err
}

// StateHash returns the state hash of the frozen state.
func (f *Frozen) StateHash() uint64 {
	h, _ := f.st.emitTo(nil, true)
	return h
}

// Orders returns the number of resting orders in the view.
func (f *Frozen) Orders() uint64 {
	n, _ := f.st.counts()
	return n
}

// NonOrderHash returns the part of the state hash that is not made of
// resting orders: header, sources, instruments and triggers. Adding the
// hash sums of every [Partition] to it gives [Frozen.StateHash], so parallel
// encoders can compute the End record's hash without a second walk.
func (f *Frozen) NonOrderHash() uint64 {
	h, _ := f.st.emitTo(nil, false)
	return h
}

// SnapshotWithoutOrders streams the frozen state to s as [Frozen.SnapshotTo]
// does but without the resting-order records: the header (whose Orders
// count is still the full count), sources, instruments, armed triggers and
// End, whose state hash is [Frozen.NonOrderHash]. It is the owner's half of
// a parallel take: the resting orders come from [Frozen.Partitions], whose
// hash sums added to End's hash give the state hash.
func (f *Frozen) SnapshotWithoutOrders(s Sink) error {
	_, err := f.st.emitTo(s, false)
	return err
}
