package engine

import "math"

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
	// Estimate is the approximate number of orders in the partition.
	Estimate uint64
}

func (s *state) segments() int { return 2 * len(s.books) }

func (s *state) seg(i int) (*book, int) { return s.books[i/2], i % 2 }

// Partitions cuts the view's resting orders into at most n ordered
// partitions of about equal size. Cuts are found from the level totals, so
// cutting costs O(levels), never a walk of orders; a level larger than a
// partition is cut inside by interpolating arrival sequences between its
// first and last order. An empty book gives no partitions.
func (f *Frozen) Partitions(n int) []Partition { return f.AppendPartitions(nil, n) }

// AppendPartitions is [Frozen.Partitions] appending to dst: with enough
// capacity in dst it allocates nothing, so a snapshot taker can reuse one
// slice across takes.
func (f *Frozen) AppendPartitions(dst []Partition, n int) []Partition {
	st := &f.st
	total, _ := st.counts()
	if n < 1 || total == 0 {
		return dst
	}
	if uint64(n) > total {
		n = int(total)
	}
	base := len(dst)
	target := (total + uint64(n) - 1) / uint64(n)
	// Each partition is appended when its first cut is found; its
	// Estimate is the orders counted until the next cut.
	dst = append(dst, Partition{st: st, from: cut{seg: 0, whole: true}})
	parts := func() int { return len(dst) - base }
	var acc, placed uint64 // orders in the current partition so far; in earlier ones
	add := func(c cut, est uint64) {
		dst[len(dst)-1].Estimate = est
		placed += est
		dst = append(dst, Partition{st: st, from: c})
	}
	for si := 0; si < st.segments() && parts() < n; si++ {
		b, side := st.seg(si)
		b.levels[side].Ascend(func(l *level) bool {
			cnt := uint64(l.count)
			var used uint64 // orders of this level already placed before a cut
			for acc+cnt-used > target && parts() < n {
				take := target - acc
				if used+take == 0 {
					add(cut{seg: si, key: order{pa: pxAcct(b.ticks(l.price), 0)}}, acc)
					acc = 0
					continue
				}
				k, ok := levelCutKey(b, side, l, used+take)
				if last := dst[len(dst)-1].from; !ok || (last.seg == si && !last.whole && last.key == k) {
					break
				}
				add(cut{seg: si, key: k}, acc+take)
				acc = 0
				used += take
			}
			acc += cnt - used
			return parts() < n
		})
	}
	dst[len(dst)-1].Estimate = total - placed
	for i := base; i < len(dst); i++ {
		dst[i].to = cut{seg: st.segments(), whole: true}
		if i+1 < len(dst) {
			dst[i].to = dst[i+1].from
		}
	}
	return dst
}

// levelCutKey picks the key that leaves about take of the level's orders
// before it, by interpolating between the arrival sequences of the level's
// first and last orders. It reports false when the level cannot be cut.
func levelCutKey(b *book, side int, l *level, take uint64) (order, bool) {
	t := b.orders[side]
	var lo, hi uint64
	found := false
	px := b.ticks(l.price)
	t.AscendGreaterOrEqual(order{pa: pxAcct(px, 0)}, func(o order) bool {
		lo, found = o.seq(), o.px() == px
		return false
	})
	if !found {
		return order{}, false
	}
	t.DescendLessOrEqual(order{pa: pxAcct(px, 0), sk: math.MaxUint64}, func(o order) bool {
		hi = o.seq()
		return false
	})
	if hi <= lo+1 {
		return order{}, false
	}
	seq := lo + uint64(float64(hi-lo)*float64(take)/float64(l.count))
	if seq <= lo {
		seq = lo + 1
	}
	if seq > hi {
		seq = hi
	}
	return order{pa: pxAcct(px, 0), sk: seq << skSeqPos}, true
}

// Emit streams the partition's orders to s in stream order and returns how
// many it emitted and the wrapping sum of their record hashes (see
// [Frozen.NonOrderHash]).
func (p Partition) Emit(s RestingSink) (count, hashSum uint64, err error) {
	if p.st == nil {
		return 0, 0, nil
	}
	w := emitter{rs: s, accts: p.st.accts}
	fn := w.resting
	for si := p.from.seg; si <= p.to.seg && si < p.st.segments(); si++ {
		b, side := p.st.seg(si)
		w.b, w.side = b, Side(side+1)
		t := b.orders[side]
		startWhole := si != p.from.seg || p.from.whole
		endWhole := si != p.to.seg || p.to.whole
		switch {
		case startWhole && endWhole:
			t.Ascend(fn)
		case startWhole:
			t.AscendLessThan(p.to.key, fn)
		case endWhole:
			t.AscendGreaterOrEqual(p.from.key, fn)
		default:
			t.AscendRange(p.from.key, p.to.key, fn)
		}
		if w.err != nil {
			return w.n, w.sum, w.err
		}
		if si == p.to.seg && !p.to.whole {
			break
		}
	}
	return w.n, w.sum, nil
}
