package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// lowRenumber lowers the slot number at which a level is renumbered, for
// the test.
func lowRenumber(t *testing.T, at uint64) {
	old := renumberAt
	renumberAt = at
	t.Cleanup(func() { renumberAt = old })
}

// TestRenumberChurn drives one level through thousands of arrivals with
// the renumbering bound lowered to 48 slots: first a churn that keeps about
// 20 orders live (cancels of the oldest and of random orders, quantity
// cuts, which keep an order's place), then one that keeps 60, more than the
// bound, so every arrival renumbers. script.do checks the whole engine after
// each command (index entries against slots both ways); the level's next
// slot must stay at or below the bound whenever it holds fewer orders, and
// a final sweep must trade with the live orders in arrival order.
func TestRenumberChurn(t *testing.T) {
	lowRenumber(t, 48)
	s := newScript(t)
	r := rand.New(rand.NewPCG(3, 4))
	var live []uint64
	id := uint64(0)
	renumbered, prevNext := 0, uint64(0)
	for _, keep := range []int{20, 60} {
		for range 1500 {
			id++
			s.do(limit(id, Buy, 100, 10))
			live = append(live, id)
			if len(live) > keep {
				i := 0
				if r.IntN(3) == 0 {
					i = r.IntN(len(live))
				}
				if got := s.do(Command{Kind: CmdCancel, Instrument: 1, OrderID: live[i]}); !strings.HasPrefix(got, "accepted") {
					t.Fatalf("cancel of %d: %s", live[i], got)
				}
				live = slices.Delete(live, i, i+1)
			}
			if r.IntN(4) == 0 {
				m := live[r.IntN(len(live))]
				if got := s.do(Command{Kind: CmdModify, Instrument: 1, OrderID: m, Price: 100, Qty: 5}); !strings.HasPrefix(got, "accepted") && !strings.Contains(got, "no_change") {
					t.Fatalf("modify of %d: %s", m, got)
				}
			}
			l := s.e.byID[1].lmap[0].get(100)
			if l.next < prevNext {
				renumbered++
			}
			prevNext = l.next
			if int(l.count) < 48 && l.next > 48 {
				t.Fatalf("after order %d: next slot %d with %d orders live, past the bound 48", id, l.next, l.count)
			}
		}
	}
	if renumbered == 0 {
		t.Fatal("the level was never renumbered")
	}
	got := s.do(Command{OrderID: id + 1, Account: id + 1, Side: Sell, Type: Market, TIF: IOC, Qty: 100_000})
	var makers []uint64
	for _, f := range strings.Fields(got) {
		if rest, ok := strings.CutPrefix(f, "trade("); ok {
			var m uint64
			for _, c := range rest[strings.Index(rest, "<-")+2:] {
				if c < '0' || c > '9' {
					break
				}
				m = m*10 + uint64(c-'0')
			}
			makers = append(makers, m)
		}
	}
	if !slices.Equal(makers, live) {
		t.Fatalf("the sweep traded with %v, want the live orders in arrival order %v", makers, live)
	}
}

// TestRestoreRefusesFullLevel restores a snapshot with a level of 12
// orders with levelMax lowered to 12 and then 11: the first must restore,
// the second must fail naming the level's bound.
func TestRestoreRefusesFullLevel(t *testing.T) {
	s := newScript(t)
	for id := uint64(1); id <= 12; id++ {
		s.do(limit(id, Buy, 100, 1))
	}
	s.do(limit(13, Buy, 99, 1))
	for _, max := range []uint64{12, 11} {
		old := levelMax
		levelMax = max
		r := New()
		rs := r.Restorer()
		err := s.e.SnapshotTo(rs)
		if err == nil {
			err = rs.Err()
		}
		levelMax = old
		switch {
		case max == 12 && err != nil:
			t.Fatalf("restore with a bound of 12: %v", err)
		case max == 11 && (err == nil || !strings.Contains(err.Error(), "more than 11 orders at one price level")):
			t.Fatalf("restore of a 12-order level with a bound of 11: %v", err)
		}
	}
}
