package snapshot

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/stream"
)

// DefaultParallelMin is the default [Publisher.ParallelMin]: below it a
// take with workers stays linear. On 2 cores parallel takes won in every
// run from 10,000 resting orders on and lost or tied at 2,000-5,000
// (docs/performance.md has the crossover measured); the default is twice
// the smallest size that always won.
const DefaultParallelMin = 20_000

// DefaultPartitionOrders is the default [Publisher.PartitionOrders]
// (docs/performance.md has the sizes compared).
const DefaultPartitionOrders = 16_384

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
// partitions, so the owner can commit or copy the first while later ones
// encode.
const minPartitionsPerWorker = 4

// slotsPerWorker is how many partitions each worker can have in flight.
// The owner collects partitions in order, so a worker that finishes ahead
// of the others goes on only while the slots hold work. Eight partitions
// of [DefaultPartitionOrders] a worker keep both busy while the owner
// checksums, commits and claims (a claim that enters a term zeroes the
// partition of an old one: 16 MiB in the benchmark's log, most of a
// millisecond). The claimer's window bounds them too: with two workers
// they hold 12 MiB of entries, and the benchmark's window is 8 MiB.
const slotsPerWorker = 8

// parallel is a publisher's worker pool: goroutines started once by
// StartWorkers and stopped by Close. A take cuts the book into many more
// partitions than workers, and partition i goes to slot i mod len(slots),
// encoded by whichever worker takes it from jobs. Two ways:
//
//   - Direct, when the claimer claims ahead ([stream.AheadClaimer]) with a
//     window of at least four batches: where the resting orders belong in
//     the stream, the owner (the caller's goroutine) claims the Orders
//     batches ahead of the workers, in order, exactly as a linear take
//     would claim them, and hands a partition out with the batches its
//     entries fall in; the worker encodes straight into them. The owner
//     collects partitions in order and commits each batch, checksummed,
//     once every partition writing into it is done. The workers' output
//     is never copied; the claims ahead are bounded by the window.
//   - Copying, for any other claimer (an Aeron host's publication): from
//     the start of the take the workers encode into chunks pooled by their
//     slots, and where the orders belong the owner copies them, in order,
//     into the batches it claims as a linear take does.
type parallel struct {
	workers int
	jobs    chan int       // partition indexes to encode
	done    []chan error   // per slot: the worker's result
	slots   []partJob      // per slot
	grows   []func() error // per slot: its grow, bound once
	parts   []engine.Partition
	// held is, per slot, the partition handed out with it: the owner
	// writes it before the send on jobs, the worker reads it after, so the
	// owner may append to parts (the cut runs while workers encode).
	held  []engine.Partition
	wg    sync.WaitGroup
	fail  func(part int) error                              // test hook: a worker failure
	recut func(i int, pt engine.Partition) engine.Partition // test hook: alters partition i as it is cut

	// per take, owner only
	direct     bool
	frozen     *engine.Frozen // the view a direct take cuts where the orders belong
	nparts     int            // the partitions it asks the cut for
	own        partJob        // a partition the owner encodes itself
	owned      int            // partitions the owner encoded in this take
	ac         stream.AheadClaimer
	starts     []uint64 // partition i's entries are starts[i]..starts[i+1]-1 of the orders
	dispatched int      // partitions handed to the workers
	collected  int      // partitions whose result was received
	stitched   bool
	count      uint64 // orders encoded by the workers
	sum        uint64 // sum of the partitions' hash sums
	// The Orders batches claimed ahead and not yet committed are
	// ahead[head:], in order: the take's batch first, first+1, ...;
	// claimed counts every batch claimed.
	ahead   []aheadBatch
	head    int
	first   int
	claimed int
	total   uint64 // resting orders of the take
}

// aheadBatch is an Orders batch claimed ahead: its claim, its ticket, and
// how many entries it holds.
type aheadBatch struct {
	buf    []byte
	ticket int
	n      int
}

// partJob is one slot: the batches a partition's entries go into, and the
// worker's results. The worker writes the partition's entries back to back
// from entry skip of batches[0] on, batch after batch, with putRun (the
// linear path's encoder). A copying take's batches are the slot's pooled
// chunks (pool), laid out as batches.
type partJob struct {
	batches [][]byte
	pool    [][]byte
	per     int // entries a batch holds
	skip    int
	want    uint64 // the partition's orders
	b, slot int    // where the next entry goes
	n, sum  uint64
	// more, when set (the owner's own job), makes room for the next
	// batch: it commits the batches written and claims another.
	more func() error
	// The workers write their slots' counters entry by entry; the slots
	// they hold at once are neighbours in parallel.slots, so each slot
	// fills its own two cache lines (the adjacent-line prefetcher pairs
	// lines) rather than sharing one with the next.
	_ [128 - 112]byte
}

