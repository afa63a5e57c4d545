package server_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
)

// TestSlowDisk: every fsync of the node's log takes 50 to 500 ms
// (injected). Over loopback, with a session timeout of one second, a
// client's bounded burst of commands is answered in full and in order,
// each Release only after a sync that started after the command was sent
// and ended before the Release arrived (commands wait for durability);
// another client's depth subscription is answered and its session, idle
// but for keepalives, stays open; no session is closed. The deadline only
// guards against a hang.
func TestSlowDisk(t *testing.T) {
	type span struct{ start, end time.Time }
	var mu sync.Mutex
	var syncs []span
	rng := rand.New(rand.NewPCG(5, 17))
	inj := vfs.NewInjector(vfs.NewMem(), 0, -1)
	var starts sync.Map // path -> start, per sync in flight (one goroutine per file)
	inj.Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpSync), Before: func(_ vfs.Op, p string) error {
		if !strings.HasSuffix(p, ".rec") && !strings.Contains(p, ".rec.") {
			return nil
		}
		mu.Lock()
		d := time.Duration(50+rng.IntN(451)) * time.Millisecond
		mu.Unlock()
		starts.Store(p, time.Now())
		time.Sleep(d)
		return nil
	}, After: func(_ vfs.Op, p string, _ vfs.File, err error) {
		v, ok := starts.LoadAndDelete(p)
		if !ok || err != nil {
			return
		}
		mu.Lock()
		syncs = append(syncs, span{v.(time.Time), time.Now()})
		mu.Unlock()
	}})
	opts := baseOptions(inj, "node")
	opts.Node.FileSyncLevel = 1
	opts.SessionTimeout = time.Second
	ts := startServer(t, opts)
	addr := ts.srv.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var closedMu sync.Mutex
	var closed []string
	onClosed := func(code wiresbe.CloseCode, reason string) {
		closedMu.Lock()
		closed = append(closed, code.String()+": "+reason)
		closedMu.Unlock()
	}
	const n = 40
	var evMu sync.Mutex
	sentAt := make([]time.Time, n+1)
	var released []uint64
	var releasedAt []time.Time
	trader, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 1, OnSessionClosed: onClosed, OnEvent: func(ev *engine.Event) {
		if ev.Kind == engine.EvRelease {
			evMu.Lock()
			released = append(released, ev.Seq)
			releasedAt = append(releasedAt, time.Now())
			evMu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer trader.Close()
	depthEnd := make(chan uint32, 4)
	var depthEvents int
	watcher, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 2, OnSessionClosed: onClosed,
		OnDepth:            func(*engine.Event) { evMu.Lock(); depthEvents++; evMu.Unlock() },
		OnDepthSnapshotEnd: func(inst uint32) { depthEnd <- inst }})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()

	send := func(c engine.Command) {
		evMu.Lock()
		seq := trader.NextSeq()
		sentAt[seq] = time.Now()
		evMu.Unlock()
		if _, err := trader.Send(&c); err != nil {
			t.Fatal(err)
		}
	}
	send(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	if err := watcher.SubscribeDepth(1, 5); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= n; i++ {
		side := engine.Buy
		if i%2 == 0 {
			side = engine.Sell
		}
		send(engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: uint64(i), Side: side, Type: engine.Limit, TIF: engine.GTC,
			Price: int64(100 + i%7), Qty: 1})
		if i%10 == 0 {
			time.Sleep(300 * time.Millisecond) // bursts across several syncs
		}
	}
	if err := trader.Wait(ctx); err != nil {
		t.Fatalf("commands not all answered: %v", err)
	}
	select {
	case <-depthEnd:
	case <-ctx.Done():
		t.Fatal("the depth subscription was never answered")
	}
	// Idle past the session timeout: keepalives, not commands, keep the
	// sessions open while the disk is slow.
	time.Sleep(1500 * time.Millisecond)
	if err := watcher.SubscribeDepth(1, 5); err != nil {
		t.Fatal(err)
	}
	select {
	case <-depthEnd:
	case <-ctx.Done():
		t.Fatal("the second depth read was never answered")
	}

	evMu.Lock()
	defer evMu.Unlock()
	if len(released) != n {
		t.Fatalf("%d releases for %d commands", len(released), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, seq := range released {
		if seq != uint64(i+1) {
			t.Fatalf("release %d is of seq %d: out of order", i, seq)
		}
		ok := false
		for _, s := range syncs {
			if !s.start.Before(sentAt[seq]) && !s.end.After(releasedAt[i]) {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("command %d released with no log sync between its send and its release", seq)
		}
	}
	if depthEvents == 0 {
		t.Fatal("the depth subscriber saw no depth")
	}
	closedMu.Lock()
	defer closedMu.Unlock()
	if len(closed) != 0 {
		t.Fatalf("sessions closed under the slow disk: %v", closed)
	}
	if trader.Err() != nil || watcher.Err() != nil {
		t.Fatalf("client errors: %v, %v", trader.Err(), watcher.Err())
	}
	t.Logf("%d log syncs of 50-500 ms for %d commands", len(syncs), n)
}
