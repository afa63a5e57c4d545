package server_test

import (
	"context"
	"fmt"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
)

// A Go program that serves the matching engine over TCP: a node on a
// loopback port, one client's commands, a shutdown that takes a snapshot,
// and a restart that comes back with the same state (the snapshot loaded,
// the state hash checked).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fsys := vfs.NewMem() // vfs.Default and a real directory in production
	opts := server.Options{
		Addr:               "127.0.0.1:0", // loopback only: the protocol has no authentication
		Node:               cluster.Options{FS: fsys, Dir: "node", FileSyncLevel: 1, TermLength: 64 * 1024, SegmentLength: 256 * 1024},
		SnapshotOnShutdown: true,
	}
	start := func() (*server.Server, context.CancelFunc, chan error) {
		srv, err := server.New(opts) // listens, then opens (or recovers) the node
		if err != nil {
			panic(err)
		}
		serveCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(serveCtx) }()
		return srv, stop, done
	}

	srv, stop, done := start()
	c, err := client.Dial(ctx, client.Options{Addr: srv.Addr().String(), ClientID: 9})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []engine.Command{
		{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Account: 1, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 99, Qty: 10},
	} {
		if _, err := c.Send(&cmd); err != nil {
			panic(err)
		}
	}
	if err := c.Wait(ctx); err != nil {
		panic(err)
	}
	before, err := srv.StateHash(ctx)
	if err != nil {
		panic(err)
	}
	_ = c.Close()
	stop() // SIGTERM in matchlog node: sessions closed, snapshot taken, node closed
	if err := <-done; err != nil {
		panic(err)
	}

	srv, stop, done = start()
	after, err := srv.StateHash(ctx)
	if err != nil {
		panic(err)
	}
	var orders int
	var replayed int64
	err = srv.Inspect(ctx, func(node *cluster.Node, svc *enginesvc.Service) {
		orders, replayed = svc.Engine().Orders(), node.Recovery().ReplayedEntries
	})
	if err != nil {
		panic(err)
	}
	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	fmt.Println("same state after restart:", before == after, "resting orders:", orders, "log entries replayed:", replayed)
	// Output: same state after restart: true resting orders: 1 log entries replayed: 0
}