var errOverrun = errors.New("more orders than its partition counted")

// chunkEntries is how many entries one pooled chunk of a copying take
// holds (48 KiB).
const chunkEntries = 1024

// grow is a copying slot's more: the next pooled chunk.
func (j *partJob) grow() error {
	k := len(j.batches)
	if k == len(j.pool) {
		j.pool = append(j.pool, make([]byte, batchHeader+chunkEntries*orderLength))
	}
	j.batches = append(j.batches, j.pool[k])
	return nil
}

// OnResting implements [engine.RestingSink].
func (j *partJob) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	off, err := j.next(1)
	if err != nil {
		return err
	}
	putOrder(j.batches[j.b][off:off+orderLength], instrument, side, orderID, account, price, qty, seq, stp, post)
	j.slot++
	j.n++
	return nil
}

// next moves to the next batch when the current one is full and returns
// the offset of the next entry, with room for at most k entries there.
func (j *partJob) next(k int) (int, error) {
	if j.slot == j.per {
		j.b, j.slot = j.b+1, 0
	}
	if j.b >= len(j.batches) && j.more != nil && j.n+uint64(k) <= j.want {
		if err := j.more(); err != nil {
			return 0, err
		}
	}
	if j.b >= len(j.batches) || j.n+uint64(k) > j.want {
		return 0, errOverrun
	}
	return batchHeader + j.slot*orderLength, nil
}

// OnRestingRun implements [engine.RunSink].
func (j *partJob) OnRestingRun(r engine.RestingRun) error {
	for i, n := 0, r.Len(); i < n; {
		if j.slot == j.per {
			j.b, j.slot = j.b+1, 0
		}
		k := min(n-i, j.per-j.slot)
		off, err := j.next(k)
		if err != nil {
			return err
		}
		putRun(j.batches[j.b][off:off+k*orderLength], &r, i)
		j.slot += k
		j.n += uint64(k)
		i += k
	}
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
	q := &parallel{workers: n, jobs: make(chan int, slots), done: make([]chan error, slots), slots: make([]partJob, slots),
		grows: make([]func() error, slots), held: make([]engine.Partition, slots)}
	for i := range q.slots {
		q.grows[i] = q.slots[i].grow
	}
	q.own.more = p.ownMore
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
		j := &q.slots[pi%len(q.slots)]
		var err error
		if q.fail != nil {
			err = q.fail(pi)
		}
		if err == nil {
			err = q.emit(pi, q.held[pi%len(q.slots)], j)
		}
		q.done[pi%len(q.slots)] <- err
		// The send readied the owner on this P, behind this worker: with
		// no core free (GOMAXPROCS at most workers+1) it would wait until
		// both workers run out of partitions, then commit and hand out
		// alone while they idle. Yielding lets it run now, between
		// partitions (docs/performance.md has the trace).
		runtime.Gosched()
	}
}

// emit encodes partition pi, pt, through j and checks that it encoded exactly
// the orders the partition counted.
func (q *parallel) emit(pi int, pt engine.Partition, j *partJob) error {
	n, sum, err := pt.EmitRuns(j)
	j.sum = sum
	switch {
	case err != nil:
		return err
	case n != j.n || n != j.want:
		return fmt.Errorf("%w: partition %d emitted %d orders, encoded %d, counted %d", ErrPublish, pi, n, j.n, j.want)
	}
	return nil
}

// collect waits for the next partition in order and returns its slot.
func (q *parallel) collect() (*partJob, error) {
	slot := q.collected % len(q.slots)
	err := <-q.done[slot]
	q.collected++
	return &q.slots[slot], err
}

// settle waits for every partition in flight (so no worker writes into a
// claim any more).
func (q *parallel) settle() {
	for q.collected < q.dispatched {
		q.collect()
	}
}

