package snapshot

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/matchlog/matchlog/engine"
)

// DefaultParallelMin is the default [Publisher.ParallelMin]: below it a
// take with workers stays linear, because below about 100k resting orders
// the hand-offs cost more than a second core gives (docs/performance.md has
// the crossover measured).
const DefaultParallelMin = 200_000

// DefaultPartitionOrders is the default [Publisher.PartitionOrders]
// (docs/performance.md has the sizes compared).
const DefaultPartitionOrders = 65_536

// Parallel is how a publisher's takes use parallel encoders; the zero value
// is linear takes. [Publisher.SetParallel] applies it and [Parallel.Validate]
// checks it: they are the one place that decides, for the cluster service,
// the command line and the benchmarks, how many workers run and from which
// book size they are used.
type Parallel struct {
	// Workers is the number of encoding goroutines (0: every take is
	// linear). A pauseless snapshot of a live node is encoded while the
	// node's duty cycle runs, so workers beyond [MaxLiveWorkers] take the
	// duty cycle's core.
	Workers int
	// Min is the fewest resting orders taken in parallel (0:
	// [DefaultParallelMin]; 1: every book).
	Min int
	// PartitionOrders is about how many resting orders one partition holds
	// (0: [DefaultPartitionOrders]).
	PartitionOrders int
}

// Validate refuses negative fields, naming the field.
func (o Parallel) Validate() error {
	switch {
	case o.Workers < 0:
		return fmt.Errorf("%w: %d parallel workers: give 0 (linear) or more", ErrPublish, o.Workers)
	case o.Min < 0:
		return fmt.Errorf("%w: parallel minimum %d orders: give 0 (the default, %d) or more", ErrPublish, o.Min, DefaultParallelMin)
	case o.PartitionOrders < 0:
		return fmt.Errorf("%w: partition of %d orders: give 0 (the default, %d) or more", ErrPublish, o.PartitionOrders, DefaultPartitionOrders)
	}
	return nil
}

// SetParallel validates o, sets [Publisher.ParallelMin] and
// [Publisher.PartitionOrders] from it and starts o.Workers encoders
// ([Publisher.StartWorkers]; [Publisher.Close] stops them). On error it
// changes nothing.
func (p *Publisher) SetParallel(o Parallel) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := p.StartWorkers(o.Workers); err != nil {
		return err
	}
	p.ParallelMin = DefaultParallelMin
	if o.Min > 0 {
		p.ParallelMin = o.Min
	}
	p.PartitionOrders = o.PartitionOrders
	return nil
}

// MaxLiveWorkers is the most parallel encoders worth starting for
// pauseless snapshots of a live node: GOMAXPROCS less one core for the
// node's duty cycle and one for the snapshot goroutine that writes the
// encoded records (0 on a 2-core host: encode linearly).
func MaxLiveWorkers() int { return max(0, runtime.GOMAXPROCS(0)-2) }

// minPartitionsPerWorker: however small the book, each worker gets several
// partitions, so the owner can stitch the first while later ones encode.
const minPartitionsPerWorker = 4

// slotsPerWorker is how many partition buffers each worker has in flight:
// a worker can encode the next partition while the owner stitches the
// previous one.
const slotsPerWorker = 2

// parallel is a publisher's worker pool: goroutines started once by
// StartWorkers and stopped by Close. A take cuts the book into many more
// partitions than workers; partition i is encoded into buffer slot
// i % len(bufs) by whichever worker takes it from jobs, and the owner
// stitches partitions in order, handing partition i+len(bufs) out as soon
// as partition i's slot is free. So the owner's copying overlaps the
// workers' encoding, and the pooled memory is bounded by the slots, never
// the whole book.
type parallel struct {
	workers int
	jobs    chan int     // partition indexes to encode
	done    []chan error // per slot: the worker's result
	bufs    []partBuf    // per slot
	parts   []engine.Partition
	wg      sync.WaitGroup
	fail    func(part int) error // test hook: a worker failure

	// per take, owner only
	dispatched int // partitions handed to the workers
	collected  int // partitions whose result was received
	stitched   bool
	count      uint64 // orders encoded by the workers
	sum        uint64 // sum of the partitions' hash sums
}

