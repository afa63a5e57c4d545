package engine

import "testing"

// TestBestAcrossWideGaps matches through levels further apart than the
// occupancy map reads before it falls back to the tree, on both sides,
// with empty levels kept in between.
func TestBestAcrossWideGaps(t *testing.T) {
	s := newScript(t)
	s.do(Command{Kind: CmdDefineInstrument, Instrument: 2, Tick: 5, Lot: 1, MinPrice: 5, MaxPrice: 500_000})
	at := func(c Command) Command { c.Instrument = 2; return c }
	// emptyLevels leaves empty levels at prices: an order placed and
	// cancelled at each, with ids from id.
	emptyLevels := func(side Side, id uint64, prices ...int64) {
		for i, p := range prices {
			s.do(at(limit(id+uint64(i), side, p, 1)))
			s.do(Command{Kind: CmdCancel, Instrument: 2, OrderID: id + uint64(i)})
		}
	}
	// Empty levels between the ones that match.
	emptyLevels(Sell, 100, 1_005, 40_000, 60_000)
	s.do(at(limit(1, Sell, 1_000, 1)))
	s.do(at(limit(2, Sell, 50_000, 1)))
	s.do(at(limit(3, Sell, 400_000, 1)))
	got := s.do(at(Command{OrderID: 4, Account: 4, Side: Buy, Type: Limit, TIF: IOC, Price: 450_000, Qty: 5}))
	want := "accepted(4) trade(4<-1 1@1000) trade(4<-2 1@50000) trade(4<-3 1@400000) cancelled(4 ioc q=2 r=0) " +
		"depth(sell 1000=0/0) depth(sell 50000=0/0) depth(sell 400000=0/0) release"
	if got != want {
		t.Fatalf("sweep:\n got %s\nwant %s", got, want)
	}
	emptyLevels(Buy, 200, 400_000, 1_005, 20_000)
	s.do(at(limit(5, Buy, 300_000, 1)))
	s.do(at(limit(6, Buy, 10_000, 1)))
	s.do(at(limit(7, Buy, 5, 1)))
	// Empty levels in front of the best bid (400,000) and between.
	d := s.e.Depth(2, Buy, 5, nil)
	if len(d) != 3 || d[0].Price != 300_000 || d[1].Price != 10_000 || d[2].Price != 5 {
		t.Fatalf("bid depth: %v", d)
	}
	if d := s.e.Depth(2, Buy, 1, nil); len(d) != 1 || d[0].Price != 300_000 {
		t.Fatalf("best bid: %v", d)
	}
	got = s.do(at(Command{OrderID: 8, Account: 8, Side: Sell, Type: Limit, TIF: IOC, Price: 5, Qty: 3}))
	want = "accepted(8) trade(8<-5 1@300000) trade(8<-6 1@10000) trade(8<-7 1@5) " +
		"depth(buy 300000=0/0) depth(buy 10000=0/0) depth(buy 5=0/0) release"
	if got != want {
		t.Fatalf("sweep:\n got %s\nwant %s", got, want)
	}
	if d := s.e.Depth(2, Buy, 5, nil); len(d) != 0 {
		t.Fatalf("depth after the sweep: %v", d)
	}
}

// TestEmptyBudgetFollowsPrices: a book whose prices trend away leaves
// emptied levels behind; once the engine keeps keepEmpty of them, a level
// that empties takes the place of the one farthest in front of its side,
// so the kept levels are the latest prices, not the first ones.
func TestEmptyBudgetFollowsPrices(t *testing.T) {
	s := newScript(t)
	s.do(Command{Kind: CmdDefineInstrument, Instrument: 2, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 100_000})
	const n = keepEmpty + 500
	for i := range n {
		id := uint64(i + 1)
		c := limit(id, Sell, 1_000+int64(i), 1)
		c.Instrument = 2
		s.do(c)
		s.do(Command{Kind: CmdCancel, Instrument: 2, OrderID: id})
	}
	b := s.e.byID[2]
	if s.e.lp.empties != keepEmpty || b.levels[1].Len() != keepEmpty {
		t.Fatalf("%d empty levels kept, %d in the tree, want %d", s.e.lp.empties, b.levels[1].Len(), keepEmpty)
	}
	if b.lmap[1].get(1_000+n-1) == nil || b.lmap[1].get(1_000+n-keepEmpty) == nil {
		t.Fatal("the latest emptied levels are not kept")
	}
	if b.lmap[1].get(1_000+n-keepEmpty-1) != nil || b.lmap[1].get(1_000) != nil {
		t.Fatal("the first emptied levels are still kept")
	}
}
