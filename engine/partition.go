package engine

import "github.com/google/btree"

// The resting-order stream is a run of segments, one per (instrument, side)
// in stream order. A cut is a point in that run: a segment and the first key
// at or after which the next partition starts. Partitions are the ranges
// between consecutive cuts, so whatever the cut keys are, reading the
// partitions in order reads every order exactly once, in stream order.

type cut struct {
	seg int   // segment index: book*2 + side index
	key order // first key of the partition in seg (price, sk)
	// whole means the partition starts at the beginning of seg.
	whole bool
}

// Partition is one ordered slice of a frozen book's resting-order stream.
// The concatenation of [Frozen.Partitions] in order is exactly the
// resting-order stream of [Frozen.SnapshotTo]. A Partition is read-only and
// may be emitted on any goroutine.
type Partition struct {
	st       *state
	from, to cut // to is exclusive; to.seg == len(segments) means the end
	// Estimate is the number of orders in the partition, counted from the
	// level totals when it was cut (the tests hold it to the count Emit
	// reports).
	Estimate uint64
}

func (s *state) segments() int { return 2 * len(s.books) }

func (s *state) seg(i int) (*book, int) { return s.books[i/2], i % 2 }

// Partitions cuts the view's resting orders into at most n ordered
// partitions of about equal size. Cuts are found from the level totals, so
// cutting costs O(levels), never a walk of orders; a level larger than a
// partition is cut inside at the exact rank, found from its chunks' live
// counts (O(chunks) of that level). An empty book gives no partitions.
func (f *Frozen) Partitions(n int) []Partition { return f.AppendPartitions(nil, n) }

// AppendPartitions is [Frozen.Partitions] appending to dst: with enough
// capacity in dst it allocates nothing, so a snapshot taker can reuse one
// slice across takes.
func (f *Frozen) AppendPartitions(dst []Partition, n int) []Partition {
	f.EachPartition(n, func(p Partition) bool {
		dst = append(dst, p)
		return true
	})
	return dst
}

// EachPartition cuts the view's resting orders as [Frozen.Partitions]
// does and calls yield with each partition, in order, as soon as it is
// cut (once the next cut is found), until yield returns false. A snapshot
// taker can hand the first partitions out while the rest are being cut:
// the cut reads every level of the book, about half a millisecond at 1M
// orders. It allocates nothing.
func (f *Frozen) EachPartition(n int, yield func(Partition) bool) {
	st := &f.st
	total, _ := st.counts()
	if n < 1 || total == 0 {
		return
	}
	if uint64(n) > total {
		n = int(total)
	}
	target := (total + uint64(n) - 1) / uint64(n)
	// The partition being cut starts at cur.from; when the next cut is
	// found it gets its end and Estimate (the orders counted until the
	// cut) and goes to yield.
	cur := Partition{st: st, from: cut{seg: 0, whole: true}}
	parts, stopped := 1, false // partitions started; yield said stop
	var acc, placed uint64     // orders in the current partition so far; in earlier ones
	add := func(c cut, est uint64) {
		cur.to, cur.Estimate = c, est
		placed += est
		stopped = !yield(cur)
		cur = Partition{st: st, from: c}
		parts++
	}
	more := func() bool { return parts < n && !stopped }
	// The levels are visited in a pipeline, as orderWalk's are: each is
	// prefetched when the tree yields it and its count read cutLag levels
	// later. A book grown in random order has its levels scattered over
	// the heap, and reading them one miss at a time held a parallel take's
	// workers idle for 2.3 ms at 1M orders (docs/performance.md).
	var ring [cutLag]*level
	var k int
	for si := 0; si < st.segments() && more(); si++ {
		b, side := st.seg(si)
		level := func(l *level) bool {
			cnt := uint64(l.count)
			var used uint64 // orders of this level already placed before a cut
			for acc+cnt-used > target && more() {
				take := target - acc
				if used+take == 0 {
					add(cut{seg: si, key: order{pa: pxAcct(b.ticks(l.price), 0)}}, acc)
					acc = 0
					continue
				}
				k, ok := levelCutKey(b, side, l, used+take)
				if last := cur.from; !ok || (last.seg == si && !last.whole && last.key == k) {
					break
				}
				add(cut{seg: si, key: k}, acc+take)
				acc = 0
				used += take
			}
			acc += cnt - used
			return more()
		}
		k = 0
		b.levels[side].Ascend(func(it lvl) bool {
			prefetchLevel(it.l, 64)
			l := ring[k%cutLag]
			ring[k%cutLag] = it.l
			k++
			return l == nil || level(l)
		})
		for i := max(k-cutLag, 0); i < k && more(); i++ {
			level(ring[i%cutLag])
		}
		clear(ring[:])
	}
	if stopped {
		return
	}
	cur.to, cur.Estimate = cut{seg: st.segments(), whole: true}, total-placed
	yield(cur)
}

