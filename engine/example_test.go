package engine_test

import (
	"fmt"

	"github.com/matchlog/matchlog/engine"
)

func Example() {
	e := engine.New()
	seq := uint64(0)
	apply := func(c engine.Command) {
		seq++
		c.Source, c.Seq = 1, seq
		for _, ev := range e.Apply(&c) {
			switch ev.Kind {
			case engine.EvTrade:
				fmt.Printf("%s taker=%d maker=%d %d@%d\n", ev.Kind, ev.OrderID, ev.Maker, ev.Qty, ev.Price)
			case engine.EvDepth:
				fmt.Printf("%s %s %d: qty=%d orders=%d\n", ev.Kind, ev.Side, ev.Price, ev.Qty, ev.Count)
			default:
				fmt.Printf("%s %d\n", ev.Kind, ev.OrderID)
			}
		}
	}
	apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 7, Tick: 5, Lot: 1, MinPrice: 5, MaxPrice: 100000})
	apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: 7, OrderID: 1, Account: 10,
		Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 1005, Qty: 3})
	apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: 7, OrderID: 2, Account: 20,
		Side: engine.Buy, Type: engine.Limit, TIF: engine.IOC, Price: 1010, Qty: 5})
	fmt.Println(e.Depth(7, engine.Sell, 10, nil))
	// Output:
	// accepted 0
	// release 0
	// accepted 1
	// depth sell 1005: qty=3 orders=1
	// release 0
	// accepted 2
	// trade taker=2 maker=1 3@1005
	// cancelled 2
	// depth sell 1005: qty=0 orders=0
	// release 0
	// []
}
