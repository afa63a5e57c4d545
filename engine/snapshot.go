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

// emitter walks a state into a sink (nil: hash only). Its methods are the
// tree callbacks, bound once, so a walk allocates nothing. Resting orders
// come a run at a time (see [RunSink]): one digest loop a run
// ([hashRestingRun]), then one call of the sink for the run when it is a
// RunSink, or one OnResting a record when it is not.
type emitter struct {
	accts   []uint64
	sink    Sink
	rs      RestingSink
	runSink RunSink // rs when it is a RunSink
	run     RestingRun
	b       *book
	side    Side
	sum     uint64
	n       uint64
	err     error
}

func newEmitter(rs RestingSink, accts []uint64) *emitter {
	w := &emitter{rs: rs, accts: accts}
	w.runSink, _ = rs.(RunSink)
	w.run.accts = accts
	return w
}

func (w *emitter) runs(os []order) bool {
	w.n += uint64(len(os))
	price := w.b.price(os[0].px())
	w.sum += hashRestingRun(w.b.id, w.side, price, os, w.accts)
	switch {
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
	}
	return w.err == nil
}

func (w *emitter) trigger(t trigger) bool {
	w.sum += HashTrigger(w.b.id, w.side, t.id, t.account, t.typ, t.tif, t.ref, t.stop, t.price, t.qty, t.seq(), t.stp(), t.post())
	if w.sink != nil {
		w.err = w.sink.OnArmedTrigger(w.b.id, w.side, t.id, t.account, t.typ, t.tif, t.ref, t.stop, t.price, t.qty, t.seq(), t.stp(), t.post())
		return w.err == nil
	}
	return true
}

// emit streams s into sink, or only hashes it when sink is nil, and returns
// the state hash. Without orders it leaves out the resting-order records
// (the header still counts them) and their digests.
func (s *state) emit(sink Sink, withOrders bool) (uint64, error) {
	orders, triggers := s.counts()
	var w *emitter
	if sink == nil {
		w = newEmitter(nil, s.accts)
	} else {
		w = newEmitter(sink, s.accts)
		w.sink = sink
	}
	w.sum = HashHeader(RecordVersion, s.nextSeq)
	if sink != nil {
		h := Header{Version: RecordVersion, NextSeq: s.nextSeq, Sources: uint64(len(s.sources)),
			Instruments: uint64(len(s.books)), Orders: orders, Triggers: triggers}
		if err := sink.OnHeader(h); err != nil {
			return 0, err
		}
	}
	for _, m := range s.sources {
		w.sum += HashSource(m.source, m.seq)
		if sink != nil {
			if err := sink.OnSourceHighWater(m.source, m.seq); err != nil {
				return 0, err
			}
		}
	}
	for _, b := range s.books {
		w.sum += HashMark(b.id, b.tick, b.lot, b.minPrice, b.maxPrice, b.lastTrade, b.mark)
		if sink != nil {
			if err := sink.OnMark(b.id, b.tick, b.lot, b.minPrice, b.maxPrice, b.lastTrade, b.mark); err != nil {
				return 0, err
			}
		}
	}
	runs := w.runs
	for _, b := range s.books {
		if !withOrders {
			break
		}
		w.b = b
		for si := range 2 {
			w.side = Side(si + 1)
			w.run.Instrument, w.run.Side = b.id, w.side
			ow := orderWalk{b: b, buy: si == 0, runs: runs}
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
	if sink != nil {
		if err := sink.OnEnd(uint64(len(s.sources)), uint64(len(s.books)), orders, triggers, w.sum); err != nil {
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
	_, err := st.emit(s, true)
	return err
}

// StateHash returns the deterministic 64-bit hash of the whole state: the
// hash of the record stream [Engine.SnapshotTo] would emit. It walks every
// order.
func (e *Engine) StateHash() uint64 {
	st := e.liveState()
	h, _ := st.emit(nil, true)
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
	_, err := f.st.emit(s, true)
	return err
}

// StateHash returns the state hash of the frozen state.
func (f *Frozen) StateHash() uint64 {
	h, _ := f.st.emit(nil, true)
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
	h, _ := f.st.emit(nil, false)
	return h
}

// SnapshotWithoutOrders streams the frozen state to s as [Frozen.SnapshotTo]
// does but without the resting-order records: the header (whose Orders
// count is still the full count), sources, instruments, armed triggers and
// End, whose state hash is [Frozen.NonOrderHash]. It is the owner's half of
// a parallel take: the resting orders come from [Frozen.Partitions], whose
// hash sums added to End's hash give the state hash.
func (f *Frozen) SnapshotWithoutOrders(s Sink) error {
	_, err := f.st.emit(s, false)
	return err
}