// partBuf is one slot's pooled buffer: the partition's Orders entries,
// encoded back to back by putOrder (the linear path's encoder); the owner
// copies them out into the claimed batches.
type partBuf struct {
	buf    []byte
	n, sum uint64
	// The workers write n run by run; the slots they hold at once are
	// neighbours in parallel.bufs, so each slot fills its own two cache
	// lines (the adjacent-line prefetcher pairs lines) rather than
	// sharing one with the next.
	_ [128 - 40]byte
}

// OnResting implements [engine.RestingSink].
func (b *partBuf) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	off := b.grow(1)
	putOrder(b.buf[off:off+orderLength], instrument, side, orderID, account, price, qty, seq, stp, post)
	b.n++
	return nil
}

// grow makes room for n more entries and returns the offset of the first.
func (b *partBuf) grow(n int) int {
	off := int(b.n) * orderLength
	if end := off + n*orderLength; end > len(b.buf) {
		nb := make([]byte, max(end, 2*len(b.buf), 1024*orderLength))
		copy(nb, b.buf[:off])
		b.buf = nb
	}
	return off
}

// OnRestingRun implements [engine.RunSink].
func (b *partBuf) OnRestingRun(r engine.RestingRun) error {
	n := r.Len()
	off := b.grow(n)
	putRun(b.buf[off:off+n*orderLength], &r, 0)
	b.n += uint64(n)
	return nil
}

// StartWorkers starts n encoding goroutines for [Publisher.TakeFrozen];
// n <= 0 does nothing (parallel encode is off by default). Call Close to
// stop them. It fails if workers are already running.
func (p *Publisher) StartWorkers(n int) error {
	if n <= 0 {
		return nil
	}
	if p.par != nil {
		return fmt.Errorf("%w: workers already started", ErrPublish)
	}
	slots := slotsPerWorker * n
	q := &parallel{workers: n, jobs: make(chan int, slots), done: make([]chan error, slots), bufs: make([]partBuf, slots)}
	for i := range slots {
		q.done[i] = make(chan error, 1)
	}
	q.wg.Add(n)
	for range n {
		go q.run()
	}
	p.par = q
	return nil
}

// Close stops the workers started by StartWorkers. It must not be called
// during a take.
func (p *Publisher) Close() error {
	if p.par != nil {
		close(p.par.jobs)
		p.par.wg.Wait()
		p.par = nil
	}
	return nil
}

func (q *parallel) run() {
	defer q.wg.Done()
	for pi := range q.jobs {
		slot := pi % len(q.bufs)
		b := &q.bufs[slot]
		b.n, b.sum = 0, 0
		var err error
		if q.fail != nil {
			err = q.fail(pi)
		}
		if err == nil {
			var n uint64
			n, b.sum, err = q.parts[pi].Emit(b)
			if err == nil && n != b.n {
				err = fmt.Errorf("%w: partition %d emitted %d orders and encoded %d", ErrPublish, pi, n, b.n)
			}
		}
		q.done[slot] <- err
	}
}

// dispatch hands out partitions while their slots are free.
func (q *parallel) dispatch() {
	for q.dispatched < len(q.parts) && q.dispatched < q.collected+len(q.bufs) {
		q.jobs <- q.dispatched
		q.dispatched++
	}
}

// collect waits for the next partition in order and returns its slot.
func (q *parallel) collect() (*partBuf, error) {
	slot := q.collected % len(q.bufs)
	err := <-q.done[slot]
	q.collected++
	return &q.bufs[slot], err
}

