package enginetest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// genStats runs the model on a generated stream and counts what happened.
type genStats struct {
	kinds     map[string]int // command kind, with order type
	events    map[engine.EventKind]int
	reasons   map[engine.Reason]int
	stp       map[engine.STP]int // new orders by STP mode
	maxCount  int64              // most orders seen at one level
	maxBook   int                // most resting orders at once
	ignored   int
	deepFired int // commands that fired two or more triggers
}

func runGenStats(seed int64, n int, cfg GenConfig) *genStats {
	st := &genStats{kinds: map[string]int{}, events: map[engine.EventKind]int{}, reasons: map[engine.Reason]int{}, stp: map[engine.STP]int{}}
	g := NewGen(seed, cfg)
	m := NewModel()
	var c engine.Command
	for i := 0; i < n; i++ {
		g.Next(&c)
		k := c.Kind.String()
		if c.Kind == engine.CmdNewOrder {
			k += "/" + c.Type.String() + "/" + c.TIF.String()
			if c.Post {
				k += "/post"
			}
			st.stp[min(c.STP, 5)]++
		}
		st.kinds[k]++
		evs := m.Apply(&c)
		g.Observe(evs)
		if len(evs) == 0 {
			st.ignored++
		}
		fired := 0
		for _, e := range evs {
			st.events[e.Kind]++
			if e.Kind == engine.EvRejected || e.Kind == engine.EvCancelled {
				st.reasons[e.Reason]++
			}
			if e.Kind == engine.EvDepth && e.Count > st.maxCount {
				st.maxCount = e.Count
			}
			if e.Kind == engine.EvTriggerFired {
				fired++
			}
		}
		if fired >= 2 {
			st.deepFired++
		}
		if i%1000 == 0 {
			if r, _ := m.Orders(); r > st.maxBook {
				st.maxBook = r
			}
		}
	}
	return st
}

func (st *genStats) String() string {
	var b strings.Builder
	var keys []string
	for k := range st.kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-32s %d\n", k, st.kinds[k])
	}
	for k := engine.EvAccepted; k <= engine.EvRelease; k++ {
		fmt.Fprintf(&b, "  event %-14s %d\n", k, st.events[k])
	}
	for r := engine.Reason(0); r < 64; r++ {
		if st.reasons[r] > 0 {
			fmt.Fprintf(&b, "  reason %-22s %d\n", r, st.reasons[r])
		}
	}
	fmt.Fprintf(&b, "  stp %v\n  ignored %d, max level count %d, max book %d, commands firing 2+ triggers %d\n",
		st.stp, st.ignored, st.maxCount, st.maxBook, st.deepFired)
	return b.String()
}

// TestGenCoverage checks that a modest stream hits every command kind,
// order type, TIF, STP mode, every reject reason and every cancel reason,
// with crowded levels and trigger chains.
func TestGenCoverage(t *testing.T) {
	if raceEnabled {
		t.Skip("single-goroutine generator statistics: nothing for the race detector")
	}
	st := runGenStats(1, 200_000, GenConfig{})
	t.Logf("\n%s", st)
	for r := engine.RejUnknownInstrument; r <= engine.RejNoChange; r++ {
		if st.reasons[r] == 0 {
			t.Errorf("no reject %s", r)
		}
	}
	for r := engine.CxlRequested; r <= engine.CxlPostOnly; r++ {
		if st.reasons[r] == 0 {
			t.Errorf("no cancel %s", r)
		}
	}
	for k := engine.EvAccepted; k <= engine.EvRelease; k++ {
		if st.events[k] == 0 {
			t.Errorf("no event %s", k)
		}
	}
	for _, k := range []string{"new_order/limit/gtc", "new_order/limit/gtc/post", "new_order/limit/ioc", "new_order/limit/fok",
		"new_order/market/ioc", "new_order/market/fok", "new_order/stop/ioc", "new_order/stop/fok",
		"new_order/stop_limit/gtc", "new_order/stop_limit/gtc/post", "new_order/stop_limit/ioc", "new_order/stop_limit/fok",
		"cancel", "modify", "mass_cancel", "mark_price", "define_instrument"} {
		if st.kinds[k] == 0 {
			t.Errorf("no %s command", k)
		}
	}
	for m := engine.STPNone; m <= engine.STPDecrement; m++ {
		if st.stp[m] == 0 {
			t.Errorf("no order with stp %s", m)
		}
	}
	if st.ignored == 0 {
		t.Error("no resent command")
	}
	if st.maxCount < 10 {
		t.Errorf("levels not crowded: at most %d orders", st.maxCount)
	}
	for _, c := range []struct {
		cfg      GenConfig
		crowd    int64
		minOrder int
	}{
		{GenConfig{Spread: 2}, 20, 200},
		{GenConfig{Deep: true, Instruments: 1, MaxInstruments: 1, Spread: 1}, 300, 1000},
		{GenConfig{Deep: true, Instruments: 2, MaxInstruments: 2, Spread: 8}, 100, 5000},
	} {
		st := runGenStats(2, 60_000, c.cfg)
		if st.maxCount < c.crowd || st.maxBook < c.minOrder {
			t.Errorf("%+v: at most %d orders at a level, %d in the books", c.cfg, st.maxCount, st.maxBook)
		}
	}
	if st.deepFired == 0 {
		t.Error("no trigger chain")
	}
}

func TestGenDeterministicNoAlloc(t *testing.T) {
	a, b := NewGen(7, GenConfig{}), NewGen(7, GenConfig{})
	var ca, cb engine.Command
	for i := 0; i < 10_000; i++ {
		a.Next(&ca)
		b.Next(&cb)
		if ca != cb {
			t.Fatalf("command %d differs: %s / %s", i, FormatCommand(&ca), FormatCommand(&cb))
		}
	}
	evs := []engine.Event{{Kind: engine.EvAccepted, OrderID: 3}, {Kind: engine.EvTrade, OrderID: 3, Maker: 2, Remaining: 1}}
	allocs := testing.AllocsPerRun(10_000, func() {
		a.Next(&ca)
		a.Observe(evs)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per command", allocs)
	}
}

func TestGenWideIDs(t *testing.T) {
	g := NewGen(1, GenConfig{WideIDs: true})
	for _, c := range []uint64{1, 2, 3, 1 << 40, ^uint64(0)} {
		if id := g.idOf(c); g.counterOf(id) != c || id == c {
			t.Fatalf("counter %d: id %d, back %d", c, id, g.counterOf(id))
		}
	}
	st := runGenStats(2, 20_000, GenConfig{WideIDs: true})
	if st.events[engine.EvTrade] == 0 || st.reasons[engine.CxlRequested] == 0 || st.events[engine.EvReplaced] == 0 {
		t.Fatalf("wide ids: no trades, cancels or modifies:\n%s", st)
	}
}