// cutLag is how many levels ahead AppendPartitions prefetches.
const cutLag = 8

// levelCutKey returns the key of the level's order of rank take (the first
// of the next partition). It reports false when the level cannot be cut
// there.
func levelCutKey(b *book, side int, l *level, take uint64) (order, bool) {
	if take == 0 || take >= uint64(l.count) {
		return order{}, false
	}
	o := l.at(l.rankSlot(int64(take)))
	return order{pa: pxAcct(b.ticks(l.price), 0), sk: o.sk &^ (1<<skSeqPos - 1)}, true
}

// orderWalk walks the resting orders of one side of a book in price-time
// order, optionally from a key and up to a key (exclusive); its visit
// method is the level tree's callback, bound once.
//
// A level's orders are two dependent loads away from the tree item (the
// level, which holds its chunk entries, then the chunks; a long level's
// segments are a third), each a likely cache miss in a book grown in
// random order. So the walk is a pipeline: visit admits a level and
// prefetches it (two cache lines), prefetches the segments of the level
// admitted before it if it is long and the chunks of the one before that,
// and walks the orders of the level admitted walkLag levels earlier, whose
// memory has had the time of walkLag levels' orders to arrive.
type orderWalk struct {
	b              *book
	buy            bool
	from, to       order
	hasFrom, hasTo bool
	fn             func(order) bool
	runs           func([]order) bool // in place of fn when set
	stopped        bool
	// q holds the levels admitted and not yet walked, the k-th admitted
	// at q[k&(len(q)-1)]; k counts the levels admitted. A ring, not a
	// shifted array: escape analysis would take a copy within q for a
	// leak of everything the walk points to. It lies outside the walk
	// (run's own, on its stack) for the same reason: a level's chunk
	// buffers flow to fn, and a level held in the walk itself would make
	// escape analysis move what fn and runs point to (the snapshot's
	// emitter) to the heap.
	q *[4]*level
	k uint
}

// walkLag is the depth of the walk's pipeline, in levels.
const walkLag = 3

// prefetchChunkBytes bounds the bytes of one level's chunks the walk
// prefetches ahead.
const prefetchChunkBytes = 2048

// after reports whether price ticks px comes after price ticks q in the
// walk's order.
func (w *orderWalk) after(px, q uint32) bool {
	if w.buy {
		return px < q
	}
	return px > q
}

