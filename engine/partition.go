package engine

// The resting-order stream is a run of segments, one per (instrument, side)
// in stream order. Every side tree keeps subtree counts, so the order at any
// rank of a segment is found in O(log n): partitions are cut by rank,
// exactly, without walking a single order.

// pos is a place in the resting-order stream: segment seg, rank within it.
type pos struct {
	seg  int
	rank int
}

// Partition is one ordered slice of a frozen book's resting-order stream.
// The concatenation of [Frozen.Partitions] in order is exactly the
// resting-order stream of [Frozen.SnapshotTo]. A Partition is read-only and
// may be emitted on any goroutine.
type Partition struct {
	st       *state
	from, to pos // to is exclusive
	// Len is the number of orders in the partition.
	Len uint64
}

func (s *state) segments() int { return 2 * len(s.books) }

func (s *state) seg(i int) (*book, int) { return s.books[i/2], i % 2 }

// at returns the stream position of global rank r (r ≤ total).
func (s *state) at(r uint64) pos {
	for i := 0; i < s.segments(); i++ {
		b, side := s.seg(i)
		n := uint64(b.orders[side].Len())
		if r < n {
			return pos{seg: i, rank: int(r)}
		}
		r -= n
	}
	return pos{seg: s.segments()}
}

// Partitions cuts the view's resting orders into min(n, orders) ordered
// partitions whose sizes differ by at most one. Cutting costs O(n · (log
// orders + segments)), never a walk of orders. An empty book gives none.
func (f *Frozen) Partitions(n int) []Partition {
	st := &f.st
	total, _ := st.counts()
	if n < 1 || total == 0 {
		return nil
	}
	if uint64(n) > total {
		n = int(total)
	}
	parts := make([]Partition, n)
	for k := range parts {
		lo, hi := total*uint64(k)/uint64(n), total*uint64(k+1)/uint64(n)
		parts[k] = Partition{st: st, from: st.at(lo), to: st.at(hi), Len: hi - lo}
	}
	return parts
}

// Emit streams the partition's orders to s (nil: only count and hash) in
// stream order and returns how many it emitted and the wrapping sum of
// their record hashes (see [Frozen.NonOrderHash]).
func (p Partition) Emit(s RestingSink) (count, hashSum uint64, err error) {
	if p.st == nil {
		return 0, 0, nil
	}
	w := emitter{rs: s, accts: p.st.accts}
	for si := p.from.seg; si <= p.to.seg && si < p.st.segments(); si++ {
		b, side := p.st.seg(si)
		t := b.orders[side]
		start, end := 0, t.Len()
		if si == p.from.seg {
			start = p.from.rank
		}
		if si == p.to.seg {
			end = p.to.rank
		}
		if start >= end {
			continue
		}
		w.b, w.side = b, Side(side+1)
		if start == 0 && end == t.Len() {
			t.Walk(w.restingRun)
		} else {
			first, _ := t.GetAt(start)
			left := end - start
			t.Ascend(first, func(o order) bool {
				left--
				return w.resting(o) && left > 0
			})
		}
		if w.err != nil {
			return w.n, w.sum, w.err
		}
	}
	return w.n, w.sum, nil
}
