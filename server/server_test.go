package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/wire"
)

func TestEndToEnd(t *testing.T) {
	ts := startServer(t, baseOptions(vfs.Default, t.TempDir()))
	addr := ts.srv.Addr().String()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.connect(1)
	b.connect(2)
	if a.session == b.session {
		t.Fatal("same session id")
	}
	ref := engine.New()
	apply := func(r *raw, c engine.Command) []engine.Event {
		seq := r.cmd(c)
		c.Source, c.Seq = r.client, seq
		want := ref.Apply(&c)
		got, k := r.answer(seq)
		if k != engine.EvRelease {
			t.Fatalf("terminal %v", k)
		}
		if len(got) != len(want)-1 {
			t.Fatalf("client %d seq %d: got %+v, want %+v", r.client, seq, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		return got
	}
	apply(a, defineCmd(1))
	apply(a, limitCmd(1, 10, engine.Sell, 100, 5))
	evs := apply(b, limitCmd(1, 20, engine.Buy, 100, 3))
	trades := 0
	for _, e := range evs {
		if e.Kind == engine.EvTrade && e.Maker == 10 && e.OrderID == 20 && e.Qty == 3 {
			trades++
		}
	}
	if trades != 1 {
		t.Fatalf("taker's events %+v: want one trade", evs)
	}
	// A resent command is answered Duplicate and changes nothing.
	h1, err := ts.srv.StateHash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h1 != ref.StateHash() {
		t.Fatalf("state hash %x, reference %x", h1, ref.StateHash())
	}
	c := limitCmd(1, 20, engine.Buy, 100, 3)
	c.Source, c.Seq = 2, 1
	msg, _ := wire.AppendCommand(nil, &c)
	b.send(msg)
	if _, k := b.answer(1); k != wire.EvDuplicate {
		t.Fatalf("resend answered %v", k)
	}
	if h2, _ := ts.srv.StateHash(context.Background()); h2 != h1 {
		t.Fatal("a duplicate changed the state")
	}
	// CloseSession: SessionClosed(ClientAction), CLIENT_ACTION in the log.
	a.send(wiresbe.AppendCloseSession(nil, a.session))
	if code, _ := a.closed(); code != wiresbe.CloseCodeClientAction {
		t.Fatalf("close code %v", code)
	}
	waitFor(t, "close in the log", func() bool { _, ok := ts.closeReason(a.session); return ok })
	if r, _ := ts.closeReason(a.session); r != acs.CloseReasonCLIENTACTION {
		t.Fatalf("log reason %v", r)
	}
	st := ts.srv.Stats()
	if st.Sessions != 2 || st.ActiveSessions != 1 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	if code, _ := b.closed(); code != wiresbe.CloseCodeShutdown {
		t.Fatalf("shutdown code %v", code)
	}
	if _, err := ts.srv.StateHash(context.Background()); err != server.ErrClosed {
		t.Fatalf("StateHash after Serve: %v", err)
	}
}

func TestDepthSubscription(t *testing.T) {
	ts := startServer(t, baseOptions(vfs.NewMem(), "node"))
	addr := ts.srv.Addr().String()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.connect(1)
	b.connect(2)
	a.answer(a.cmd(defineCmd(1)))
	a.answer(a.cmd(limitCmd(1, 10, engine.Sell, 101, 5)))
	a.answer(a.cmd(limitCmd(1, 11, engine.Buy, 99, 4)))
	b.send(wiresbe.AppendSubscribeDepth(nil, 1, 5))
	var snap []engine.Event
	for {
		msg, err := b.next()
		if err != nil {
			t.Fatal(err)
		}
		if wire.EventKind(msg) == wire.EvDepthSnapshotEnd {
			break
		}
		var ev engine.Event
		if err := wire.DecodeEvent(msg, &ev); err != nil {
			t.Fatal(err)
		}
		snap = append(snap, ev)
	}
	if len(snap) != 2 || snap[0].Side != engine.Buy || snap[0].Price != 99 || snap[0].Qty != 4 ||
		snap[1].Side != engine.Sell || snap[1].Price != 101 || snap[1].Qty != 5 {
		t.Fatalf("depth snapshot %+v", snap)
	}
	// a's trade moves the sell level: b sees it.
	evs, _ := a.answer(a.cmd(limitCmd(1, 12, engine.Buy, 101, 2)))
	var want []engine.Event
	for _, e := range evs {
		if e.Kind == engine.EvDepth {
			want = append(want, e)
		}
	}
	if len(want) == 0 {
		t.Fatal("no depth in a's answer")
	}
	for _, w := range want {
		msg, err := b.next()
		if err != nil {
			t.Fatal(err)
		}
		var ev engine.Event
		if err := wire.DecodeEvent(msg, &ev); err != nil || ev != w {
			t.Fatalf("b got %+v (%v), want %+v", ev, err, w)
		}
	}
	if want[0].Price != 101 || want[0].Qty != 3 {
		t.Fatalf("depth after the trade: %+v", want[0])
	}
}

func TestSessionTimeout(t *testing.T) {
	dir := t.TempDir()
	opts := baseOptions(vfs.Default, dir)
	opts.SessionTimeout = 400 * time.Millisecond
	ts := startServer(t, opts)
	addr := ts.srv.Addr().String()
	silent, live := dialRaw(t, addr), dialRaw(t, addr)
	silent.connect(1)
	live.connect(2)
	stopKeep := make(chan struct{})
	keepDone := make(chan struct{})
	go func() {
		defer close(keepDone)
		for {
			select {
			case <-stopKeep:
				return
			case <-time.After(40 * time.Millisecond):
				live.nc.Write(wiresbe.AppendFrame(nil, wiresbe.AppendKeepalive(nil, live.session)))
			}
		}
	}()
	if code, why := silent.closed(); code != wiresbe.CloseCodeTimeout || !strings.Contains(why, "nothing received") {
		t.Fatalf("silent: %v %q", code, why)
	}
	waitFor(t, "timeout in the log", func() bool { _, ok := ts.closeReason(silent.session); return ok })
	if r, _ := ts.closeReason(silent.session); r != acs.CloseReasonTIMEOUT {
		t.Fatalf("log reason %v, want TIMEOUT", r)
	}
	// The client that kept alive is still served.
	time.Sleep(2 * opts.SessionTimeout)
	live.answer(live.cmd(defineCmd(3)))
	close(stopKeep)
	<-keepDone
	if _, ok := ts.closeReason(live.session); ok {
		t.Fatal("the live session was closed")
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	// The TIMEOUT is in the log: a restart replays it.
	var replayed cluster.CloseReason = -1
	opts.OnSessionClose = func(id int64, r cluster.CloseReason) {
		if id == silent.session {
			replayed = r
		}
	}
	ts2 := startServer(t, opts)
	if _, err := ts2.srv.StateHash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if replayed != acs.CloseReasonTIMEOUT {
		t.Fatalf("replayed close reason %v", replayed)
	}
}

// A connection dropped by its client closes its session with TIMEOUT.
func TestDisconnectCloses(t *testing.T) {
	ts := startServer(t, baseOptions(vfs.NewMem(), "node"))
	a := dialRaw(t, ts.srv.Addr().String())
	a.connect(5)
	a.nc.Close()
	waitFor(t, "close in the log", func() bool { _, ok := ts.closeReason(a.session); return ok })
	if r, _ := ts.closeReason(a.session); r != acs.CloseReasonTIMEOUT {
		t.Fatalf("log reason %v", r)
	}
}

func TestMalformed(t *testing.T) {
	ts := startServer(t, baseOptions(vfs.NewMem(), "node"))
	addr := ts.srv.Addr().String()
	good := dialRaw(t, addr)
	good.connect(100)
	good.answer(good.cmd(defineCmd(1)))

	cmdMsg := func(src, seq uint64) []byte {
		c := limitCmd(1, 1000+seq, engine.Buy, 50, 1)
		c.Source, c.Seq = src, seq
		b, _ := wire.AppendCommand(nil, &c)
		return b
	}
	ev := engine.Event{Kind: engine.EvRelease, Source: 7, Seq: 1}
	header := func(bl, tmpl, schema uint16) []byte {
		b := binary.LittleEndian.AppendUint16(nil, bl)
		b = binary.LittleEndian.AppendUint16(b, tmpl)
		b = binary.LittleEndian.AppendUint16(b, schema)
		return binary.LittleEndian.AppendUint16(b, 1)
	}
	cases := []struct {
		name    string
		connect bool
		input   []byte
		half    bool // close the write side after the input
		code    wiresbe.CloseCode
		why     string
	}{
		{"length zero", true, le32(0), false, wiresbe.CloseCodeMalformed, "bad frame length"},
		{"length below header", false, append(le32(3), 1, 2, 3), false, wiresbe.CloseCodeMalformed, "bad frame length"},
		{"length over max", true, le32(wiresbe.MaxFrameLength + 1), false, wiresbe.CloseCodeMalformed, "bad frame length"},
		{"huge length", true, le32(0xffffffff), false, wiresbe.CloseCodeMalformed, "bad frame length"},
		{"truncated frame", true, append(le32(100), make([]byte, 10)...), true, wiresbe.CloseCodeMalformed, "truncated"},
		{"truncated length", true, []byte{50, 0}, true, wiresbe.CloseCodeMalformed, "truncated"},
		{"unknown schema", true, wiresbe.AppendFrame(nil, header(0, 1, 4242)), false, wiresbe.CloseCodeMalformed, "unknown schema 4242"},
		{"unknown wire template", true, wiresbe.AppendFrame(nil, header(0, 99, wiresbe.SchemaID)), false, wiresbe.CloseCodeMalformed, "unknown template 99"},
		{"server message from client", true, wiresbe.AppendFrame(nil, wiresbe.AppendSessionClosed(nil, 1, 0, "x")), false, wiresbe.CloseCodeMalformed, "unknown template"},
		{"event instead of command", true, wiresbe.AppendFrame(nil, wire.AppendEvent(nil, &ev)), false, wiresbe.CloseCodeMalformed, "not a command"},
		{"command with trailing byte", true, wiresbe.AppendFrame(nil, append(cmdMsg(7, 1), 0)), false, wiresbe.CloseCodeMalformed, "its header says"},
		{"short Connect", false, wiresbe.AppendFrame(nil, wiresbe.AppendConnect(nil, 7)[:12]), false, wiresbe.CloseCodeMalformed, "Connect"},
		{"command before Connect", false, wiresbe.AppendFrame(nil, cmdMsg(7, 1)), false, wiresbe.CloseCodeProtocolError, "before Connect"},
		{"keepalive before Connect", false, wiresbe.AppendFrame(nil, wiresbe.AppendKeepalive(nil, 0)), false, wiresbe.CloseCodeProtocolError, "before Connect"},
		{"second Connect", true, wiresbe.AppendFrame(nil, wiresbe.AppendConnect(nil, 7)), false, wiresbe.CloseCodeProtocolError, "second Connect"},
		{"other source", true, wiresbe.AppendFrame(nil, cmdMsg(8, 1)), false, wiresbe.CloseCodeProtocolError, "source 8"},
		{"client id 0", false, wiresbe.AppendFrame(nil, wiresbe.AppendConnect(nil, 0)), false, wiresbe.CloseCodeRefused, "client id 0"},
	}
	before := ts.appliedCount()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			if c.connect {
				r.connect(7)
			}
			r.writeRaw(c.input)
			if c.half {
				r.nc.(interface{ CloseWrite() error }).CloseWrite()
			}
			code, why := r.closed()
			if code != c.code || !strings.Contains(why, c.why) {
				t.Fatalf("SessionClosed %v %q, want %v containing %q", code, why, c.code, c.why)
			}
			if c.connect {
				waitFor(t, "close in the log", func() bool { _, ok := ts.closeReason(r.session); return ok })
				if rs, _ := ts.closeReason(r.session); rs != acs.CloseReasonSERVICEACTION {
					t.Fatalf("log reason %v", rs)
				}
			}
		})
	}
	// Anything after CloseSession is discarded.
	r := dialRaw(t, addr)
	r.connect(9)
	r.writeRaw(append(wiresbe.AppendFrame(nil, wiresbe.AppendCloseSession(nil, r.session)), wiresbe.AppendFrame(nil, cmdMsg(9, 1))...))
	if code, _ := r.closed(); code != wiresbe.CloseCodeClientAction {
		t.Fatalf("close code %v", code)
	}
	// The node goes on serving; none of the bad input reached the log.
	good.answer(good.cmd(limitCmd(1, 1, engine.Sell, 10, 1)))
	if n := ts.appliedCount() - before; n != 1 {
		t.Fatalf("%d commands applied since the first, want 1", n)
	}
	if st := ts.srv.Stats(); st.Malformed < int64(len(cases)) {
		t.Fatalf("stats %+v: want %d malformed", st, len(cases))
	}
}

