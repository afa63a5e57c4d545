package client_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
)

// A client sends commands to a node over TCP and reads the events of each,
// released once the command is durable in the node's log. (The node here
// runs in the same process, on a loopback port of its own.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.New(server.Options{Addr: "127.0.0.1:0",
		Node: cluster.Options{FS: vfs.NewMem(), Dir: "node", TermLength: 64 * 1024, SegmentLength: 256 * 1024}})
	if err != nil {
		panic(err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx) }()

	var mu sync.Mutex
	var events []string
	c, err := client.Dial(ctx, client.Options{
		Addr: srv.Addr().String(), ClientID: 42,
		OnEvent: func(ev *engine.Event) { // on the client's reader goroutine
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case engine.EvTrade:
				events = append(events, fmt.Sprintf("seq %d: trade %d@%d, taker %d, maker %d", ev.Seq, ev.Qty, ev.Price, ev.OrderID, ev.Maker))
			case engine.EvDepth:
				events = append(events, fmt.Sprintf("seq %d: depth %s %d: qty %d", ev.Seq, ev.Side, ev.Price, ev.Qty))
			default:
				events = append(events, fmt.Sprintf("seq %d: %s", ev.Seq, ev.Kind))
			}
		},
	})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []engine.Command{
		{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 7, Account: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 8, Account: 2, Side: engine.Buy, Type: engine.Limit, TIF: engine.IOC, Price: 100, Qty: 2},
	} {
		if _, err := c.Send(&cmd); err != nil { // Source and Seq are the client's
			panic(err)
		}
	}
	if err := c.Wait(ctx); err != nil { // every command has had its Release
		panic(err)
	}
	if err := c.Close(); err != nil {
		panic(err)
	}
	stop()
	if err := <-served; err != nil {
		panic(err)
	}
	mu.Lock()
	for _, e := range events {
		fmt.Println(e)
	}
	mu.Unlock()
	// Output:
	// seq 1: accepted
	// seq 1: release
	// seq 2: accepted
	// seq 2: depth sell 100: qty 5
	// seq 2: release
	// seq 3: accepted
	// seq 3: trade 2@100, taker 8, maker 7
	// seq 3: depth sell 100: qty 3
	// seq 3: release
}