// TakeFrozen writes f's state as one snapshot framed by m. With workers
// started and at least ParallelMin resting orders, the resting orders are
// cut into partitions of about PartitionOrders orders (at least four per
// worker, and small enough that two fit in the claimer's window), and
// where the orders belong the workers encode them straight into Orders
// batches the caller's goroutine claims ahead of them: the same claims,
// frames and bytes a linear take writes. Through a claimer that cannot
// claim ahead, or whose window holds fewer than four batches, the workers
// encode into pooled chunks from the start and the caller's goroutine
// copies them into its claims. Otherwise it is a linear take. A worker's
// failure fails the take.
func (p *Publisher) TakeFrozen(f *engine.Frozen, m Marker) error {
	q := p.par
	if q == nil || f.Orders() < uint64(max(p.ParallelMin, 1)) {
		p.Reset(m)
		if err := f.SnapshotRunsTo(p); err != nil {
			return p.fail(err)
		}
		return nil
	}
	p.Reset(m)
	per := uint64(p.PartitionOrders)
	if per == 0 {
		per = DefaultPartitionOrders
	}
	// Direct: a partition's batches within half the window, so that the
	// claims a partition needs never wait on claims of its own.
	frame := logbufFrame(batchHeader + p.nOrders*orderLength)
	// The claimer's kind was asked once, in NewPublisher: a type assertion
	// at every take may allocate (the runtime grows its per-site cache at
	// random), and a take allocates nothing.
	q.ac, q.direct = p.ac, p.ac != nil
	if q.direct && q.ac.Window() < 4*frame {
		q.direct = false
	}
	if q.direct {
		per = max(1, min(per, uint64(q.ac.Window()/2/frame*p.nOrders)))
	}
	total := f.Orders()
	n := max(minPartitionsPerWorker*q.workers, int((total+per-1)/per))
	q.parts = q.parts[:0]
	q.starts = append(q.starts[:0], 0)
	q.dispatched, q.collected, q.stitched, q.count, q.sum = 0, 0, false, 0, 0
	q.head, q.first, q.claimed, q.total, q.owned = 0, 0, 0, total, 0
	for i := range q.slots {
		q.slots[i].more = nil
		if !q.direct {
			q.slots[i].more = q.grows[i]
		}
	}
	if q.direct {
		// Cut where the orders belong, handing each partition out as soon
		// as it is cut (stitch).
		q.frozen, q.nparts = f, n
	} else {
		// Cut now and start the workers: their chunks are ready by the
		// time the owner reaches the orders' place.
		var err error
		f.EachPartition(n, func(pt engine.Partition) bool {
			err = q.addPart(pt)
			return err == nil
		})
		if err == nil {
			err = q.cutEnd()
		}
		if err != nil {
			q.endTake()
			return p.fail(err)
		}
		q.dispatchCopy() // the workers start now
	}
	err := f.SnapshotWithoutOrders(parSink{p})
	q.settle() // leave the workers idle
	if err == nil && !q.stitched {
		err = fmt.Errorf("%w: the stream had no place for the resting orders", ErrPublish)
	}
	for _, b := range q.ahead[q.head:] { // only after a failure
		q.ac.AbortAhead(b.ticket)
	}
	q.endTake()
	if err != nil {
		return p.fail(err)
	}
	return nil
}

// endTake drops what the take held: the claimer, the batches and the
// frozen state.
func (q *parallel) endTake() {
	q.ac, q.frozen = nil, nil
	clear(q.ahead)
	q.ahead = q.ahead[:0]
	clear(q.parts) // drop the frozen state
	clear(q.held)
	q.parts = q.parts[:0]
	for i := range q.slots {
		clear(q.slots[i].batches)
	}
}

// addPart appends a partition just cut and the place of its entries in
// the stream. The partitions may never count more orders than the book:
// checked before the partition's batches are claimed (a batch past the
// book's last order has no entries to claim), and the total again when
// the cut is over (cutEnd).
func (q *parallel) addPart(pt engine.Partition) error {
	if q.recut != nil {
		pt = q.recut(len(q.parts), pt)
	}
	end := q.starts[len(q.parts)] + pt.Estimate
	if end > q.total {
		return fmt.Errorf("%w: the partitions count more than the book's %d orders", ErrPublish, q.total)
	}
	q.parts = append(q.parts, pt)
	q.starts = append(q.starts, end)
	return nil
}

// cutEnd checks, once the cut is over, that the partitions count the
// book's orders.
func (q *parallel) cutEnd() error {
	if got := q.starts[len(q.parts)]; got != q.total {
		return fmt.Errorf("%w: the partitions count %d orders, the book %d", ErrPublish, got, q.total)
	}
	return nil
}

// logbufFrame is the log bytes of a frame with payload bytes: the header,
// aligned to 32.
func logbufFrame(payload int) int { return (payload + 32 + 31) &^ 31 }

// parSink is the owner's sink during a parallel take: the engine streams
// every record but the resting orders to it (SnapshotWithoutOrders) while
// the workers encode them; where the orders belong (before the first armed
// trigger, or End) the workers' output is placed, in partition order.
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