func TestSlowConsumer(t *testing.T) {
	opts := baseOptions(vfs.NewMem(), "node")
	opts.WriteQueueBytes = 4096
	opts.SocketWriteBuffer = 4096
	opts.WriteTimeout = 20 * time.Second
	ts := startServer(t, opts)
	addr := ts.srv.Addr().String()
	slow := dialRaw(t, addr)
	slow.nc.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096)
	slow.connect(1)
	// Pipeline commands without reading the answers.
	var batch []byte
	slow.seq++
	c := defineCmd(1)
	c.Source, c.Seq = 1, slow.seq
	m, _ := wire.AppendCommand(nil, &c)
	batch = wiresbe.AppendFrame(batch, m)
	for i := range 20000 {
		slow.seq++
		o := limitCmd(1, uint64(i+1), engine.Side(1+i%2), int64(1000+i%500*2+i%2), 1)
		if o.Side == engine.Buy {
			o.Price = int64(500 - i%400)
		}
		o.Source, o.Seq = 1, slow.seq
		m, _ := wire.AppendCommand(nil, &o)
		batch = wiresbe.AppendFrame(batch, m)
	}
	go slow.nc.Write(batch) // the server stops reading once it closes
	waitFor(t, "slow consumer closed", func() bool { _, ok := ts.closeReason(slow.session); return ok })
	if r, _ := ts.closeReason(slow.session); r != acs.CloseReasonSERVICEACTION {
		t.Fatalf("log reason %v", r)
	}
	if code, why := slow.closedDraining(); code != wiresbe.CloseCodeSlowConsumer || !strings.Contains(why, "does not read") {
		t.Fatalf("SessionClosed %v %q", code, why)
	}
	if ts.srv.Stats().SlowConsumers != 1 {
		t.Fatalf("stats %+v", ts.srv.Stats())
	}
	// The message that overflowed the queue and those queued are counted
	// as dropped; the session is counted closed by SlowConsumer.
	if st := ts.srv.Stats(); st.DroppedSlowConsumer < 2 || st.SessionsClosedBy[wiresbe.CloseCodeSlowConsumer] != 1 {
		t.Fatalf("dropped %d, closed by slow consumer %d", st.DroppedSlowConsumer, st.SessionsClosedBy[wiresbe.CloseCodeSlowConsumer])
	}
	// Others are served.
	other := dialRaw(t, addr)
	other.connect(2)
	other.answer(other.cmd(defineCmd(2)))
}

