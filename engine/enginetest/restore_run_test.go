package enginetest

import (
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// TestRestorerStrictInRun damages a resting order that continues its price
// level's run (the same instrument, side and price as the order before it,
// which the restorer checks only for what can differ) in every way the
// restorer must refuse, with the header and End made consistent again, so
// that only the per-order checks can catch it: each stream is refused with
// an error naming the problem, and the engine stays empty.
func TestRestorerStrictInRun(t *testing.T) {
	good, _ := goodTape(t)
	emptyHash := engine.New().StateHash()
	at := -1
	for i := 1; i < len(good); i++ {
		a, b := good[i-1], good[i]
		if a.Kind == RecResting && b.Kind == RecResting && a.Instrument == b.Instrument && a.Side == b.Side && a.Price == b.Price {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("tape lacks a level of two orders")
	}
	prev := good[at-1]
	cases := []struct {
		name, want string
		edit       func(*Record)
	}{
		{"quantity 0", "bad quantity", func(r *Record) { r.Qty = 0 }},
		{"quantity negative", "bad quantity", func(r *Record) { r.Qty = -r.Qty }},
		{"quantity above the maximum", "bad quantity", func(r *Record) { r.Qty = engine.MaxQty + 1 }},
		{"order id 0", "order id 0", func(r *Record) { r.OrderID = 0 }},
		{"sequence 0", "sequence", func(r *Record) { r.Seq = 0 }},
		{"sequence at next sequence", "sequence", func(r *Record) { r.Seq = good[0].Header.NextSeq }},
		{"bad STP mode", "STP", func(r *Record) { r.STP = engine.STPDecrement + 1 }},
		{"sequence before the previous order's", "out of stream order", func(r *Record) { r.Seq = prev.Seq - 1 }},
		{"sequence equal to the previous order's", "out of stream order", func(r *Record) { r.Seq, r.STP, r.Post = prev.Seq, prev.STP, prev.Post }},
		{"the previous order's id", "appears twice", func(r *Record) { r.OrderID = prev.OrderID }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := good.edit(at, c.edit).rehash()
			e := engine.New()
			r := e.Restorer()
			_ = tp.Replay(r)
			err := r.Err()
			if err == nil {
				t.Fatal("damaged stream accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %q", err, c.want)
			}
			if h := e.StateHash(); h != emptyHash {
				t.Fatal("refused stream left a non-empty engine")
			}
		})
	}
}
