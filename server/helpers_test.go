package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/wire"
)

// testServer is a served server and what its hooks saw.
type testServer struct {
	t      *testing.T
	srv    *server.Server
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	closes  map[int64]cluster.CloseReason
	applied []engine.Command
}

func baseOptions(fsys vfs.FS, dir string) server.Options {
	return server.Options{
		Addr: "127.0.0.1:0",
		Node: cluster.Options{FS: fsys, Dir: dir, TermLength: 64 * 1024, SegmentLength: 256 * 1024, FileSyncLevel: 0},
	}
}

func startServer(t *testing.T, opts server.Options) *testServer {
	t.Helper()
	ts := &testServer{t: t, closes: map[int64]cluster.CloseReason{}, done: make(chan error, 1)}
	userClose := opts.OnSessionClose
	opts.OnSessionClose = func(id int64, r cluster.CloseReason) {
		ts.mu.Lock()
		ts.closes[id] = r
		ts.mu.Unlock()
		if userClose != nil {
			userClose(id, r)
		}
	}
	opts.Service.OnApplied = func(_ int64, c *engine.Command, _ []engine.Event) {
		ts.mu.Lock()
		ts.applied = append(ts.applied, *c)
		ts.mu.Unlock()
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- srv.Serve(ctx) }()
	t.Cleanup(func() { ts.stop() })
	return ts
}

// stop shuts the server down and returns Serve's error (once).
func (ts *testServer) stop() error {
	if ts.cancel == nil {
		return nil
	}
	ts.cancel()
	ts.cancel = nil
	select {
	case err := <-ts.done:
		return err
	case <-time.After(30 * time.Second):
		ts.t.Fatal("Serve did not return")
		return nil
	}
}

func (ts *testServer) closeReason(id int64) (cluster.CloseReason, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	r, ok := ts.closes[id]
	return r, ok
}

func (ts *testServer) appliedCount() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.applied)
}

// waitFor polls cond until it holds or 10 s pass.
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

// raw is a hand-driven protocol client.
type raw struct {
	t       *testing.T
	nc      net.Conn
	fr      *wiresbe.FrameReader
	session int64
	client  uint64
	seq     uint64
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, fr: wiresbe.NewFrameReader(nc), session: -1}
}

func (r *raw) writeRaw(b []byte) {
	r.t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *raw) send(msg []byte) { r.t.Helper(); r.writeRaw(wiresbe.AppendFrame(nil, msg)) }

// next reads one message (5 s at most).
func (r *raw) next() ([]byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	return r.fr.Next()
}

func (r *raw) connect(client uint64) {
	r.t.Helper()
	r.send(wiresbe.AppendConnect(nil, client))
	msg, err := r.next()
	if err != nil {
		r.t.Fatalf("connect: %v", err)
	}
	var d wiresbe.ConnectedDecoder
	if err := d.WrapWithHeader(msg, 0); err != nil {
		r.t.Fatalf("connect: not Connected: %v", err)
	}
	if d.ClientId() != client {
		r.t.Fatalf("Connected for client %d", d.ClientId())
	}
	r.session, r.client = d.SessionId(), client
}

func (r *raw) cmd(c engine.Command) uint64 {
	r.t.Helper()
	r.seq++
	c.Source, c.Seq = r.client, r.seq
	b, err := wire.AppendCommand(nil, &c)
	if err != nil {
		r.t.Fatal(err)
	}
	r.send(b)
	return r.seq
}

// answer reads events until the terminal answer of seq (Release or
// Duplicate) and returns the events before it and the terminal kind.
// Events of other sources (depth fan-out) are returned too.
func (r *raw) answer(seq uint64) ([]engine.Event, engine.EventKind) {
	r.t.Helper()
	var evs []engine.Event
	for {
		msg, err := r.next()
		if err != nil {
			r.t.Fatalf("waiting for the answer to %d: %v", seq, err)
		}
		switch k := wire.EventKind(msg); k {
		case wire.EvDuplicate:
			src, s, _ := wire.DecodeDuplicate(msg)
			if src == r.client && s == seq {
				return evs, k
			}
		case 0, wire.EvDepthSnapshotEnd:
			r.t.Fatalf("unexpected message %x", msg)
		default:
			var ev engine.Event
			if err := wire.DecodeEvent(msg, &ev); err != nil {
				r.t.Fatal(err)
			}
			if ev.Kind == engine.EvRelease && ev.Source == r.client && ev.Seq == seq {
				return evs, ev.Kind
			}
			evs = append(evs, ev)
		}
	}
}

// closed reads until SessionClosed and returns its code and reason; the
// connection must end after it.
func (r *raw) closed() (wiresbe.CloseCode, string) {
	r.t.Helper()
	for {
		msg, err := r.next()
		if err != nil {
			r.t.Fatalf("no SessionClosed: %v", err)
		}
		schema, template, _, _ := wiresbe.Header(msg)
		if schema != wiresbe.SchemaID || template != wiresbe.SessionClosedTemplateID {
			continue
		}
		var d wiresbe.SessionClosedDecoder
		if err := d.WrapWithHeader(msg, 0); err != nil {
			r.t.Fatal(err)
		}
		code := d.Code()
		reason, err := d.Reason()
		if err != nil {
			r.t.Fatal(err)
		}
		why := string(reason)
		if _, err := r.next(); !errors.Is(err, io.EOF) {
			r.t.Fatalf("after SessionClosed: %v, want EOF", err)
		}
		return code, why
	}
}

func defineCmd(inst uint32) engine.Command {
	return engine.Command{Kind: engine.CmdDefineInstrument, Instrument: inst, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}
}

func limitCmd(inst uint32, id uint64, side engine.Side, px, qty int64) engine.Command {
	return engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id, Account: id % 7, Side: side,
		Type: engine.Limit, TIF: engine.GTC, Price: px, Qty: qty}
}

func le32(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
