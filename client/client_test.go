package client_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/server"
)

type served struct {
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error
}

func serve(t *testing.T, opts server.Options) *served {
	t.Helper()
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{srv: srv, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *served) stop(t *testing.T) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("Serve did not return")
	}
}

func nodeOpts(fsys vfs.FS, dir string) cluster.Options {
	return cluster.Options{FS: fsys, Dir: dir, TermLength: 64 * 1024, SegmentLength: 256 * 1024}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recorder collects a client's callbacks.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
	depth  []engine.Event
	dups   []uint64
	ends   []uint32
}

func (r *recorder) opts(addr string, id uint64) client.Options {
	return client.Options{Addr: addr, ClientID: id,
		OnEvent:            func(ev *engine.Event) { r.mu.Lock(); r.events = append(r.events, *ev); r.mu.Unlock() },
		OnDepth:            func(ev *engine.Event) { r.mu.Lock(); r.depth = append(r.depth, *ev); r.mu.Unlock() },
		OnDuplicate:        func(_, seq uint64) { r.mu.Lock(); r.dups = append(r.dups, seq); r.mu.Unlock() },
		OnDepthSnapshotEnd: func(inst uint32) { r.mu.Lock(); r.ends = append(r.ends, inst); r.mu.Unlock() },
	}
}

func (r *recorder) snapshot() (evs, depth []engine.Event, dups []uint64, ends []uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.Event(nil), r.events...), append([]engine.Event(nil), r.depth...),
		append([]uint64(nil), r.dups...), append([]uint32(nil), r.ends...)
}

func define(inst uint32) *engine.Command {
	return &engine.Command{Kind: engine.CmdDefineInstrument, Instrument: inst, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}
}

func order(inst uint32, id uint64, side engine.Side, px, qty int64) *engine.Command {
	return &engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id, Account: id % 5, Side: side,
		Type: engine.Limit, TIF: engine.GTC, Price: px, Qty: qty}
}

func mustSend(t *testing.T, c *client.Client, cmd *engine.Command) uint64 {
	t.Helper()
	seq, err := c.Send(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func TestClientEndToEnd(t *testing.T) {
	s := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(vfs.NewMem(), "node")})
	addr := s.srv.Addr().String()
	ctx := ctxT(t)
	var ra, rb recorder
	a, err := client.Dial(ctx, ra.opts(addr, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := client.Dial(ctx, rb.opts(addr, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if seq := mustSend(t, a, define(1)); seq != 1 {
		t.Fatalf("first seq %d", seq)
	}
	mustSend(t, a, order(1, 10, engine.Sell, 100, 5))
	mustSend(t, a, order(1, 11, engine.Sell, 101, 5))
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.SubscribeDepth(1, 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "depth snapshot", func() bool { _, _, _, e := rb.snapshot(); return len(e) == 1 })
	seq := mustSend(t, b, order(1, 20, engine.Buy, 100, 2))
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Outstanding() != 0 || a.Outstanding() != 0 {
		t.Fatal("outstanding after Wait")
	}
	evs, depth, _, ends := rb.snapshot()
	trade := false
	for _, e := range evs {
		if e.Source != 2 || e.Seq != seq {
			t.Fatalf("b got an event of another command: %+v", e)
		}
		trade = trade || (e.Kind == engine.EvTrade && e.Maker == 10 && e.Qty == 2)
	}
	if !trade || evs[len(evs)-1].Kind != engine.EvRelease {
		t.Fatalf("b's events %+v", evs)
	}
	// Depth: the snapshot (two sell levels), then b's own trade's update.
	if len(ends) != 1 || ends[0] != 1 || len(depth) != 3 || depth[0].Price != 100 || depth[1].Price != 101 ||
		depth[2].Price != 100 || depth[2].Qty != 3 {
		t.Fatalf("b's depth %+v ends %v", depth, ends)
	}
	// a sees its own events only (no subscription).
	aev, adepth, _, _ := ra.snapshot()
	if len(adepth) != 0 {
		t.Fatalf("a got depth %+v", adepth)
	}
	for _, e := range aev {
		if e.Source != 1 {
			t.Fatalf("a got %+v", e)
		}
	}
	// Another client's trade reaches b's depth subscription.
	mustSend(t, a, order(1, 12, engine.Buy, 101, 1))
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "fan-out", func() bool { _, d, _, _ := rb.snapshot(); return len(d) >= 4 })
	_, depth, _, _ = rb.snapshot()
	if len(depth) != 4 || depth[3].Source != 1 || depth[3].Side != engine.Sell || depth[3].Price != 100 || depth[3].Qty != 2 {
		t.Fatalf("fan-out depth %+v", depth[3:])
	}
}

// A client restarted with a FirstSeq at or below what it used gets
// Duplicate answers.
func TestClientDuplicate(t *testing.T) {
	s := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(vfs.NewMem(), "node")})
	ctx := ctxT(t)
	var r recorder
	a, err := client.Dial(ctx, r.opts(s.srv.Addr().String(), 1))
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, a, define(1))
	mustSend(t, a, order(1, 1, engine.Buy, 5, 1))
	mustSend(t, a, order(1, 2, engine.Buy, 6, 1))
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()
	o := r.opts(s.srv.Addr().String(), 1)
	o.FirstSeq = 2
	a2, err := client.Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	mustSend(t, a2, order(1, 3, engine.Buy, 7, 1)) // seq 2: a duplicate
	mustSend(t, a2, order(1, 4, engine.Buy, 8, 1)) // seq 3: a duplicate
	mustSend(t, a2, order(1, 5, engine.Buy, 9, 1)) // seq 4: new
	if err := a2.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, dups, _ := r.snapshot()
	if len(dups) != 2 || dups[0] != 2 || dups[1] != 3 || a2.Stats().Duplicates != 2 {
		t.Fatalf("duplicates %v stats %+v", dups, a2.Stats())
	}
}

