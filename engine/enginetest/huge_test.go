package enginetest

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// TestHugeLevelsAgainstModel drives four price levels of thousands of
// orders each (a level of the largest chunk size keeps its chunk entries
// in copy-on-write segments past 32 chunks, 2,048 orders)
// through cancels anywhere in them, fills at their front, quantity cuts in
// place, moves and appends, against the model: every command's events, the
// engine's structure check, the state hash of each clone against the
// model's, each clone unchanged when the next is taken, and now and then
// the clone's partitions against its record stream. The generated
// streams of TestDifferential never crowd a level this much.
func TestHugeLevelsAgainstModel(t *testing.T) {
	perLevel := 3_000 + scaled(3_000)
	ops := scaled(12_000)
	rng := rand.New(rand.NewSource(7))
	e, m := engine.New(), NewModel()
	var seq uint64
	type info struct {
		side  engine.Side
		price int64
		qty   int64
	}
	live := map[uint64]*info{}
	var ids []uint64 // live ids, in no order; stale ones are skipped
	nextID := uint64(1)
	apply := func(c engine.Command) []engine.Event {
		t.Helper()
		seq++
		c.Source, c.Seq, c.Instrument = 1, seq, 1
		ev := e.Apply(&c)
		mv := m.Apply(&c)
		if i := firstDiff(ev, mv); i >= 0 {
			t.Fatalf("command %d (%s): events differ at %d\nengine:\n%smodel:\n%s", seq, FormatCommand(&c), i, FormatEvents(ev, "  "), FormatEvents(mv, "  "))
		}
		for _, x := range mv {
			switch x.Kind {
			case engine.EvTrade:
				if o := live[x.Maker]; o != nil {
					o.qty = x.MakerRemaining
					if o.qty == 0 {
						delete(live, x.Maker)
					}
				}
			case engine.EvCancelled:
				if o := live[x.OrderID]; o != nil && x.Remaining == 0 {
					delete(live, x.OrderID)
				} else if o != nil {
					o.qty = x.Remaining
				}
			case engine.EvReplaced:
				if o := live[x.OrderID]; o != nil {
					o.price, o.qty = x.Price, x.Qty
				}
			}
		}
		return mv
	}
	apply(engine.Command{Kind: engine.CmdDefineInstrument, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000})
	prices := [...]struct {
		side  engine.Side
		price int64
	}{{engine.Buy, 500}, {engine.Buy, 499}, {engine.Sell, 501}, {engine.Sell, 502}}
	add := func() {
		p := prices[rng.Intn(len(prices))]
		id, qty := nextID, 1+rng.Int63n(10)
		nextID++
		if ev := apply(engine.Command{Kind: engine.CmdNewOrder, OrderID: id, Account: 1 + uint64(rng.Intn(3)),
			Side: p.side, Type: engine.Limit, TIF: engine.GTC, Price: p.price, Qty: qty}); ev[0].Kind != engine.EvAccepted {
			t.Fatalf("add: %+v", ev[0])
		}
		live[id] = &info{p.side, p.price, qty}
		ids = append(ids, id)
	}
	pick := func() (uint64, *info) {
		for len(ids) > 0 {
			i := rng.Intn(len(ids))
			id := ids[i]
			if o := live[id]; o != nil {
				return id, o
			}
			ids[i] = ids[len(ids)-1]
			ids = ids[:len(ids)-1]
		}
		return 0, nil
	}
	for range 4 * perLevel {
		add()
	}
	var frozen *engine.Frozen
	var frozenHash uint64
	for op := range ops {
		if rng.Intn(300) == 0 {
			// A sweep: hundreds of orders off the front of the best
			// level, so that whole segments empty and are dropped.
			side, price := engine.Buy, int64(502)
			if rng.Intn(2) == 0 {
				side, price = engine.Sell, 499
			}
			apply(engine.Command{Kind: engine.CmdNewOrder, OrderID: nextID, Account: 1 + uint64(rng.Intn(3)),
				Side: side, Type: engine.Limit, TIF: engine.IOC, Price: price, Qty: 1500 + rng.Int63n(1500)})
			nextID++
		}
		switch r := rng.Intn(100); {
		case r < 25:
			if id, _ := pick(); id != 0 {
				apply(engine.Command{Kind: engine.CmdCancel, OrderID: id})
			}
		case r < 55:
			add()
		case r < 65:
			side, price := engine.Buy, int64(501+rng.Intn(2))
			if rng.Intn(2) == 0 {
				side, price = engine.Sell, int64(499+rng.Intn(2))
			}
			apply(engine.Command{Kind: engine.CmdNewOrder, OrderID: nextID, Account: 1 + uint64(rng.Intn(3)),
				Side: side, Type: engine.Limit, TIF: engine.IOC, Price: price, Qty: 1 + rng.Int63n(20)})
			nextID++
		case r < 85:
			if id, o := pick(); id != 0 && o.qty > 1 {
				apply(engine.Command{Kind: engine.CmdModify, OrderID: id, Price: o.price, Qty: 1 + rng.Int63n(o.qty-1)})
			}
		default:
			if id, o := pick(); id != 0 {
				price := 999 - o.price // a bid moves between 500 and 499
				if o.side == engine.Sell {
					price = 1003 - o.price // an ask between 501 and 502
				}
				apply(engine.Command{Kind: engine.CmdModify, OrderID: id, Price: price, Qty: o.qty})
			}
		}
		if op%499 == 0 {
			if err := e.Check(); err != nil {
				t.Fatalf("after %d operations: %v", op, err)
			}
		}
		if op%997 == 0 {
			if frozen != nil && frozen.StateHash() != frozenHash {
				t.Fatalf("after %d operations: the previous clone changed: hash %016x, was %016x", op, frozen.StateHash(), frozenHash)
			}
			frozen = e.Clone()
			frozenHash = frozen.StateHash()
			if op%(5*997) == 0 {
				checkPartitions(t, fmt.Sprintf("after %d operations", op), frozen, 1, 2, 3, 7)
			}
			if mh := m.StateHash(); frozenHash != mh {
				t.Fatalf("after %d operations: clone's state hash %016x, model's %016x", op, frozenHash, mh)
			}
		}
	}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	if frozen.StateHash() != frozenHash {
		t.Fatal("the last clone changed")
	}
	if eh, mh := e.StateHash(), m.StateHash(); eh != mh {
		t.Fatalf("final state hash %016x, model's %016x", eh, mh)
	}
	var depth []engine.Level
	for _, s := range []engine.Side{engine.Buy, engine.Sell} {
		depth = e.Depth(1, s, 2, depth[:0])
		t.Logf("%s: %+v", s, depth)
	}
}
