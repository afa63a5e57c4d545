package enginesvc_test

import (
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// egressLog collects each session's released messages, decoded.
type egressLog map[int64][]engine.Event

func (l egressLog) add(t *testing.T, sid int64, msg []byte) {
	var ev engine.Event
	switch k := wire.EventKind(msg); k {
	case wire.EvDuplicate:
		src, seq, err := wire.DecodeDuplicate(msg)
		if err != nil {
			t.Errorf("duplicate: %v", err)
		}
		ev = engine.Event{Kind: k, Source: src, Seq: seq}
	case wire.EvDepthSnapshotEnd:
		src, seq, inst, levels, err := wire.DecodeDepthSnapshotEnd(msg)
		if err != nil {
			t.Errorf("depth end: %v", err)
		}
		ev = engine.Event{Kind: k, Source: src, Seq: seq, Instrument: inst, Count: int64(levels)}
	default:
		if err := wire.DecodeEvent(msg, &ev); err != nil {
			t.Errorf("session %d: %v", sid, err)
		}
	}
	l[sid] = append(l[sid], ev)
}

func kinds(evs []engine.Event) []engine.EventKind {
	var out []engine.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

type depthNode struct {
	t    *testing.T
	node *cluster.Node
	svc  *enginesvc.Service
	out  egressLog
}

func openDepthNode(t *testing.T) *depthNode {
	d := &depthNode{t: t, svc: enginesvc.New(enginesvc.Options{}), out: egressLog{}}
	var clock int64
	n, err := cluster.Open(cluster.Options{FS: vfs.NewMem(), Dir: "node", Service: d.svc,
		TermLength: 64 * 1024, SegmentLength: 128 * 1024,
		Clock:  func() int64 { clock += 1000; return clock },
		Egress: func(sid int64, msg []byte) { d.out.add(t, sid, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	d.node = n
	t.Cleanup(func() { n.Close() })
	return d
}

func (d *depthNode) send(sid int64, msgs ...[]byte) {
	d.t.Helper()
	for _, m := range msgs {
		if err := d.node.Offer(sid, m); err != nil {
			d.t.Fatal(err)
		}
	}
	for {
		w, err := d.node.DoWork()
		if err != nil {
			d.t.Fatal(err)
		}
		if w == 0 && d.node.Pending() == 0 {
			return
		}
	}
}

func (d *depthNode) cmd(c engine.Command) []byte {
	b, err := wire.AppendCommand(nil, &c)
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

func limit(src, seq, id uint64, side engine.Side, px, qty int64) engine.Command {
	return engine.Command{Kind: engine.CmdNewOrder, Source: src, Seq: seq, Instrument: 1, OrderID: id, Account: src,
		Side: side, Type: engine.Limit, TIF: engine.GTC, Price: px, Qty: qty}
}

func TestDepthSubscription(t *testing.T) {
	d := openDepthNode(t)
	a, _ := d.node.Connect("a", 1)
	b, _ := d.node.Connect("b", 1)
	c, _ := d.node.Connect("c", 1)
	d.send(a,
		d.cmd(engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000}),
		d.cmd(engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: 2, Instrument: 2, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000}),
		d.cmd(limit(1, 3, 10, engine.Buy, 100, 5)),
		d.cmd(limit(1, 4, 11, engine.Buy, 99, 7)),
		d.cmd(limit(1, 5, 12, engine.Sell, 105, 2)),
	)
	clear(d.out)
	// b subscribes to 1 with 1 level per side; c to instrument 2.
	d.send(b, wire.AppendSubscribeDepth(nil, 2, 0, 1, 1))
	d.send(c, wire.AppendSubscribeDepth(nil, 3, 0, 2, 0))
	got := d.out[b]
	want := []engine.Event{
		{Kind: engine.EvDepth, Source: 2, Instrument: 1, Side: engine.Buy, Price: 100, Qty: 5, Count: 1},
		{Kind: engine.EvDepth, Source: 2, Instrument: 1, Side: engine.Sell, Price: 105, Qty: 2, Count: 1},
		{Kind: wire.EvDepthSnapshotEnd, Source: 2, Instrument: 1, Count: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("subscriber got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("snapshot %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(d.out[c]) != 1 || d.out[c][0].Kind != wire.EvDepthSnapshotEnd || d.out[c][0].Count != wire.DefaultDepthLevels {
		t.Errorf("empty instrument's snapshot: %+v", d.out[c])
	}
	if d.svc.DepthSubscribers(1) != 1 || d.svc.DepthSubscribers(2) != 1 {
		t.Fatalf("subscribers %d %d", d.svc.DepthSubscribers(1), d.svc.DepthSubscribers(2))
	}
	if d.svc.Skipped != 0 {
		t.Fatalf("skipped %d", d.svc.Skipped)
	}
	clear(d.out)

	// a's trade on instrument 1 reaches b's depth, not c's.
	d.send(a, d.cmd(limit(1, 6, 13, engine.Sell, 100, 2)))
	var aDepth []engine.Event
	for _, e := range d.out[a] {
		if e.Kind == engine.EvDepth {
			aDepth = append(aDepth, e)
		}
	}
	if len(aDepth) == 0 || len(d.out[b]) != len(aDepth) {
		t.Fatalf("a's depth %+v, b got %+v", aDepth, d.out[b])
	}
	for i := range aDepth {
		if d.out[b][i] != aDepth[i] {
			t.Errorf("b's depth %d: %+v, want %+v", i, d.out[b][i], aDepth[i])
		}
	}
	if len(d.out[c]) != 0 {
		t.Errorf("c (instrument 2) got %+v", d.out[c])
	}
	// The subscriber's own command's depth comes once, in its answer.
	clear(d.out)
	d.send(b, d.cmd(limit(2, 1, 20, engine.Buy, 98, 1)))
	n := 0
	for _, e := range d.out[b] {
		if e.Kind == engine.EvDepth {
			n++
		}
	}
	if n != 1 {
		t.Errorf("subscriber's own order: %d depth events in %v", n, kinds(d.out[b]))
	}

	// Closing b ends its subscription.
	if err := d.node.CloseSession(b); err != nil {
		t.Fatal(err)
	}
	d.send(a)
	if d.svc.DepthSubscribers(1) != 0 || d.svc.DepthSubscribers(2) != 1 {
		t.Fatalf("after close: subscribers %d %d", d.svc.DepthSubscribers(1), d.svc.DepthSubscribers(2))
	}
	if d.svc.Engine().Orders() != 4 {
		t.Fatalf("orders %d: the subscriptions changed the engine", d.svc.Engine().Orders())
	}
}

func TestDuplicateAnswered(t *testing.T) {
	d := openDepthNode(t)
	a, _ := d.node.Connect("a", 1)
	def := d.cmd(engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	o := d.cmd(limit(1, 2, 10, engine.Buy, 100, 5))
	d.send(a, def, o)
	h := d.svc.Engine().StateHash()
	clear(d.out)
	d.send(a, o, def)
	want := []engine.Event{{Kind: wire.EvDuplicate, Source: 1, Seq: 2}, {Kind: wire.EvDuplicate, Source: 1, Seq: 1}}
	if got := d.out[a]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("resent: %+v, want %+v", got, want)
	}
	if d.svc.Engine().StateHash() != h {
		t.Fatal("a duplicate changed the engine")
	}
}

// fakeCluster is a Cluster whose Offer counts.
type fakeCluster struct{ offers int }

func (f *fakeCluster) LogPosition() int64               { return 0 }
func (f *fakeCluster) Time() int64                      { return 0 }
func (f *fakeCluster) LeadershipTermID() int64          { return 0 }
func (f *fakeCluster) Role() cluster.Role               { return cluster.RoleLeader }
func (f *fakeCluster) ScheduleTimer(int64, int64) error { return nil }
func (f *fakeCluster) CancelTimer(int64) bool           { return false }
func (f *fakeCluster) Offer(int64, []byte) bool         { f.offers++; return true }
func (f *fakeCluster) Idle() error                      { return nil }

// The command path allocates nothing with no subscriber, nor with a
// subscriber to another instrument, nor for the fan-out.
func TestSessionMessageAllocs(t *testing.T) {
	svc := enginesvc.New(enginesvc.Options{})
	fc := &fakeCluster{}
	if err := svc.OnStart(fc, nil); err != nil {
		t.Fatal(err)
	}
	s1 := &cluster.ClientSession{ID: 1}
	s2 := &cluster.ClientSession{ID: 2}
	var buf []byte
	var seq uint64
	apply := func(c engine.Command) {
		seq++
		c.Source, c.Seq = 1, seq
		buf, _ = wire.AppendCommand(buf[:0], &c)
		if err := svc.OnSessionMessage(s1, 1, buf, 0); err != nil {
			t.Fatal(err)
		}
	}
	apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 2, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	id := uint64(100)
	round := func() {
		id++
		apply(limit(0, 0, id, engine.Buy, 100, 5))
		apply(engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: id})
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Errorf("no subscriber: %.1f allocs per round", a)
	}
	sub := wire.AppendSubscribeDepth(nil, 2, 0, 2, 5)
	if err := svc.OnSessionMessage(s2, 1, sub, 0); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Errorf("subscriber to another instrument: %.1f allocs per round", a)
	}
	sub = wire.AppendSubscribeDepth(nil, 2, 0, 1, 5)
	if err := svc.OnSessionMessage(s2, 1, sub, 0); err != nil {
		t.Fatal(err)
	}
	before := fc.offers
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Errorf("subscriber: %.1f allocs per round", a)
	}
	// 201 rounds of 2 commands, each with Accepted, Depth, Release (+
	// Cancelled) and one Depth fanned out.
	if got := fc.offers - before; got != 201*(3+1+4+1) {
		t.Errorf("%d offers in 201 rounds, want %d", got, 201*9)
	}
}
