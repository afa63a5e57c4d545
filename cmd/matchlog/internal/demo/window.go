package demo

import (
	"fmt"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// The in-flight windows.
//
// The node closes a connection whose egress queue grows past
// server.Server.WriteQueueBytes (a slow consumer). Every event the node
// queues for the demo's clients belongs to one of their outstanding
// commands (sent, Release not yet read): neither client subscribes to
// depth. So a client whose outstanding commands' events fit the queue can
// never be dropped, however late the machine lets it read. The demo sends
// only two shapes of command, each with a fixed set of fixed-size events:
// a preload limit order rests without crossing (bids below the mid, asks
// above), answered Accepted, Depth, Release; a probe is an IOC buy below
// every ask, answered Accepted, Cancelled, Release. eventBytes measures
// each shape on a scratch engine, and each window is the number of such
// commands whose framed events fill at most half the queue (windowMargin):
// what the preload and the probes may have outstanding.

// windowMargin is the share of the egress queue the demo's outstanding
// events may fill at most.
const windowMargin = 2

// eventBytes returns the framed egress bytes of one preload order and of
// one probe, measured by applying each to a scratch engine holding one
// instrument and one resting order of each side.
func eventBytes() (preload, probe int) {
	e := engine.New()
	seq := uint64(0)
	apply := func(c engine.Command) int {
		seq++
		c.Source, c.Seq = preloadClient, seq
		n := 0
		var buf []byte
		for _, ev := range e.Apply(&c) {
			buf = wire.AppendEvent(buf[:0], &ev)
			n += wiresbe.FrameHeaderLength + len(buf)
		}
		return n
	}
	define := apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 2 * mid})
	order := engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, Type: engine.Limit, TIF: engine.GTC, Account: 1, Qty: 100}
	order.OrderID, order.Side, order.Price = 1, engine.Sell, mid+levelsSide
	ask := apply(order)
	order.OrderID, order.Side, order.Price = 2, engine.Buy, mid-levelsSide
	bid := apply(order)
	p := probeCommand()
	p.OrderID = 3
	return max(define, ask, bid), apply(p)
}

// probeCommand is a probe: an IOC buy that crosses nothing (OrderID and
// Instrument set per probe).
func probeCommand() engine.Command {
	return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, Account: 999_999, Side: engine.Buy,
		Type: engine.Limit, TIF: engine.IOC, Price: probePrice, Qty: 1}
}

// windows returns the most preload orders and probes the demo keeps
// outstanding for a node whose egress queue holds queueBytes, and an
// error when a requested preload window (0: derived) would not fit.
func windows(queueBytes, requested int) (preload, probe int, err error) {
	pb, qb := eventBytes()
	budget := queueBytes / windowMargin
	preload, probe = budget/pb, budget/qb
	if preload < 1 || probe < 1 {
		return 0, 0, fmt.Errorf("demo: the node's egress queue of %d bytes cannot hold the events of one order (%d bytes) with a margin of %d", queueBytes, max(pb, qb), windowMargin)
	}
	if requested > preload {
		return 0, 0, fmt.Errorf("demo: a window of %d orders in flight could overflow the node's egress queue (%d bytes, %d bytes of events per order, margin %d): at most %d", requested, queueBytes, pb, windowMargin, preload)
	}
	if requested > 0 {
		preload = requested
	}
	return preload, probe, nil
}