// stitch, once per take, places the resting orders: directly, by having
// the workers encode them into Orders batches claimed ahead and committing
// the batches in order; or by copying the workers' chunks into batches
// claimed as a linear take claims them.
func (p *Publisher) stitch() error {
	q := p.par
	if p.err != nil {
		return p.err
	}
	if q.stitched {
		return nil
	}
	q.stitched = true
	if !q.direct {
		return p.stitchCopy()
	}
	p.closeBatch()
	// The cut runs here, on the owner, and each partition goes out as
	// soon as it is cut: the workers start after the first partition's
	// levels are counted, not after the whole book's.
	var err error
	q.frozen.EachPartition(q.nparts, func(pt engine.Partition) bool {
		if err = q.addPart(pt); err != nil {
			err = p.fail(err)
			return false
		}
		err = p.pump(false)
		return err == nil
	})
	if err == nil {
		if err = q.cutEnd(); err != nil {
			err = p.fail(err)
		}
	}
	if err != nil {
		return err
	}
	return p.pump(true)
}

// pump hands out the partitions cut so far, collects them in order and
// commits their batches. Before the cut is over (final false) it returns
// as soon as every partition cut is out and a slot is free for the next;
// at the end it returns when every partition is collected.
func (p *Publisher) pump(final bool) error {
	q := p.par
	for q.collected < len(q.parts) {
		if err := p.dispatch(); err != nil {
			return err
		}
		if !final && q.dispatched == len(q.parts) && q.dispatched-q.collected < len(q.slots) {
			return nil
		}
		if q.collected == q.dispatched {
			// dispatch stopped with a slot free and partitions left, so a
			// claim was back-pressured with nothing in flight: the claims
			// this partition took so far hold the reader back (a reader's
			// window smaller than the log's). The owner encodes it,
			// committing batches as it fills them.
			if err := p.encodeHere(); err != nil {
				return err
			}
			continue
		}
		i := q.collected
		j, err := q.collect()
		if err != nil {
			return p.fail(fmt.Errorf("%w: %w on partition %d: %w", ErrPublish, errWorker, i, err))
		}
		q.count += j.n
		q.sum += j.sum
		clear(j.batches)
		p.commitAhead(q.starts[i+1])
	}
	return nil
}

// dispatch hands out partitions while slots are free, claiming the batches
// each writes into; it stops early at a claim back-pressured.
func (p *Publisher) dispatch() error {
	q := p.par
	for q.dispatched < len(q.parts) && q.dispatched < q.collected+len(q.slots) {
		i := q.dispatched
		last := q.claimed // batches needed: through the one holding the partition's last entry
		if to := q.starts[i+1]; to > q.starts[i] {
			last = int((to-1)/uint64(p.nOrders)) + 1
		}
		for q.claimed < last {
			if ok, err := p.claimAhead(); err != nil || !ok {
				return err
			}
		}
		p.assign(&q.slots[i%len(q.slots)], i)
		q.held[i%len(q.slots)] = q.parts[i]
		q.jobs <- i
		q.dispatched++
	}
	return nil
}

// assign points j at partition i: the batches claimed so far that its
// entries fall in, from the first entry's place on.
func (p *Publisher) assign(j *partJob, i int) {
	q := p.par
	from, to := q.starts[i], q.starts[i+1]
	per := uint64(p.nOrders)
	k0 := int(from / per)
	j.batches = j.batches[:0]
	if to > from {
		for k := k0; k < q.claimed && uint64(k)*per < to; k++ {
			j.batches = append(j.batches, q.ahead[q.head+k-q.first].buf)
		}
	}
	j.per, j.skip, j.want = p.nOrders, int(from-uint64(k0)*per), to-from
	j.b, j.slot, j.n, j.sum = 0, j.skip, 0, 0
}

// encodeHere encodes the next partition on the owner's goroutine into the
// batches claimed for it and, as it runs out of them, commits the batches
// written and claims more (ownMore), waiting for the reader as a linear
// take does.
func (p *Publisher) encodeHere() error {
	q := p.par
	i := q.dispatched
	j := &q.own
	p.assign(j, i)
	err := q.emit(i, q.parts[i], j)
	clear(j.batches)
	switch {
	case p.err != nil:
		return p.err
	case err != nil:
		return p.fail(fmt.Errorf("%w: partition %d: %w", ErrPublish, i, err))
	}
	q.dispatched++
	q.collected++
	q.owned++
	q.count += j.n
	q.sum += j.sum
	p.commitAhead(q.starts[i+1])
	return nil
}

