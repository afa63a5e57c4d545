package engine

import "testing"

// TestGrowthStaysInline: a level of the smallest chunk size that is full
// (maxChunks chunks) is rebuilt into larger chunks before its next order,
// not moved to the long form for that one order and rebuilt after it: the
// order allocates nothing once the pools are warm.
func TestGrowthStaysInline(t *testing.T) {
	e := New()
	e.Apply(&Command{Kind: CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	seq, id := uint64(1), uint64(0)
	var c Command // one command, reused: the measured call allocates no command
	order := func(side Side, price int64) {
		seq++
		id++
		c = Command{Kind: CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: id, Account: 1, Side: side,
			Type: Limit, TIF: GTC, Price: price, Qty: 1}
		if ev := e.Apply(&c); ev[0].Kind != EvAccepted {
			t.Fatalf("order %d: %+v", id, ev[0])
		}
	}
	add := func(price int64) { order(Buy, price) }
	// Asks far away give every segment of the order index its table, so
	// the measured order's entry allocates none.
	for range 4096 {
		order(Sell, 900)
	}
	const full = maxChunks << minShift
	// Two levels of full orders: AllocsPerRun's warm-up call grows the
	// first, its measured call the second.
	for range full {
		add(100)
		add(101)
	}
	b := e.byID[1]
	for _, p := range []int64{100, 101} {
		if l := b.lmap[0].get(p); l.shift != minShift || !l.inlineFull() {
			t.Fatalf("level %d: shift %d, %d chunks, next %d: not a full level of the smallest chunks", p, l.shift, l.nc, l.next)
		}
	}
	price := int64(99)
	allocs := testing.AllocsPerRun(1, func() {
		price++
		add(price)
	})
	for _, p := range []int64{100, 101} {
		if l := b.lmap[0].get(p); l.shift == minShift || l.long != nil {
			t.Fatalf("level %d of %d orders: shift %d, long form %v; want larger chunks in the inline list", p, l.count, l.shift, l.long != nil)
		}
	}
	if allocs != 0 {
		t.Fatalf("growing a full level allocates %.0f times, want 0", allocs)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestGrowthKeepsFewSmallBuffers: the small buffers a growing book gives
// back as its levels move to larger chunks are pooled only up to
// growKeepBufs (each pooled buffer pins the slab it was carved from).
func TestGrowthKeepsFewSmallBuffers(t *testing.T) {
	e := New()
	e.Apply(&Command{Kind: CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20})
	perLevel := maxChunks<<minShift + 1
	levels := 2 * maxFreeBufs(minShift) / maxChunks // enough to fill the full bound twice over
	seq, id := uint64(1), uint64(0)
	add := func(p int) {
		seq++
		id++
		c := Command{Kind: CmdNewOrder, Source: 1, Seq: seq, Instrument: 1, OrderID: id, Account: 1, Side: Buy,
			Type: Limit, TIF: GTC, Price: int64(1000 + p), Qty: 1}
		if ev := e.Apply(&c); ev[0].Kind != EvAccepted {
			t.Fatalf("order %d: %+v", id, ev[0])
		}
	}
	// Fill every level to its last small chunk first, then grow each one,
	// so the buffers the rebuilds give back are not taken again at once.
	for p := range levels {
		for range perLevel - 1 {
			add(p)
		}
	}
	for p := range levels {
		add(p)
	}
	if n := len(e.lp.bufs[classOf(minShift)]); n > growKeepBufs {
		t.Fatalf("%d small buffers pooled after %d levels grew, want at most %d", n, levels, growKeepBufs)
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
}