// TakeFrozen writes f's state as one snapshot framed by m. With workers
// started and at least ParallelMin resting orders, the resting orders are
// cut into partitions of about PartitionOrders orders (at least four per
// worker), encoded by the workers and stitched in order by the caller's
// goroutine into the same claims, frames and bytes a linear take writes;
// otherwise it is a linear take. A worker's failure fails the take.
func (p *Publisher) TakeFrozen(f *engine.Frozen, m Marker) error {
	q := p.par
	if q == nil || f.Orders() < uint64(max(p.ParallelMin, 1)) {
		p.Reset(m)
		if err := f.SnapshotTo(p); err != nil {
			return p.fail(err)
		}
		return nil
	}
	p.Reset(m)
	per := uint64(p.PartitionOrders)
	if per == 0 {
		per = DefaultPartitionOrders
	}
	n := max(minPartitionsPerWorker*q.workers, int((f.Orders()+per-1)/per))
	q.parts = f.AppendPartitions(q.parts[:0], n)
	q.dispatched, q.collected, q.stitched, q.count, q.sum = 0, 0, false, 0, 0
	q.dispatch()
	err := f.SnapshotWithoutOrders(parSink{p})
	for q.collected < q.dispatched { // leave the workers idle
		q.collect()
	}
	clear(q.parts) // drop the frozen state
	q.parts = q.parts[:0]
	if err != nil {
		return p.fail(err)
	}
	return nil
}

// parSink is the owner's sink during a parallel take: the engine streams
// every record but the resting orders to it (SnapshotWithoutOrders) while
// the workers encode them; where the orders belong (before the first armed
// trigger, or End) the workers' output is stitched in, in partition order.
// Nothing else is claimed between the marks and that point, so the claims
// are the linear take's.
type parSink struct{ *Publisher }

// OnResting implements [engine.Sink]; SnapshotWithoutOrders never calls it.
func (s parSink) OnResting(uint32, engine.Side, uint64, uint64, int64, int64, uint64, engine.STP, bool) error {
	return s.fail(fmt.Errorf("%w: a resting order in the owner's stream of a parallel take", ErrPublish))
}

// OnArmedTrigger implements [engine.Sink].
func (s parSink) OnArmedTrigger(instrument uint32, side engine.Side, orderID, account uint64, typ engine.OrderType, tif engine.TimeInForce, ref engine.TriggerRef,
	stop, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	if err := s.stitch(); err != nil {
		return err
	}
	return s.Publisher.OnArmedTrigger(instrument, side, orderID, account, typ, tif, ref, stop, price, qty, seq, stp, post)
}

// OnEnd implements [engine.Sink]: the engine's hash here covers every
// record but the resting orders; the state hash written adds the
// partitions' hash sums.
func (s parSink) OnEnd(sources, instruments, orders, triggers uint64, nonOrderHash uint64) error {
	p := s.Publisher
	if err := p.stitch(); err != nil {
		return err
	}
	q := p.par
	if q.count != orders {
		return p.fail(fmt.Errorf("%w: workers encoded %d orders, the header says %d", ErrPublish, q.count, orders))
	}
	return p.OnEnd(sources, instruments, orders, triggers, nonOrderHash+q.sum)
}

var errWorker = errors.New("worker failed")

// stitch, once per take, copies the partitions' entries in order into
// Orders batches claimed exactly as the linear path claims them.
func (p *Publisher) stitch() error {
	q := p.par
	if p.err != nil {
		return p.err
	}
	if q.stitched {
		return nil
	}
	q.stitched = true
	for i := range q.parts {
		b, err := q.collect()
		if err != nil {
			return p.fail(fmt.Errorf("%w: %w on partition %d: %w", ErrPublish, errWorker, i, err))
		}
		q.count += b.n
		q.sum += b.sum
		if err := p.stitchPart(b); err != nil {
			return err
		}
		q.dispatch() // b's slot is free again
	}
	return nil
}

// stitchPart copies one partition's entries.
func (p *Publisher) stitchPart(b *partBuf) error {
	src := b.buf[:int(b.n)*orderLength]
	for len(src) > 0 {
		if p.kind != batchOrders || p.oi == p.ocap {
			if err := p.openBatch(batchOrders); err != nil {
				return err
			}
		}
		m := min(p.ocap-p.oi, len(src)/orderLength)
		copy(p.buf[batchHeader+p.oi*orderLength:], src[:m*orderLength])
		p.oi += m
		src = src[m*orderLength:]
	}
	return nil
}
