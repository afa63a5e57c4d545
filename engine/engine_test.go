package engine

import (
	"fmt"
	"strings"
	"testing"
)

type script struct {
	t   *testing.T
	e   *Engine
	seq uint64
}

func (s *script) do(c Command) string {
	s.seq++
	c.Source, c.Seq = 1, s.seq
	if c.Kind == 0 {
		c.Kind = CmdNewOrder
	}
	if c.Kind == CmdNewOrder && c.Instrument == 0 {
		c.Instrument = 1
	}
	var b strings.Builder
	for _, ev := range s.e.Apply(&c) {
		fmt.Fprintf(&b, "%s", ev.Kind)
		switch ev.Kind {
		case EvRejected, EvCancelled:
			fmt.Fprintf(&b, "(%d %s q=%d r=%d)", ev.OrderID, ev.Reason, ev.Qty, ev.Remaining)
		case EvTrade:
			fmt.Fprintf(&b, "(%d<-%d %d@%d)", ev.OrderID, ev.Maker, ev.Qty, ev.Price)
		case EvDepth:
			fmt.Fprintf(&b, "(%s %d=%d/%d)", ev.Side, ev.Price, ev.Qty, ev.Count)
		case EvTriggerFired, EvAccepted, EvReplaced:
			fmt.Fprintf(&b, "(%d)", ev.OrderID)
		}
		b.WriteByte(' ')
	}
	if err := s.e.Check(); err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

func newScript(t *testing.T) *script {
	s := &script{t: t, e: New()}
	s.do(Command{Kind: CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	return s
}

func limit(id uint64, side Side, price, qty int64) Command {
	return Command{OrderID: id, Account: id, Side: side, Type: Limit, TIF: GTC, Price: price, Qty: qty}
}

func TestScriptBasics(t *testing.T) {
	s := newScript(t)
	want := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	want(s.do(limit(1, Sell, 101, 5)), "accepted(1) depth(sell 101=5/1) release")
	want(s.do(limit(2, Sell, 101, 5)), "accepted(2) depth(sell 101=10/2) release")
	want(s.do(limit(3, Buy, 102, 7)), "accepted(3) trade(3<-1 5@101) trade(3<-2 2@101) depth(sell 101=3/1) release")
	want(s.do(limit(2, Buy, 90, 7)), "rejected(2 duplicate_order_id q=0 r=0) release")
	c := limit(4, Buy, 95, 1)
	c.Post = true
	want(s.do(c), "accepted(4) depth(buy 95=1/1) release")
	c = limit(5, Buy, 200, 1)
	c.Post = true
	want(s.do(c), "rejected(5 post_only_would_cross q=0 r=0) release")
	want(s.do(Command{Kind: CmdModify, Instrument: 1, OrderID: 2, Price: 101, Qty: 1}), "accepted(2) replaced(2) depth(sell 101=1/1) release")
	st := Command{OrderID: 6, Account: 6, Side: Buy, Type: Stop, TIF: IOC, Ref: RefLastTrade, Stop: 101, Qty: 1}
	want(s.do(st), "accepted(6) trigger_fired(6) trade(6<-2 1@101) depth(sell 101=0/0) release")
	c = limit(7, Sell, 95, 3)
	c.Account, c.STP = 4, STPDecrement
	want(s.do(c), "accepted(7) cancelled(4 self_trade q=1 r=0) cancelled(7 self_trade q=1 r=2) depth(buy 95=0/0) depth(sell 95=2/1) release")
	h := s.e.StateHash()
	r := New()
	rs := r.Restorer()
	if err := s.e.SnapshotTo(rs); err != nil || rs.Err() != nil {
		t.Fatal(err, rs.Err())
	}
	if r.StateHash() != h {
		t.Fatal("hash after restore differs")
	}
}