func (w *orderWalk) visit(it lvl) bool {
	px := w.b.ticks(it.price)
	if w.hasTo && w.after(px, w.to.px()) {
		return false
	}
	prefetchLevel(it.l, 2*64)
	const mask = uint(len(w.q) - 1)
	q := w.q
	if l := q[(w.k-1)&mask]; l != nil {
		if l.long != nil {
			prefetchChunks(l.chunkAt(l.first), int(segChunks-(l.first-l.long.base))*16)
		}
	}
	if l := q[(w.k-2)&mask]; l != nil {
		budget := prefetchChunkBytes
		for k, end := l.first, l.first+uint64(l.nchunks()); k < end; k++ {
			c := l.chunkAt(k)
			n := min(budget, len(c.buf())*32)
			if n == 0 {
				break
			}
			prefetchOrders(c.p, n)
			budget -= n
		}
	}
	if l := q[(w.k-walkLag)&mask]; l != nil && !w.level(l) {
		return false
	}
	q[w.k&mask] = it.l
	w.k++
	return !(w.hasTo && px == w.to.px())
}

// level walks the orders of l that lie in the walk's range; it reports
// false once fn has.
func (w *orderWalk) level(l *level) bool {
	px := w.b.ticks(l.price)
	lo, hi := l.head, l.next
	if w.hasFrom && px == w.from.px() {
		lo = l.seek(w.from.sk)
	}
	if w.hasTo && px == w.to.px() {
		hi = l.seek(w.to.sk)
	}
	var ok bool
	if w.runs != nil {
		ok = l.walkRunsAhead(lo, hi, w.runs)
	} else {
		ok = l.walk(lo, hi, w.fn)
	}
	if !ok {
		w.stopped = true
		return false
	}
	return true
}

// run walks the side whose level tree is t. It takes the walk by value:
// the ring it points the walk at then lives on run's stack (see q).
func (w orderWalk) run(t *btree.BTreeG[lvl]) {
	var q [4]*level
	w.q, w.k = &q, 0
	visit := w.visit
	if w.hasFrom {
		t.AscendGreaterOrEqual(lvl{price: w.b.price(w.from.px())}, visit)
	} else {
		t.Ascend(visit)
	}
	for i := uint(walkLag); i > 0 && !w.stopped; i-- {
		if l := q[(w.k-i)&uint(len(q)-1)]; l != nil {
			w.level(l)
		}
	}
}

// walkOrders calls fn with every resting order of side si in price-time
// order until fn returns false.
func (b *book) walkOrders(si int, fn func(order) bool) {
	w := orderWalk{b: b, buy: si == 0, fn: fn}
	w.run(b.levels[si])
}

// Emit streams the partition's orders to s in stream order and returns how
// many it emitted and the wrapping sum of their record hashes (see
// [Frozen.NonOrderHash]).
func (p Partition) Emit(s RestingSink) (count, hashSum uint64, err error) {
	runs, _ := s.(RunSink)
	return p.emit(s, runs)
}

// EmitRuns is [Partition.Emit] into a RunSink: the same records and calls,
// without the check of the sink's kind Emit makes (a type assertion, which
// may allocate; see [Frozen.SnapshotRunsTo]).
func (p Partition) EmitRuns(s RunSink) (count, hashSum uint64, err error) {
	return p.emit(nil, s)
}

// emit streams the partition into rs, or into runs when it is not nil
// (then rs is nil or the same sink).
func (p Partition) emit(rs RestingSink, runs RunSink) (count, hashSum uint64, err error) {
	if p.st == nil {
		return 0, 0, nil
	}
	w := newEmitter(p.st.accts)
	w.rs, w.runSink = rs, runs
	runFn := w.runs
	for si := p.from.seg; si <= p.to.seg && si < p.st.segments(); si++ {
		b, side := p.st.seg(si)
		w.b, w.side = b, Side(side+1)
		w.run.Instrument, w.run.Side = b.id, w.side
		ow := orderWalk{b: b, buy: side == 0, runs: runFn,
			hasFrom: si == p.from.seg && !p.from.whole, from: p.from.key,
			hasTo: si == p.to.seg && !p.to.whole, to: p.to.key}
		ow.run(b.levels[side])
		if w.err != nil {
			return w.n, w.sum, w.err
		}
		if si == p.to.seg && !p.to.whole {
			break
		}
	}
	return w.n, w.sum, nil
}