// ownMore is the owner's job's more: it commits the batches below the
// next entry and claims one more, retrying until the reader makes room.
func (p *Publisher) ownMore() error {
	q := p.par
	p.commitAhead(q.starts[q.dispatched] + q.own.n)
	for {
		ok, err := p.claimAhead()
		if err != nil {
			return err
		}
		if ok {
			q.own.batches = append(q.own.batches, q.ahead[len(q.ahead)-1].buf)
			return nil
		}
	}
}

// claimAhead claims the next Orders batch, as long as a linear take's
// (full, or the last batch's entries), and writes its header and count.
// When back-pressured it lets the reader move (idle) and tries once more;
// ok is false if the claim is still back-pressured.
func (p *Publisher) claimAhead() (ok bool, err error) {
	q := p.par
	k := q.claimed
	n := int(min(uint64(p.nOrders), q.total-uint64(k)*uint64(p.nOrders)))
	var buf []byte
	var pos int64
	var ticket int
	for try := 0; ; try++ {
		if p.aow != nil {
			buf, pos, ticket, err = p.aow.ClaimAheadOverwrite(batchHeader + n*orderLength)
		} else {
			buf, pos, ticket, err = q.ac.ClaimAhead(batchHeader + n*orderLength)
		}
		if err != nil {
			return false, p.fail(err)
		}
		if pos >= 0 {
			break
		}
		if pos != stream.BackPressured && pos != stream.AdminAction {
			return false, p.fail(fmt.Errorf("%w: claim failed with position %d", ErrPublish, pos))
		}
		if try == 1 || p.idle == nil {
			return false, nil
		}
		if err := p.idle(); err != nil {
			return false, p.fail(err)
		}
	}
	q.ahead = append(q.ahead, aheadBatch{buf: buf, ticket: ticket, n: n})
	q.claimed++
	if err = p.ord.WrapAndApplyHeader(buf, 0); err == nil {
		_, err = p.ord.EntriesCount(n)
	}
	if err != nil {
		return false, p.fail(err)
	}
	return true, nil
}

// commitAhead checksums and commits, in order, the batches claimed ahead
// whose entries are all below entry end.
func (p *Publisher) commitAhead(end uint64) {
	q := p.par
	per := uint64(p.nOrders)
	for q.head < len(q.ahead) {
		b := &q.ahead[q.head]
		if uint64(q.first)*per+uint64(b.n) > end {
			break
		}
		p.sum = checksum(p.sum, b.buf[:batchHeader+b.n*orderLength])
		q.ac.CommitAhead(b.ticket)
		*b = aheadBatch{}
		q.head++
		q.first++
	}
	if q.head == len(q.ahead) {
		q.ahead, q.head = q.ahead[:0], 0
	} else if q.head > 1024 && 2*q.head > len(q.ahead) {
		n := copy(q.ahead, q.ahead[q.head:])
		clear(q.ahead[n:])
		q.ahead, q.head = q.ahead[:n], 0
	}
}

// dispatchCopy hands out partitions, for a copying take, while their slots
// are free.
func (q *parallel) dispatchCopy() {
	for q.dispatched < len(q.parts) && q.dispatched < q.collected+len(q.slots) {
		i := q.dispatched
		j := &q.slots[i%len(q.slots)]
		j.batches = j.batches[:0]
		j.per, j.skip, j.want = chunkEntries, 0, q.starts[i+1]-q.starts[i]
		j.b, j.slot, j.n, j.sum = 0, 0, 0, 0
		q.held[i%len(q.slots)] = q.parts[i]
		q.jobs <- i
		q.dispatched++
	}
}

// stitchCopy collects the partitions in order and copies each one's
// entries out of its chunks into Orders batches, handing the next
// partition to the freed slot.
func (p *Publisher) stitchCopy() error {
	q := p.par
	for i := range q.parts {
		j, err := q.collect()
		if err != nil {
			return p.fail(fmt.Errorf("%w: %w on partition %d: %w", ErrPublish, errWorker, i, err))
		}
		q.count += j.n
		q.sum += j.sum
		left := int(j.n)
		for _, c := range j.batches {
			m := min(left, chunkEntries)
			if err := p.copyEntries(c[batchHeader : batchHeader+m*orderLength]); err != nil {
				return err
			}
			left -= m
		}
		j.batches = j.batches[:0]
		q.dispatchCopy() // j's slot is free again
	}
	return nil
}

// copyEntries copies encoded entries into Orders batches, claimed as a
// linear take claims them.
func (p *Publisher) copyEntries(src []byte) error {
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