// closedDraining reads everything up to SessionClosed, skipping events.
func (r *raw) closedDraining() (wiresbe.CloseCode, string) {
	r.t.Helper()
	for {
		r.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		msg, err := r.fr.Next()
		if err != nil {
			r.t.Fatalf("no SessionClosed: %v", err)
		}
		if s, tm, _, _ := wiresbe.Header(msg); s == wiresbe.SchemaID && tm == wiresbe.SessionClosedTemplateID {
			var d wiresbe.SessionClosedDecoder
			_ = d.WrapWithHeader(msg, 0)
			code := d.Code()
			why, _ := d.Reason()
			return code, string(bytes.Clone(why))
		}
	}
}

// Sessions a stopped node left open are closed with TIMEOUT on start.
func TestStaleSessionsClosed(t *testing.T) {
	fsys := vfs.NewMem()
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{FS: fsys, Dir: "node", Service: svc, TermLength: 64 * 1024, SegmentLength: 256 * 1024})
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := n.Connect("old", 1)
	for {
		w, err := n.DoWork()
		if err != nil {
			t.Fatal(err)
		}
		if w == 0 && n.Pending() == 0 {
			break
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	opts := baseOptions(fsys, "node")
	opts.Node.EpochClock = func() int64 { return time.Now().UnixMilli() + 60_000 } // the old node is long gone
	ts := startServer(t, opts)
	waitFor(t, "stale close", func() bool { _, ok := ts.closeReason(sid); return ok })
	if r, _ := ts.closeReason(sid); r != acs.CloseReasonTIMEOUT {
		t.Fatalf("reason %v", r)
	}
	if ts.srv.Stats().StaleClosed != 1 {
		t.Fatalf("stats %+v", ts.srv.Stats())
	}
}

// A snapshot on shutdown, a restart from it, the same state.
func TestSnapshotOnShutdownRestart(t *testing.T) {
	dir := t.TempDir()
	opts := baseOptions(vfs.Default, dir)
	opts.SnapshotOnShutdown = true
	ts := startServer(t, opts)
	a := dialRaw(t, ts.srv.Addr().String())
	a.connect(1)
	a.answer(a.cmd(defineCmd(1)))
	for i := range 50 {
		a.answer(a.cmd(limitCmd(1, uint64(i+1), engine.Side(1+i%2), int64(100+i), 2)))
	}
	h, err := ts.srv.StateHash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	ts2 := startServer(t, opts)
	st, err := ts2.srv.NodeStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Replayed > 10 {
		t.Fatalf("replayed %d entries: the start did not use the shutdown snapshot", st.Replayed)
	}
	if h2, _ := ts2.srv.StateHash(context.Background()); h2 != h {
		t.Fatalf("hash after restart %x, before %x", h2, h)
	}
	// The client's source mark survived: a resend is a duplicate.
	b := dialRaw(t, ts2.srv.Addr().String())
	b.connect(1)
	b.seq = 0
	if _, k := b.answer(b.cmd(defineCmd(1))); k != wire.EvDuplicate {
		t.Fatalf("resend after restart: %v", k)
	}
}
