package enginetest

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// Hand-written scenarios: the model against events worked out by hand from
// the specification in engine/doc.go.

// applier is what the scenarios drive: the model, or the engine.
type applier interface {
	Apply(*engine.Command) []engine.Event
}

type scenario struct {
	t      *testing.T
	a      applier
	seq    uint64
	manual bool // commands carry their own source and sequence
}

func newScenario(t *testing.T, a applier) *scenario {
	s := &scenario{t: t, a: a}
	s.do(def(1, 1, 1, 1, 1000))
	return s
}

var srcSeqRE = regexp.MustCompile(` src=\d+ seq=\d+`)

// short renders events without source and sequence, one per line.
func short(evs []engine.Event) string {
	var b strings.Builder
	for i := range evs {
		line := srcSeqRE.ReplaceAllString(FormatEvent(&evs[i]), "")
		b.WriteString(strings.Join(strings.Fields(line), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func trimLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// do applies c on source 1 with the next sequence and returns its events.
func (s *scenario) do(c engine.Command) []engine.Event {
	s.t.Helper()
	if !s.manual {
		s.seq++
		c.Source, c.Seq = 1, s.seq
	}
	evs := s.a.Apply(&c)
	for i := range evs {
		if evs[i].Source != c.Source || evs[i].Seq != c.Seq {
			s.t.Fatalf("event %d of %s: source/seq %d/%d", i, FormatCommand(&c), evs[i].Source, evs[i].Seq)
		}
	}
	return append([]engine.Event(nil), evs...)
}

// expect applies c and compares its events with want (one event per line,
// as [FormatEvent] prints them without src and seq).
func (s *scenario) expect(c engine.Command, want string) {
	s.t.Helper()
	got := short(s.do(c))
	if want = trimLines(want); got != want {
		s.t.Fatalf("%s:\ngot:\n%swant:\n%s", FormatCommand(&c), got, want)
	}
}

func def(inst uint32, tick, lot, minP, maxP int64) engine.Command {
	return engine.Command{Kind: engine.CmdDefineInstrument, Instrument: inst, Tick: tick, Lot: lot, MinPrice: minP, MaxPrice: maxP}
}

func lim(id uint64, side engine.Side, px, qty int64) engine.Command {
	return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: id, Account: uint64(id), Side: side,
		Type: engine.Limit, TIF: engine.GTC, Price: px, Qty: qty}
}

func tif(c engine.Command, t engine.TimeInForce) engine.Command { c.TIF = t; return c }
func acct(c engine.Command, a uint64) engine.Command            { c.Account = a; return c }
func stp(c engine.Command, m engine.STP) engine.Command         { c.STP = m; return c }

func mkt(id uint64, side engine.Side, qty int64) engine.Command {
	c := lim(id, side, 0, qty)
	c.Type, c.TIF = engine.Market, engine.IOC
	return c
}

func stopOrder(id uint64, side engine.Side, typ engine.OrderType, ref engine.TriggerRef, stopPx, px, qty int64) engine.Command {
	c := lim(id, side, px, qty)
	c.Type, c.Ref, c.Stop = typ, ref, stopPx
	if typ == engine.Stop {
		c.TIF = engine.IOC
	}
	return c
}

func cxl(id uint64) engine.Command {
	return engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: id}
}

func mod(id uint64, px, qty int64) engine.Command {
	return engine.Command{Kind: engine.CmdModify, Instrument: 1, OrderID: id, Price: px, Qty: qty}
}

func markPx(px int64) engine.Command {
	return engine.Command{Kind: engine.CmdMarkPrice, Instrument: 1, Price: px}
}

const B, S = engine.Buy, engine.Sell

func TestModelSimpleCross(t *testing.T) { testSimpleCross(t, NewModel()) }

func testSimpleCross(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.expect(lim(1, S, 100, 10), `
		accepted inst=1 id=1
		depth inst=1 side=sell px=100 qty=10 count=1
		release inst=1`)
	s.expect(lim(2, B, 101, 10), `
		accepted inst=1 id=2
		trade inst=1 id=2 maker=1 side=buy px=100 qty=10 rem=0 mrem=0
		depth inst=1 side=sell px=100 qty=0 count=0
		release inst=1`)
}

func TestModelPartialFills(t *testing.T) { testPartialFills(t, NewModel()) }

func testPartialFills(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.do(lim(1, S, 100, 5))
	s.do(lim(2, S, 100, 5))
	s.do(lim(3, S, 101, 5))
	s.do(lim(9, B, 90, 5))
	s.expect(lim(4, B, 101, 12), `
		accepted inst=1 id=4
		trade inst=1 id=4 maker=1 side=buy px=100 qty=5 rem=7 mrem=0
		trade inst=1 id=4 maker=2 side=buy px=100 qty=5 rem=2 mrem=0
		trade inst=1 id=4 maker=3 side=buy px=101 qty=2 rem=0 mrem=3
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=3 count=1
		release inst=1`)
	// IOC remainder.
	s.expect(tif(lim(5, B, 102, 10), engine.IOC), `
		accepted inst=1 id=5
		trade inst=1 id=5 maker=3 side=buy px=101 qty=3 rem=7 mrem=0
		cancelled inst=1 id=5 side=buy px=102 qty=7 rem=0 reason=ioc
		depth inst=1 side=sell px=101 qty=0 count=0
		release inst=1`)
	// GTC remainder rests behind an existing bid level.
	s.do(lim(6, S, 95, 2))
	s.expect(lim(7, S, 90, 8), `
		accepted inst=1 id=7
		trade inst=1 id=7 maker=9 side=sell px=90 qty=5 rem=3 mrem=0
		depth inst=1 side=buy px=90 qty=0 count=0
		depth inst=1 side=sell px=90 qty=3 count=1
		release inst=1`)
	// Market order sweeps and the rest is cancelled ioc, price 0.
	s.expect(mkt(8, B, 10), `
		accepted inst=1 id=8
		trade inst=1 id=8 maker=7 side=buy px=90 qty=3 rem=7 mrem=0
		trade inst=1 id=8 maker=6 side=buy px=95 qty=2 rem=5 mrem=0
		cancelled inst=1 id=8 side=buy px=0 qty=5 rem=0 reason=ioc
		depth inst=1 side=sell px=90 qty=0 count=0
		depth inst=1 side=sell px=95 qty=0 count=0
		release inst=1`)
}

func TestModelFOK(t *testing.T) { testFOK(t, NewModel()) }

func testFOK(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.do(lim(1, S, 100, 5))
	s.do(lim(2, S, 101, 5))
	s.expect(tif(lim(3, B, 100, 6), engine.FOK), `
		accepted inst=1 id=3
		cancelled inst=1 id=3 side=buy px=100 qty=6 rem=0 reason=fok
		release inst=1`)
	s.expect(tif(mkt(4, B, 11), engine.FOK), `
		accepted inst=1 id=4
		cancelled inst=1 id=4 side=buy px=0 qty=11 rem=0 reason=fok
		release inst=1`)
	// Cancel_oldest self-trade makers are skipped by the dry run: 5 of
	// account 3 at 100 do not count, so 11 cannot fill.
	s.do(acct(lim(5, S, 100, 5), 3))
	s.expect(stp(acct(tif(lim(6, B, 101, 11), engine.FOK), 3), engine.STPCancelOldest), `
		accepted inst=1 id=6
		cancelled inst=1 id=6 side=buy px=101 qty=11 rem=0 reason=fok
		release inst=1`)
	// 7 fills: the real run trades 1 (5), cancels the self-trade maker 5,
	// then trades 2 (2).
	s.expect(stp(acct(tif(lim(7, B, 101, 7), engine.FOK), 3), engine.STPCancelOldest), `
		accepted inst=1 id=7
		trade inst=1 id=7 maker=1 side=buy px=100 qty=5 rem=2 mrem=0
		cancelled inst=1 id=5 side=sell px=100 qty=5 rem=0 reason=self_trade
		trade inst=1 id=7 maker=2 side=buy px=101 qty=2 rem=0 mrem=3
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=3 count=1
		release inst=1`)
	// Decrement ends the dry run unfilled even when there is enough
	// liquidity behind the self-trade maker.
	s.do(acct(lim(8, S, 101, 5), 4))
	s.do(lim(9, S, 101, 5))
	s.expect(stp(acct(tif(lim(10, B, 101, 3), engine.FOK), 4), engine.STPDecrement), `
		accepted inst=1 id=10
		trade inst=1 id=10 maker=2 side=buy px=101 qty=3 rem=0 mrem=0
		depth inst=1 side=sell px=101 qty=10 count=2
		release inst=1`)
	s.expect(stp(acct(tif(lim(11, B, 101, 3), engine.FOK), 4), engine.STPDecrement), `
		accepted inst=1 id=11
		cancelled inst=1 id=11 side=buy px=101 qty=3 rem=0 reason=fok
		release inst=1`)
}

func TestModelSTP(t *testing.T) { testSTP(t, NewModel()) }

func testSTP(t *testing.T, a applier) {
	s := newScenario(t, a)
	// Book: asks 1 (acct 1) 5@100, 2 (acct 7) 5@100, 3 (acct 1) 5@101.
	setup := func() {
		s.do(engine.Command{Kind: engine.CmdMassCancel})
		s.do(lim(1, S, 100, 5))
		s.do(acct(lim(2, S, 100, 5), 7))
		s.do(acct(lim(3, S, 101, 5), 1))
	}
	setup()
	s.expect(stp(acct(lim(10, B, 101, 12), 1), engine.STPCancelNewest), `
		accepted inst=1 id=10
		cancelled inst=1 id=10 side=buy px=101 qty=12 rem=0 reason=self_trade
		release inst=1`)
	s.expect(stp(acct(lim(11, B, 101, 12), 7), engine.STPCancelOldest), `
		accepted inst=1 id=11
		trade inst=1 id=11 maker=1 side=buy px=100 qty=5 rem=7 mrem=0
		cancelled inst=1 id=2 side=sell px=100 qty=5 rem=0 reason=self_trade
		trade inst=1 id=11 maker=3 side=buy px=101 qty=5 rem=2 mrem=0
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=0 count=0
		depth inst=1 side=buy px=101 qty=2 count=1
		release inst=1`)
	setup()
	s.expect(stp(acct(lim(12, B, 101, 12), 7), engine.STPCancelBoth), `
		accepted inst=1 id=12
		trade inst=1 id=12 maker=1 side=buy px=100 qty=5 rem=7 mrem=0
		cancelled inst=1 id=2 side=sell px=100 qty=5 rem=0 reason=self_trade
		cancelled inst=1 id=12 side=buy px=101 qty=7 rem=0 reason=self_trade
		depth inst=1 side=sell px=100 qty=0 count=0
		release inst=1`)
	setup()
	// Decrement: 3 against maker 1 (5): maker left with 2, taker with 0.
	s.expect(stp(acct(lim(13, B, 101, 3), 1), engine.STPDecrement), `
		accepted inst=1 id=13
		cancelled inst=1 id=1 side=sell px=100 qty=3 rem=2 reason=self_trade
		cancelled inst=1 id=13 side=buy px=101 qty=3 rem=0 reason=self_trade
		depth inst=1 side=sell px=100 qty=7 count=2
		release inst=1`)
	// Decrement then trade then decrement, remainder rests.
	s.expect(stp(acct(lim(14, B, 101, 20), 1), engine.STPDecrement), `
		accepted inst=1 id=14
		cancelled inst=1 id=1 side=sell px=100 qty=2 rem=0 reason=self_trade
		cancelled inst=1 id=14 side=buy px=101 qty=2 rem=18 reason=self_trade
		trade inst=1 id=14 maker=2 side=buy px=100 qty=5 rem=13 mrem=0
		cancelled inst=1 id=3 side=sell px=101 qty=5 rem=0 reason=self_trade
		cancelled inst=1 id=14 side=buy px=101 qty=5 rem=8 reason=self_trade
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=0 count=0
		depth inst=1 side=buy px=101 qty=8 count=1
		release inst=1`)
	// A market IOC decrement: the remainder is cancelled ioc.
	setup()
	s.expect(stp(acct(mkt(15, B, 8), 1), engine.STPDecrement), `
		accepted inst=1 id=15
		cancelled inst=1 id=1 side=sell px=100 qty=5 rem=0 reason=self_trade
		cancelled inst=1 id=15 side=buy px=0 qty=5 rem=3 reason=self_trade
		trade inst=1 id=15 maker=2 side=buy px=100 qty=3 rem=0 mrem=2
		depth inst=1 side=sell px=100 qty=2 count=1
		release inst=1`)
	// No STP mode: the same account trades with itself.
	s.expect(acct(lim(16, B, 101, 4), 1), `
		accepted inst=1 id=16
		trade inst=1 id=16 maker=2 side=buy px=100 qty=2 rem=2 mrem=0
		trade inst=1 id=16 maker=3 side=buy px=101 qty=2 rem=0 mrem=3
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=3 count=1
		release inst=1`)
}

func TestModelPostOnly(t *testing.T) { testPostOnly(t, NewModel()) }

func testPostOnly(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.do(lim(1, S, 100, 5))
	post := func(c engine.Command) engine.Command { c.Post = true; return c }
	s.expect(post(lim(2, B, 100, 5)), `
		rejected inst=1 id=2 reason=post_only_would_cross
		release inst=1`)
	s.expect(post(lim(3, B, 99, 5)), `
		accepted inst=1 id=3
		depth inst=1 side=buy px=99 qty=5 count=1
		release inst=1`)
	s.expect(mod(3, 100, 5), `
		rejected inst=1 id=3 reason=post_only_would_cross
		release inst=1`)
	s.expect(post(tif(lim(4, B, 98, 5), engine.IOC)), `
		rejected inst=1 id=4 reason=bad_type
		release inst=1`)
	// A post-only stop-limit that crosses when it fires is cancelled.
	c := post(stopOrder(5, B, engine.StopLimit, engine.RefMark, 100, 100, 5))
	s.expect(c, `
		accepted inst=1 id=5
		release inst=1`)
	s.expect(markPx(100), `
		accepted inst=1 id=0
		trigger_fired inst=1 id=5 side=buy px=100
		cancelled inst=1 id=5 side=buy px=100 qty=5 rem=0 reason=post_only
		release inst=1`)
}

func TestModelModify(t *testing.T) { testModify(t, NewModel()) }

func testModify(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.do(lim(1, B, 100, 10))
	s.do(lim(2, B, 100, 10))
	s.expect(mod(1, 100, 4), `
		accepted inst=1 id=1
		replaced inst=1 id=1 side=buy px=100 qty=4
		depth inst=1 side=buy px=100 qty=14 count=2
		release inst=1`)
	// Order 1 kept its priority: a sell of 5 meets it first.
	s.expect(lim(3, S, 100, 5), `
		accepted inst=1 id=3
		trade inst=1 id=3 maker=1 side=sell px=100 qty=4 rem=1 mrem=0
		trade inst=1 id=3 maker=2 side=sell px=100 qty=1 rem=0 mrem=9
		depth inst=1 side=buy px=100 qty=9 count=1
		release inst=1`)
	s.do(lim(4, B, 100, 10))
	// Quantity up loses priority: 2 goes behind 4.
	s.expect(mod(2, 100, 12), `
		accepted inst=1 id=2
		replaced inst=1 id=2 side=buy px=100 qty=12
		depth inst=1 side=buy px=100 qty=22 count=2
		release inst=1`)
	s.expect(lim(5, S, 100, 11), `
		accepted inst=1 id=5
		trade inst=1 id=5 maker=4 side=sell px=100 qty=10 rem=1 mrem=0
		trade inst=1 id=5 maker=2 side=sell px=100 qty=1 rem=0 mrem=11
		depth inst=1 side=buy px=100 qty=11 count=1
		release inst=1`)
	// Price change crossing the book: the modified order trades as a taker
	// and its remainder rests at the new price.
	s.do(lim(6, S, 102, 5))
	s.expect(mod(2, 103, 8), `
		accepted inst=1 id=2
		replaced inst=1 id=2 side=buy px=103 qty=8
		trade inst=1 id=2 maker=6 side=buy px=102 qty=5 rem=3 mrem=0
		depth inst=1 side=buy px=100 qty=0 count=0
		depth inst=1 side=sell px=102 qty=0 count=0
		depth inst=1 side=buy px=103 qty=3 count=1
		release inst=1`)
	s.expect(mod(2, 103, 3), `
		rejected inst=1 id=2 reason=no_change
		release inst=1`)
	s.expect(mod(99, 103, 3), `
		rejected inst=1 id=99 reason=unknown_order
		release inst=1`)
	s.expect(mod(2, 103, 0), `
		rejected inst=1 id=2 reason=bad_quantity
		release inst=1`)
	s.expect(mod(2, 1001, 3), `
		rejected inst=1 id=2 reason=price_out_of_band
		release inst=1`)
	s.do(stopOrder(7, S, engine.Stop, engine.RefMark, 50, 0, 5))
	s.expect(mod(7, 60, 5), `
		rejected inst=1 id=7 reason=not_modifiable
		release inst=1`)
	s.expect(cxl(7), `
		accepted inst=1 id=7
		cancelled inst=1 id=7 side=sell px=0 qty=5 rem=0 reason=requested
		release inst=1`)
	s.expect(cxl(2), `
		accepted inst=1 id=2
		cancelled inst=1 id=2 side=buy px=103 qty=3 rem=0 reason=requested
		depth inst=1 side=buy px=103 qty=0 count=0
		release inst=1`)
	s.expect(cxl(2), `
		rejected inst=1 id=2 reason=unknown_order
		release inst=1`)
}

func TestModelStops(t *testing.T) { testStops(t, NewModel()) }

func testStops(t *testing.T, a applier) {
	s := newScenario(t, a)
	// No reference yet: a buy stop at 100 on last trade stays armed.
	s.expect(stopOrder(1, B, engine.Stop, engine.RefLastTrade, 100, 0, 5), `
		accepted inst=1 id=1
		release inst=1`)
	s.do(lim(2, S, 101, 5))
	s.do(lim(3, S, 103, 5))
	s.do(stopOrder(4, B, engine.StopLimit, engine.RefLastTrade, 101, 102, 3))
	s.do(acct(lim(5, S, 100, 1), 9))
	// A trade at 100 fires 1 (stop 100): it buys 101 x5, the last trade
	// becomes 101 and fires 4 (stop 101), a limit at 102 that finds
	// nothing below 103 and rests.
	s.expect(acct(lim(6, B, 100, 1), 8), `
		accepted inst=1 id=6
		trade inst=1 id=6 maker=5 side=buy px=100 qty=1 rem=0 mrem=0
		trigger_fired inst=1 id=1 side=buy px=100
		trade inst=1 id=1 maker=2 side=buy px=101 qty=5 rem=0 mrem=0
		trigger_fired inst=1 id=4 side=buy px=101
		depth inst=1 side=sell px=100 qty=0 count=0
		depth inst=1 side=sell px=101 qty=0 count=0
		depth inst=1 side=buy px=102 qty=3 count=1
		release inst=1`)
	// Mark triggers; a newly armed stop that is already satisfied fires
	// at once; lowest arrival sequence fires first.
	s.expect(markPx(110), `
		accepted inst=1 id=0
		release inst=1`)
	s.do(stopOrder(7, S, engine.Stop, engine.RefMark, 105, 0, 2))
	s.expect(markPx(105), `
		accepted inst=1 id=0
		trigger_fired inst=1 id=7 side=sell px=105
		trade inst=1 id=7 maker=4 side=sell px=102 qty=2 rem=0 mrem=1
		depth inst=1 side=buy px=102 qty=1 count=1
		release inst=1`)
	s.expect(stopOrder(8, B, engine.StopLimit, engine.RefMark, 100, 103, 2), `
		accepted inst=1 id=8
		trigger_fired inst=1 id=8 side=buy px=105
		trade inst=1 id=8 maker=3 side=buy px=103 qty=2 rem=0 mrem=3
		depth inst=1 side=sell px=103 qty=3 count=1
		release inst=1`)
	s.do(stopOrder(9, S, engine.StopLimit, engine.RefMark, 90, 95, 1))
	s.do(stopOrder(10, S, engine.Stop, engine.RefMark, 95, 0, 1))
	s.expect(markPx(90), `
		accepted inst=1 id=0
		trigger_fired inst=1 id=9 side=sell px=90
		trade inst=1 id=9 maker=4 side=sell px=102 qty=1 rem=0 mrem=0
		trigger_fired inst=1 id=10 side=sell px=90
		cancelled inst=1 id=10 side=sell px=0 qty=1 rem=0 reason=ioc
		depth inst=1 side=buy px=102 qty=0 count=0
		release inst=1`)
	s.expect(stopOrder(11, S, engine.Stop, engine.RefMark, 95, 0, 1), `
		accepted inst=1 id=11
		trigger_fired inst=1 id=11 side=sell px=90
		cancelled inst=1 id=11 side=sell px=0 qty=1 rem=0 reason=ioc
		release inst=1`)
	s.expect(stopOrder(12, S, engine.Stop, engine.RefMark, 95, 0, 1), `
		accepted inst=1 id=12
		trigger_fired inst=1 id=12 side=sell px=90
		cancelled inst=1 id=12 side=sell px=0 qty=1 rem=0 reason=ioc
		release inst=1`)
}

func TestModelMassCancel(t *testing.T) { testMassCancel(t, NewModel()) }

func testMassCancel(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.do(def(2, 1, 1, 1, 1000))
	on2 := func(c engine.Command) engine.Command { c.Instrument = 2; return c }
	s.do(acct(on2(lim(1, B, 50, 1)), 1))
	s.do(acct(lim(2, S, 60, 1), 1))
	s.do(acct(lim(3, B, 40, 1), 1))
	s.do(acct(lim(4, B, 45, 1), 1))
	s.do(acct(lim(5, B, 45, 1), 2))
	s.do(acct(lim(6, S, 55, 1), 1))
	s.do(acct(stopOrder(7, S, engine.Stop, engine.RefMark, 30, 0, 1), 1))
	s.do(acct(stopOrder(8, B, engine.StopLimit, engine.RefMark, 70, 71, 1), 1))
	s.do(acct(stopOrder(9, B, engine.StopLimit, engine.RefLastTrade, 80, 81, 1), 1))
	s.do(acct(stopOrder(10, S, engine.Stop, engine.RefMark, 35, 0, 1), 1))
	s.do(acct(stopOrder(11, B, engine.Stop, engine.RefMark, 65, 0, 1), 1))
	s.expect(engine.Command{Kind: engine.CmdMassCancel, Account: 1}, `
		accepted inst=0 id=0
		cancelled inst=1 id=4 side=buy px=45 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=3 side=buy px=40 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=6 side=sell px=55 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=2 side=sell px=60 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=9 side=buy px=81 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=11 side=buy px=0 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=8 side=buy px=71 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=10 side=sell px=0 qty=1 rem=0 reason=mass_cancel
		cancelled inst=1 id=7 side=sell px=0 qty=1 rem=0 reason=mass_cancel
		cancelled inst=2 id=1 side=buy px=50 qty=1 rem=0 reason=mass_cancel
		depth inst=1 side=buy px=45 qty=1 count=1
		depth inst=1 side=buy px=40 qty=0 count=0
		depth inst=1 side=sell px=55 qty=0 count=0
		depth inst=1 side=sell px=60 qty=0 count=0
		depth inst=2 side=buy px=50 qty=0 count=0
		release inst=0`)
	s.expect(engine.Command{Kind: engine.CmdMassCancel, Instrument: 3}, `
		rejected inst=3 id=0 reason=unknown_instrument
		release inst=3`)
	s.expect(engine.Command{Kind: engine.CmdMassCancel, Instrument: 2}, `
		accepted inst=2 id=0
		release inst=2`)
}

func TestModelRejects(t *testing.T) { testRejects(t, NewModel()) }

func testRejects(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.expect(def(1, 1, 1, 1, 10), `rejected inst=1 id=0 reason=duplicate_instrument
		release inst=1`)
	s.expect(def(0, 1, 1, 1, 10), `rejected inst=0 id=0 reason=bad_instrument
		release inst=0`)
	s.expect(def(5, 2, 1, 1, 10), `rejected inst=5 id=0 reason=bad_instrument
		release inst=5`)
	s.expect(def(5, 2, 1, 12, 10), `rejected inst=5 id=0 reason=bad_instrument
		release inst=5`)
	s.expect(def(5, 2, 1, 10, 10), `accepted inst=5 id=0
		release inst=5`)
	s.expect(def(8, 3, 1, 3, 3+3*(1<<32)), `rejected inst=8 id=0 reason=bad_instrument
		release inst=8`)
	s.expect(def(8, 3, 1, 3, 3+3*(1<<32-1)), `accepted inst=8 id=0
		release inst=8`)
	s.expect(def(9, 1, 1, math.MaxInt64-5, math.MaxInt64), `accepted inst=9 id=0
		release inst=9`)
	s.do(def(6, 5, 10, 100, 200))
	on6 := func(c engine.Command) engine.Command { c.Instrument = 6; return c }
	bad := func(c engine.Command, reason string) {
		t.Helper()
		s.expect(c, "rejected inst="+itoa(int64(c.Instrument))+" id="+itoa(int64(c.OrderID))+" reason="+reason+"\nrelease inst="+itoa(int64(c.Instrument)))
	}
	bad(on6(lim(1, 0, 105, 10)), "bad_side")
	bad(on6(lim(1, 0, 105, 0)), "bad_side")
	bad(on6(tif(mkt(1, B, 10), engine.GTC)), "bad_type")
	bad(on6(tif(stopOrder(1, B, engine.Stop, engine.RefMark, 150, 0, 10), engine.GTC)), "bad_type")
	bad(on6(stopOrder(1, B, engine.StopLimit, 0, 150, 150, 10)), "bad_type")
	bad(on6(stp(lim(1, B, 105, 10), 5)), "bad_stp")
	bad(on6(stp(lim(1, B, 105, 15), 5)), "bad_stp")
	bad(on6(lim(1, B, 105, 15)), "bad_quantity")
	bad(on6(lim(1, B, 103, 10)), "bad_price")
	bad(on6(lim(1, B, 95, 10)), "price_out_of_band")
	bad(on6(lim(1, B, 95, 15)), "bad_quantity")
	bad(on6(stopOrder(1, B, engine.StopLimit, engine.RefMark, 205, 95, 10)), "price_out_of_band")
	bad(on6(stopOrder(1, B, engine.StopLimit, engine.RefMark, 207, 105, 10)), "bad_price")
	bad(on6(stopOrder(1, B, engine.Stop, engine.RefMark, 0, 3, 10)), "bad_price")
	bad(on6(lim(0, B, 105, 10)), "duplicate_order_id")
	unknown := lim(1, B, 105, 10)
	unknown.Instrument = 77
	bad(unknown, "unknown_instrument")
	bad(on6(engine.Command{Kind: engine.CmdNewOrder, OrderID: 1}), "bad_side")
	// Ignored fields: price of a market order, stop of a limit order.
	s.expect(on6(mkt(1, B, 10)), `accepted inst=6 id=1
		cancelled inst=6 id=1 side=buy px=0 qty=10 rem=0 reason=ioc
		release inst=6`)
	c := on6(lim(1, B, 105, 10))
	c.Stop, c.Ref = 3, 7
	s.do(c)
	bad(on6(lim(1, S, 200, 10)), "duplicate_order_id")
	bad(lim(1, S, 200, 10), "duplicate_order_id")
	bad(cxl(1), "unknown_order")
	bad(engine.Command{Kind: engine.CmdMarkPrice, Instrument: 6, Price: 7}, "bad_price")
	s.expect(engine.Command{Kind: engine.CmdMarkPrice, Instrument: 6, OrderID: 3}, `rejected inst=6 id=0 reason=bad_price
		release inst=6`)
	s.expect(engine.Command{Kind: 9, Instrument: 6, OrderID: 3}, `rejected inst=6 id=0 reason=bad_command
		release inst=6`)
	s.expect(engine.Command{Kind: engine.CmdMarkPrice, Instrument: 6, Price: 500}, `accepted inst=6 id=0
		release inst=6`)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestModelIdempotence(t *testing.T) { testIdempotence(t, NewModel()) }

func testIdempotence(t *testing.T, a applier) {
	s := newScenario(t, a)
	s.manual = true
	c := lim(1, B, 100, 10)
	c.Source, c.Seq = 7, 5
	s.expect(c, `accepted inst=1 id=1
		depth inst=1 side=buy px=100 qty=10 count=1
		release inst=1`)
	s.expect(c, ``)
	c.Seq, c.OrderID = 3, 2
	s.expect(c, ``)
	// A rejected command moves the mark too.
	c.Seq, c.OrderID = 6, 1
	s.expect(c, `rejected inst=1 id=1 reason=duplicate_order_id
		release inst=1`)
	c.Seq, c.OrderID = 6, 2
	s.expect(c, ``)
	// A new source accepts sequence 0, then ignores a repeat of it.
	c.Source, c.Seq, c.OrderID = 0, 0, 3
	s.expect(c, `accepted inst=1 id=3
		depth inst=1 side=buy px=100 qty=20 count=2
		release inst=1`)
	c.OrderID = 4
	s.expect(c, ``)
	c.Source, c.Seq, c.Kind = 8, 1, 0
	s.expect(c, `rejected inst=1 id=0 reason=bad_command
		release inst=1`)
	c.Kind = engine.CmdNewOrder
	s.expect(c, ``)
}

// subject is what the record scenario needs: the model or the engine.
type subject interface {
	applier
	SnapshotTo(engine.Sink) error
	StateHash() uint64
}

func TestModelRecords(t *testing.T) { testRecords(t, NewModel()) }

func testRecords(t *testing.T, m subject) {
	s := newScenario(t, m)
	s.do(def(9, 1, 1, 1, 1000))
	s.do(lim(1, B, 50, 1))
	s.do(lim(2, S, 60, 2))
	s.do(lim(3, B, 55, 3))
	s.do(lim(4, B, 50, 4))
	s.do(stp(lim(5, S, 58, 5), engine.STPDecrement))
	s.do(stopOrder(6, S, engine.Stop, engine.RefMark, 30, 999, 1))
	s.do(stopOrder(7, B, engine.StopLimit, engine.RefMark, 70, 71, 1))
	s.do(stopOrder(8, B, engine.StopLimit, engine.RefLastTrade, 80, 81, 1))
	s.do(stopOrder(9, S, engine.Stop, engine.RefMark, 35, 0, 1))
	s.do(stopOrder(10, B, engine.Stop, engine.RefMark, 65, 0, 1))
	s.do(stopOrder(11, B, engine.Stop, engine.RefMark, 65, 0, 1))
	c := lim(12, S, 70, 1)
	c.Instrument, c.Source, c.Seq = 9, 3, 40
	s.manual = true
	s.do(c)
	var r Recorder
	if err := m.SnapshotTo(&r); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.Lines[:len(r.Lines)-1], "\n") + "\n"
	want := trimLines(`
		header 1 13 2 2 6 6
		source 1 13
		source 3 40
		mark 1 1 1 1 1000 0 0
		mark 9 1 1 1 1000 0 0
		resting 1 buy 3 3 55 3 3 none false
		resting 1 buy 1 1 50 1 1 none false
		resting 1 buy 4 4 50 4 4 none false
		resting 1 sell 5 5 58 5 5 decrement false
		resting 1 sell 2 2 60 2 2 none false
		resting 9 sell 12 12 70 1 12 none false
		trigger 1 buy 8 8 stop_limit gtc last 80 81 1 8 none false
		trigger 1 buy 10 10 stop ioc mark 65 0 1 10 none false
		trigger 1 buy 11 11 stop ioc mark 65 0 1 11 none false
		trigger 1 buy 7 7 stop_limit gtc mark 70 71 1 7 none false
		trigger 1 sell 9 9 stop ioc mark 35 0 1 9 none false
		trigger 1 sell 6 6 stop ioc mark 30 0 1 6 none false`)
	if got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	if end, h := r.Lines[len(r.Lines)-1], m.StateHash(); end != "end 2 2 6 6 "+strconv.FormatUint(h, 10) {
		t.Fatalf("end record %q, state hash %d", end, h)
	}
}

// TestEngineScenarios runs the hand-written scenarios against the engine.
func TestEngineScenarios(t *testing.T) {
	for name, f := range map[string]func(*testing.T, applier){
		"SimpleCross": testSimpleCross, "PartialFills": testPartialFills, "FOK": testFOK, "STP": testSTP,
		"PostOnly": testPostOnly, "Modify": testModify, "Stops": testStops, "MassCancel": testMassCancel,
		"Rejects": testRejects, "Idempotence": testIdempotence,
	} {
		t.Run(name, func(t *testing.T) { f(t, engine.New()) })
	}
	t.Run("Records", func(t *testing.T) { testRecords(t, engine.New()) })
}

// TestHugeQuantities: a quantity above [engine.MaxQty] is rejected
// (bad_quantity) by new orders and modifies; at MaxQty orders rest, match,
// decrement and fill-or-kill like any other, and a crowded level's total
// is exact.
func TestHugeQuantities(t *testing.T) {
	m, e := newScenario(t, NewModel()), newScenario(t, engine.New())
	both := func(c engine.Command) []engine.Event {
		t.Helper()
		mv, ev := m.do(c), e.do(c)
		if firstDiff(ev, mv) >= 0 {
			t.Fatalf("%s:\nengine:\n%smodel:\n%s", FormatCommand(&c), FormatEvents(ev, "  "), FormatEvents(mv, "  "))
		}
		return mv
	}
	const maxQ = engine.MaxQty
	for _, q := range []int64{maxQ + 1, 1 << 62, -maxQ} {
		if evs := both(lim(1, S, 100, q)); evs[0].Reason != engine.RejBadQuantity {
			t.Fatalf("qty %d: %s", q, FormatEvents(evs, ""))
		}
	}
	for i := 0; i < 8; i++ {
		both(lim(uint64(i+1), S, 100, maxQ))
	}
	if evs := both(mod(1, 100, maxQ+1)); evs[0].Reason != engine.RejBadQuantity {
		t.Fatalf("modify to MaxQty+1: %s", FormatEvents(evs, ""))
	}
	both(tif(lim(9, B, 100, 5), engine.FOK))
	both(tif(mkt(10, B, maxQ), engine.FOK))
	both(lim(11, B, 100, maxQ))
	both(stp(acct(tif(lim(12, B, 100, maxQ), engine.FOK), 4), engine.STPDecrement))
	both(stp(acct(lim(13, B, 100, maxQ), 4), engine.STPDecrement))
	both(mod(5, 100, maxQ-1))
	both(lim(14, B, 101, maxQ))
}