// The node restarts under a client with commands outstanding: some applied
// but unanswered, some sent while the node was down. After the reconnect
// each is applied exactly once.
func TestClientReconnectAfterRestart(t *testing.T) {
	dir := t.TempDir()
	var drop atomic.Bool
	var applied atomic.Int64
	mk := func(addr string) server.Options {
		return server.Options{Addr: addr, Node: nodeOpts(vfs.Default, dir),
			EgressFilter: func(int64, []byte) bool { return !drop.Load() },
			Service:      enginesvc.Options{OnApplied: func(int64, *engine.Command, []engine.Event) { applied.Add(1) }},
		}
	}
	s1 := serve(t, mk("127.0.0.1:0"))
	addr := s1.srv.Addr().String()
	ctx := ctxT(t)
	var r recorder
	o := r.opts(addr, 9)
	o.Reconnect = true
	o.ReconnectMin = 5 * time.Millisecond
	o.ReconnectMax = 50 * time.Millisecond
	c, err := client.Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ref := engine.New()
	send := func(cmd *engine.Command) {
		t.Helper()
		mustSend(t, c, cmd)
		ref.Apply(cmd) // Send set Source and Seq
	}
	send(define(1))
	id := uint64(0)
	mixed := func(n int) {
		for range n {
			id++
			side := engine.Side(1 + id%2)
			px := int64(100 + id%7)
			if side == engine.Sell {
				px = int64(101 + id%5)
			}
			send(order(1, id, side, px, int64(1+id%3)))
		}
	}
	mixed(20)
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Answers lost: applied, never answered.
	drop.Store(true)
	base := applied.Load()
	mixed(10)
	waitFor(t, "10 applied", func() bool { return applied.Load() == base+10 })
	if c.Outstanding() != 10 {
		t.Fatalf("outstanding %d, want 10", c.Outstanding())
	}
	s1.stop(t)
	drop.Store(false)
	// Sent while the node is down.
	mixed(5)
	if c.Outstanding() != 15 {
		t.Fatalf("outstanding %d, want 15", c.Outstanding())
	}
	s2 := serve(t, mk(addr))
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Duplicates != 10 || st.Reconnects < 1 || st.Resent < 15 {
		t.Fatalf("stats %+v: want 10 duplicates", st)
	}
	h, err := s2.srv.StateHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h != ref.StateHash() {
		t.Fatalf("state hash %x, reference (each command once) %x", h, ref.StateHash())
	}
	// And the client goes on.
	mixed(3)
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := s2.srv.StateHash(ctx); h != ref.StateHash() {
		t.Fatal("state hash differs after more commands")
	}
}

