package scenario

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// dayFile returns n command lines shaped like a trading day: mostly limit
// orders, then cancels and modifies, a few market and stop orders.
func dayFile(n int) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	var file []byte
	for i := range n {
		c := engine.Command{Source: 1 + uint64(i%4), Seq: uint64(i + 1), Time: 1_700_000_000_000_000_000 + int64(i)*1000,
			Instrument: 1 + uint32(r.IntN(50)), OrderID: 1_000_000 + uint64(i)}
		switch k := r.IntN(100); {
		case k < 60:
			c.Kind, c.Type, c.TIF = engine.CmdNewOrder, engine.Limit, engine.GTC
			c.Side, c.Account = engine.Side(1+r.IntN(2)), uint64(r.IntN(1000))
			c.Price, c.Qty, c.STP = 10_000+r.Int64N(500), 1+r.Int64N(100), engine.STP(r.IntN(5))
		case k < 65:
			c.Kind, c.Type, c.TIF = engine.CmdNewOrder, engine.Market, engine.IOC
			c.Side, c.Qty = engine.Side(1+r.IntN(2)), 1+r.Int64N(100)
		case k < 67:
			c.Kind, c.Type, c.TIF, c.Ref = engine.CmdNewOrder, engine.StopLimit, engine.GTC, engine.RefMark
			c.Side, c.Price, c.Stop, c.Qty = engine.Side(1+r.IntN(2)), 10_100, 10_090, 10
		case k < 90:
			c.Kind, c.OrderID = engine.CmdCancel, 1_000_000+uint64(r.IntN(i+1))
		default:
			c.Kind, c.OrderID = engine.CmdModify, 1_000_000+uint64(r.IntN(i+1))
			c.Price, c.Qty = 10_000+r.Int64N(500), 1+r.Int64N(100)
		}
		file = AppendCommand(file, &c)
	}
	return file
}

func BenchmarkReader(b *testing.B) {
	const n = 100_000
	file := dayFile(n)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var c engine.Command
	for b.Loop() {
		rd := NewReader(bytes.NewReader(file))
		for {
			if err := rd.Next(&c); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// nop is an [Applier] that emits an accepted, a depth and a release event
// per command, like a resting limit order.
type nop struct{ evs [3]engine.Event }

func (e *nop) Apply(c *engine.Command) []engine.Event {
	e.evs[0] = engine.Event{Kind: engine.EvAccepted, Source: c.Source, Seq: c.Seq, Instrument: c.Instrument, OrderID: c.OrderID}
	e.evs[1] = engine.Event{Kind: engine.EvDepth, Instrument: c.Instrument, Side: engine.Buy, Price: c.Price, Qty: 1000, Count: 12}
	e.evs[2] = engine.Event{Kind: engine.EvRelease, Source: c.Source, Seq: c.Seq, Instrument: c.Instrument}
	return e.evs[:]
}

func (e *nop) StateHash() uint64 { return 0 }

// BenchmarkRun measures decode + encode around an engine that costs nothing.
func BenchmarkRun(b *testing.B) {
	const n = 100_000
	file := dayFile(n)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	var e nop
	for b.Loop() {
		if _, err := Run(bytes.NewReader(file), io.Discard, &e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
