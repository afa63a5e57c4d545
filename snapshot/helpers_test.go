package snapshot

import (
	"errors"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// bookSpec describes a test engine: every record kind is present whenever
// its count is above zero.
type bookSpec struct {
	instruments int // at least 1 when orders or triggers > 0
	sources     int
	orders      int // resting orders, exactly
	triggers    int // armed triggers, exactly
}

// buildEngine grows a book through the engine's commands: instruments,
// one trade per instrument (a last trade price) and a mark price on every
// other one, then resting orders that never cross and armed stops that
// never fire.
func buildEngine(t testing.TB, s bookSpec) *engine.Engine {
	t.Helper()
	e := engine.New()
	seq := map[uint64]uint64{}
	apply := func(c engine.Command) {
		t.Helper()
		src := uint64(1)
		if s.sources > 0 {
			src = 100 + uint64(len(seq)+int(c.OrderID))%uint64(s.sources)
		}
		seq[src]++
		c.Source, c.Seq = src, seq[src]
		for _, ev := range e.Apply(&c) {
			if ev.Kind == engine.EvRejected {
				t.Fatalf("command %+v rejected: %v", c, ev.Reason)
			}
		}
	}
	id := uint64(1)
	for i := 1; i <= s.instruments; i++ {
		inst := uint32(i * 3)
		apply(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: inst, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000})
		apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id, Account: 7, Side: engine.Buy,
			Type: engine.Limit, TIF: engine.GTC, Price: 1000, Qty: 1})
		apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id + 1, Account: 8, Side: engine.Sell,
			Type: engine.Limit, TIF: engine.GTC, Price: 1000, Qty: 1})
		id += 2
		if i%2 == 0 {
			apply(engine.Command{Kind: engine.CmdMarkPrice, Instrument: inst, Price: 1500})
		}
	}
	for i := 0; i < s.orders; i++ {
		inst := uint32((i%s.instruments + 1) * 3)
		side, px := engine.Buy, int64(999-(i/5)%400)
		if i%2 == 1 {
			side, px = engine.Sell, int64(2001+(i/5)%400)
		}
		apply(engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id, Account: uint64(1 + i%13), Side: side,
			Type: engine.Limit, TIF: engine.GTC, STP: engine.STP(i % 5), Post: i%3 == 0, Price: px, Qty: int64(1 + i%97)})
		id++
	}
	for i := 0; i < s.triggers; i++ {
		inst := uint32((i%s.instruments + 1) * 3)
		c := engine.Command{Kind: engine.CmdNewOrder, Instrument: inst, OrderID: id, Account: uint64(1 + i%5),
			Type: engine.Stop, TIF: engine.IOC, Ref: engine.TriggerRef(1 + i%2), Qty: int64(1 + i%11)}
		if i%2 == 0 {
			c.Side, c.Stop = engine.Buy, int64(5000+i%300)
		} else {
			c.Side, c.Stop = engine.Sell, int64(100+i%300)
		}
		if i%3 == 0 {
			c.Type, c.TIF, c.Price = engine.StopLimit, engine.GTC, c.Stop
		}
		apply(c)
		id++
	}
	if e.Orders() != s.orders || e.Triggers() != s.triggers {
		t.Fatalf("built %d orders and %d triggers, want %d and %d", e.Orders(), e.Triggers(), s.orders, s.triggers)
	}
	return e
}

var testMarker = Marker{TypeID: ServiceSnapshotTypeID, LogPosition: 123456, LeadershipTermID: 3,
	TimeUnit: aeronclustersbe.ClusterTimeUnitNANOS, AppVersion: 1 << 16}

var testLoad = LoadOptions{TypeID: ServiceSnapshotTypeID, AppVersion: 1 << 16}

// newLog returns a log, its publication and an image at position 0.
func newLog(t testing.TB, termLength, mtu int) (*logbuf.Log, *logbuf.ExclusivePublication, *logbuf.Image) {
	t.Helper()
	l, err := logbuf.New(termLength, mtu, 0, 1, 106)
	if err != nil {
		t.Fatal(err)
	}
	return l, l.Publication(), l.Image()
}

// capture takes e through a log of the given geometry, draining the image
// into copied fragments whenever the publisher is back-pressured (and at
// the end), and returns the fragments.
func capture(t testing.TB, e *engine.Engine, termLength, mtu int) [][]byte {
	t.Helper()
	l, pub, img := newLog(t, termLength, mtu)
	p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	frags, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.Take(e, testMarker) })
	if err != nil {
		t.Fatal(err)
	}
	if img.Position() != pub.Position() {
		t.Fatalf("image at %d, publication at %d", img.Position(), pub.Position())
	}
	return frags
}

func loadFrags(frags [][]byte) (*engine.Engine, error) {
	e, _, err := Load(stream.NewFrameSource(frags), testLoad)
	return e, err
}

// mustFail checks that a damaged stream fails loudly with no engine.
func mustFail(t *testing.T, what string, frags [][]byte) error {
	t.Helper()
	e, err := loadFrags(frags)
	if err == nil {
		t.Fatalf("%s: loaded without error", what)
	}
	if !errors.Is(err, ErrLoad) {
		t.Fatalf("%s: error %v is not ErrLoad", what, err)
	}
	if e != nil {
		t.Fatalf("%s: engine returned with error %v", what, err)
	}
	return err
}

func records(e *engine.Engine) []string { return enginetest.Records(e.SnapshotTo) }

// sameEngine checks state hash and record stream equality.
func sameEngine(t *testing.T, want, got *engine.Engine) {
	t.Helper()
	if w, g := want.StateHash(), got.StateHash(); w != g {
		t.Fatalf("state hash %#x, want %#x", g, w)
	}
	if w, g := records(want), records(got); !slices.Equal(w, g) {
		t.Fatalf("record streams differ: %d and %d records", len(w), len(g))
	}
	if err := got.Check(); err != nil {
		t.Fatal(err)
	}
}