func TestClientReplacedFails(t *testing.T) {
	s := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(vfs.NewMem(), "node")})
	ctx := ctxT(t)
	o := client.Options{Addr: s.srv.Addr().String(), ClientID: 4, Reconnect: true}
	a, err := client.Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := client.Dial(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitFor(t, "a fails", func() bool { return a.Err() != nil })
	var sc *client.SessionClosedError
	if !errors.As(a.Err(), &sc) || sc.Code != wiresbe.CloseCodeReplaced {
		t.Fatalf("a: %v", a.Err())
	}
	if _, err := a.Send(define(1)); err == nil {
		t.Fatal("Send on a failed client")
	}
	mustSend(t, b, define(1))
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDialErrors(t *testing.T) {
	ctx := ctxT(t)
	if _, err := client.Dial(ctx, client.Options{Addr: "127.0.0.1:1"}); err == nil {
		t.Fatal("client id 0 accepted")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 1, DialTimeout: time.Second}); err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Keepalives hold an idle session open past the server's timeout; a
// client that sends none is timed out and, with Reconnect, comes back.
func TestClientKeepaliveAndTimeout(t *testing.T) {
	s := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(vfs.NewMem(), "node"), SessionTimeout: 300 * time.Millisecond})
	ctx := ctxT(t)
	addr := s.srv.Addr().String()
	kept, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	var closes atomic.Int64
	silent, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 2, KeepaliveInterval: time.Hour, Reconnect: true,
		ReconnectMin: time.Millisecond, OnSessionClosed: func(code wiresbe.CloseCode, _ string) {
			if code == wiresbe.CloseCodeTimeout {
				closes.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	first := silent.Session()
	waitFor(t, "the silent client's timeout", func() bool { return closes.Load() >= 1 && silent.Session() != first })
	// The kept session outlived a timeout and serves.
	mustSend(t, kept, define(1))
	if err := kept.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	mustSend(t, silent, define(2))
	if err := silent.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if silent.Stats().Reconnects < 1 {
		t.Fatalf("stats %+v", silent.Stats())
	}
	if st := s.srv.Stats(); st.Timeouts < 1 || st.Sessions < 3 {
		t.Fatalf("server stats %+v", st)
	}
	if kept.Stats().Reconnects != 0 {
		t.Fatal("the kept-alive client reconnected")
	}
}

// TestClientResume: a client process that restarts without its sequence
// resumes above the engine's high-water mark reported by Connected (also
// across a node restart, where the mark comes from the snapshot and the
// log), and its new commands are applied, not answered Duplicate.
func TestClientResume(t *testing.T) {
	fsys := vfs.NewMem()
	s := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(fsys, "node")})
	ctx := ctxT(t)
	var r recorder
	a, err := client.Dial(ctx, r.opts(s.srv.Addr().String(), 9))
	if err != nil {
		t.Fatal(err)
	}
	if a.HighWater() != 0 || a.NextSeq() != 1 {
		t.Fatalf("new source: high water %d, next %d", a.HighWater(), a.NextSeq())
	}
	mustSend(t, a, define(1))
	for i := uint64(1); i <= 6; i++ {
		mustSend(t, a, order(1, i, engine.Buy, int64(10+i), 1))
	}
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()

	check := func(addr string, wantHW uint64) {
		t.Helper()
		var r2 recorder
		o := r2.opts(addr, 9)
		o.Resume = true
		b, err := client.Dial(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if b.HighWater() != wantHW || b.NextSeq() != wantHW+1 {
			t.Fatalf("resume: high water %d, next %d; want %d, %d", b.HighWater(), b.NextSeq(), wantHW, wantHW+1)
		}
		mustSend(t, b, order(1, 100+wantHW, engine.Buy, 50, 1))
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		evs, _, dups, _ := r2.snapshot()
		if len(dups) != 0 || len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
			t.Fatalf("resumed command: events %v, duplicates %v", evs, dups)
		}
	}
	check(s.srv.Addr().String(), 7)
	// Without Resume the sequence starts at FirstSeq: a duplicate.
	var r3 recorder
	c, err := client.Dial(ctx, r3.opts(s.srv.Addr().String(), 9))
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, c, order(1, 200, engine.Buy, 50, 1))
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, _, dups, _ := r3.snapshot(); len(dups) != 1 || c.HighWater() != 8 {
		t.Fatalf("without Resume: duplicates %v, high water %d", dups, c.HighWater())
	}
	// After a node restart the mark comes back from the log.
	s.stop(t)
	s2 := serve(t, server.Options{Addr: "127.0.0.1:0", Node: nodeOpts(fsys, "node")})
	check(s2.srv.Addr().String(), 8)
}
