package engine

import (
	"math/rand"
	"testing"
)

func BenchmarkScratchMove(b *testing.B) {
	e := New()
	var seq uint64
	ap := func(c Command) { seq++; c.Source = 1; c.Seq = seq; e.Apply(&c) }
	ap(Command{Kind: CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 100000})
	r := rand.New(rand.NewSource(1))
	type o struct{ side Side; price int64 }
	live := map[uint64]o{}
	for id := uint64(1); id <= 1000; id++ {
		side := Buy
		p := int64(10000 - 1 - r.Intn(375))
		if id%2 == 0 { side = Sell; p = int64(10000 + r.Intn(375)) }
		ap(Command{Kind: CmdNewOrder, Instrument: 1, OrderID: id, Account: id % 50, Side: side, Type: Limit, TIF: GTC, Price: p, Qty: 10})
		live[id] = o{side, p}
	}
	cmds := make([]Command, 100000)
	for i := range cmds {
		id := uint64(1 + r.Intn(1000))
		lo := live[id]
		np := int64(10000 - 1 - r.Intn(375))
		if lo.side == Sell { np = int64(10000 + r.Intn(375)) }
		if np == lo.price { np++ ; if lo.side==Buy && np >= 10000 { np -= 2 } }
		cmds[i] = Command{Kind: CmdModify, Instrument: 1, OrderID: id, Price: np, Qty: 10}
		live[id] = o{lo.side, np}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &cmds[i%len(cmds)]
		if i%len(cmds) == 0 && i > 0 { b.StopTimer(); b.StartTimer() }
		seq++
		c.Source, c.Seq = 1, seq
		ev := e.Apply(c)
		_ = ev
	}
}
