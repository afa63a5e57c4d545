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
	l := e.byID[1].lmap[0][100]
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
