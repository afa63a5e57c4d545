package engine

import "testing"

// TestRebuildFitsChunkList: a level rebuilt into larger chunks does not
// keep the chunk list it grew at the smaller size (40 bytes a chunk of
// heap per level otherwise).
func TestRebuildFitsChunkList(t *testing.T) {
	e := New()
	e.Apply(&Command{Kind: CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	n := maxChunks<<minShift + 1 // one order past maxChunks chunks of the smallest size
	for id := 1; id <= n; id++ {
		c := Command{Kind: CmdNewOrder, Source: 1, Seq: uint64(id + 1), Instrument: 1, OrderID: uint64(id), Account: 1, Side: Buy,
			Type: Limit, TIF: GTC, Price: 100, Qty: 1}
		if ev := e.Apply(&c); ev[0].Kind != EvAccepted {
			t.Fatalf("order %d: %+v", id, ev[0])
		}
	}
	l := e.byID[1].lmap[0].get(100)
	if l.shift == minShift {
		t.Fatalf("level of %d orders was not rebuilt into larger chunks", n)
	}
	if want := listCap(len(l.chunks)); cap(l.chunks) != want {
		t.Fatalf("level of %d chunks keeps a chunk list of capacity %d, want %d", len(l.chunks), cap(l.chunks), want)
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
