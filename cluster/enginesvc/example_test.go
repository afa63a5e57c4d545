package enginesvc_test

import (
	"fmt"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// A node hosting the matching engine: open, connect a session, send
// commands, run the duty cycle, read the released events, snapshot, stop.
func Example() {
	fsys := vfs.NewMem() // vfs.Default and a real directory in production
	svc := enginesvc.New(enginesvc.Options{})
	var clock int64
	released := 0
	node, err := cluster.Open(cluster.Options{
		FS: fsys, Dir: "node", Service: svc,
		TermLength: 64 * 1024, SegmentLength: 128 * 1024,
		FileSyncLevel: 1, // events are released once their command is synced
		Clock:         func() int64 { clock += 1000; return clock },
		Egress: func(session int64, msg []byte) {
			if wire.EventKind(msg) == engine.EvRelease {
				released++
			}
		},
	})
	if err != nil {
		panic(err)
	}
	session, _ := node.Connect("aeron:ipc", 102)
	var buf []byte
	for _, c := range []engine.Command{
		{Kind: engine.CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 7, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Source: 1, Seq: 2, Instrument: 7, OrderID: 1, Account: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5},
		{Kind: engine.CmdNewOrder, Source: 1, Seq: 3, Instrument: 7, OrderID: 2, Account: 2, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 3},
	} {
		buf, _ = wire.AppendCommand(buf[:0], &c)
		node.Offer(session, buf)
	}
	node.RequestSnapshot()
	for {
		if w, err := node.DoWork(); err != nil {
			panic(err)
		} else if w == 0 && node.Pending() == 0 {
			break
		}
	}
	fmt.Println("released:", released, "resting:", svc.Engine().Orders())
	if err := node.Close(); err != nil {
		panic(err)
	}
	// Output: released: 3 resting: 1
}
