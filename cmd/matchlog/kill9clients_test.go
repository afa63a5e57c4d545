//go:build unix

package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

var kill9Clients = flag.Int("kill9.clients", 100, "client connections of TestKill9Clients")

// clientRecord is what one client of TestKill9Clients received, in order.
type clientRecord struct {
	mu      sync.Mutex
	events  []uint64 // the seq of each event of its own commands
	answers []uint64 // the seq of each terminal answer (Release or Duplicate)
	dups    map[uint64]bool
}

// TestKill9Clients: 100 clients (-kill9.clients), each on its own
// loopback connection with Reconnect, send commands (new resting and
// crossing orders, cancels of their own orders; at least 200 each, and on
// until the kills are over, at most 5000) while
// `matchlog node` is killed with SIGKILL and restarted several times under
// that load. Every client must reconnect after every kill and end with every
// command answered exactly once: the terminal answers (Release or
// Duplicate) of a client are its seqs 1..N, each once, in order; no event
// of a command comes after its answer or after an event of a later
// command. The log of the last node, scanned from its start, holds every
// client's every seq: once for a command answered by its Release, at least
// twice for one answered Duplicate (applied before a kill, its answer lost,
// resent after the restart and recognised) — so a Duplicate answers only a
// command that had been applied.
func TestKill9Clients(t *testing.T) {
	nClients, perClient, kills := *kill9Clients, 200, 4
	if testing.Short() {
		perClient, kills = 100, 2
	}
	seed := *kill9Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-kill9.seed), %d clients, at least %d commands each, %d kills", seed, nClients, perClient, kills)
	rng := rand.New(rand.NewPCG(seed, 21))
	dir := filepath.Join(t.TempDir(), "node")
	listen := freePort(t)
	nodeArgs := []string{"--sync", "1", "--snapshot-every-bytes", "262144", "--session-timeout", "30s", "--keep", "2", "--delay", "0"}
	child := startNodeChild(t, dir, listen, nodeArgs...)
	defer func() {
		if child != nil {
			child.kill()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The instrument, from a client of its own.
	setup, err := client.Dial(ctx, client.Options{Addr: child.addr, ClientID: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := setup.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	setup.Close()

	recs := make([]*clientRecord, nClients)
	clients := make([]*client.Client, nClients)
	for i := range clients {
		r := &clientRecord{dups: map[uint64]bool{}}
		recs[i] = r
		c, err := client.Dial(ctx, client.Options{Addr: child.addr, ClientID: uint64(i + 1), Reconnect: true,
			ReconnectMin: time.Millisecond, ReconnectMax: 50 * time.Millisecond, ReconnectTimeout: time.Minute,
			OnEvent: func(ev *engine.Event) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.events = append(r.events, ev.Seq)
				if ev.Kind == engine.EvRelease {
					r.answers = append(r.answers, ev.Seq)
				}
			},
			OnDuplicate: func(_, seq uint64) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.answers = append(r.answers, seq)
				r.dups[seq] = true
			},
		})
		if err != nil {
			t.Fatalf("client %d: %v", i+1, err)
		}
		clients[i] = c
		defer c.Close()
	}

	// The load: each client sends about one command every 20 ms, with
	// at most 32 unanswered, until it has sent perClient and the kills are
	// over (at most maxPerClient).
	const maxPerClient = 5000
	var killsDone atomic.Bool
	sentBy := make([]int, nClients)
	var wg sync.WaitGroup
	loadErr := make(chan error, nClients)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lr := rand.New(rand.NewPCG(seed, uint64(100+i)))
			base := uint64(i+1) << 32
			var id uint64
			for n := 0; n < maxPerClient && (n < perClient || !killsDone.Load()); n++ {
				for c.Outstanding() >= 32 && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Duration(10+lr.IntN(20)) * time.Millisecond)
				cmd := kill9ClientCommand(lr, base, &id, uint64(i+1))
				if _, err := c.Send(&cmd); err != nil {
					loadErr <- fmt.Errorf("client %d: %w", i+1, err)
					return
				}
				sentBy[i]++
			}
		}()
	}

	// The kills, while the load runs.
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		child.kill()
		child = startNodeChild(t, dir, listen, nodeArgs...)
	}
	killsDone.Store(true)
	wg.Wait()
	close(loadErr)
	for err := range loadErr {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	for i, c := range clients {
		if err := c.Wait(wctx); err != nil {
			t.Fatalf("client %d: %d commands unanswered: %v", i+1, c.Outstanding(), err)
		}
	}

	// Every client reconnected after every kill; its answers and events.
	var dups, reconnects, resent int64
	for i, c := range clients {
		st := c.Stats()
		if st.Reconnects < int64(kills) {
			t.Errorf("client %d reconnected %d times after %d kills", i+1, st.Reconnects, kills)
		}
		reconnects += st.Reconnects
		resent += st.Resent
		r := recs[i]
		r.mu.Lock()
		if len(r.answers) != sentBy[i] {
			t.Errorf("client %d: %d answers for %d commands", i+1, len(r.answers), sentBy[i])
		}
		for j, s := range r.answers {
			if s != uint64(j+1) {
				t.Errorf("client %d: answer %d is for seq %d, want %d (answers in order, each once)", i+1, j+1, s, j+1)
				break
			}
		}
		for j := 1; j < len(r.events); j++ {
			if r.events[j] < r.events[j-1] {
				t.Errorf("client %d: an event of seq %d after one of seq %d", i+1, r.events[j], r.events[j-1])
				break
			}
		}
		dups += int64(len(r.dups))
		r.mu.Unlock()
	}

	// The log holds every command; a command answered Duplicate was in it
	// before its resend.
	child.kill()
	child = nil
	node, err := cluster.Open(cluster.Options{Dir: dir, Service: enginesvc.New(enginesvc.Options{}), FileSyncLevel: 1})
	if err != nil {
		t.Fatalf("open after the last kill: %v", err)
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	inLog := map[[2]uint64]int{}
	var cmd engine.Command
	if err := cluster.ScanLogFrom(vfs.Default, dir, -1, func(e *cluster.LogEntry) error {
		if e.Template == 1 && wire.DecodeCommand(e.Payload, &cmd) == nil {
			inLog[[2]uint64{cmd.Source, cmd.Seq}]++
		}
		return nil
	}); err != nil {
		t.Fatalf("scan the log: %v", err)
	}
	total := 0
	for i, r := range recs {
		src := uint64(i + 1)
		total += sentBy[i]
		for s := uint64(1); s <= uint64(sentBy[i]); s++ {
			n := inLog[[2]uint64{src, s}]
			switch {
			case n == 0:
				t.Errorf("client %d seq %d was answered and is not in the log", src, s)
			case r.dups[s] && n < 2:
				t.Errorf("client %d seq %d was answered Duplicate but is in the log once", src, s)
			case !r.dups[s] && n != 1:
				t.Errorf("client %d seq %d was answered by its Release and is in the log %d times", src, s, n)
			}
		}
	}
	t.Logf("%d clients, %d commands, all answered once: %d as Duplicate; %d reconnections, %d commands resent", nClients, total, dups, reconnects, resent)
}

// kill9ClientCommand is client src's next command: resting and crossing
// limit orders under ids base+1, base+2, ... and cancels of its own ids.
func kill9ClientCommand(lr *rand.Rand, base uint64, id *uint64, src uint64) engine.Command {
	side := engine.Side(lr.IntN(2))
	account := src
	switch k := lr.IntN(10); {
	case k < 6 || *id == 0:
		*id++
		price := int64(1000 - 1 - lr.IntN(50))
		if side == engine.Sell {
			price = int64(1000 + 1 + lr.IntN(50))
		}
		return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: base + *id, Account: account,
			Side: side, Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: int64(lr.IntN(20)) + 1}
	case k < 8:
		*id++
		price := int64(1000 + lr.IntN(20))
		if side == engine.Sell {
			price = int64(1000 - lr.IntN(20))
		}
		return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: base + *id, Account: account,
			Side: side, Type: engine.Limit, TIF: engine.IOC, Price: price, Qty: int64(lr.IntN(40)) + 1}
	default:
		return engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: base + 1 + uint64(lr.Int64N(int64(*id)))}
	}
}
