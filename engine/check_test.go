package engine

import (
	"strings"
	"testing"
)

// TestCheckCatches corrupts a healthy engine one way at a time and requires
// the structure checker to notice each.
func TestCheckCatches(t *testing.T) {
	build := func(t *testing.T) (*Engine, *book) {
		s := newScript(t)
		s.do(limit(1, Buy, 100, 5))
		s.do(limit(2, Buy, 100, 3))
		s.do(limit(3, Sell, 105, 4))
		s.do(Command{OrderID: 4, Account: 4, Side: Buy, Type: Stop, TIF: IOC, Ref: RefMark, Stop: 200, Qty: 1})
		if err := s.e.Check(); err != nil {
			t.Fatal(err)
		}
		return s.e, s.e.byID[1]
	}
	cases := []struct {
		name, want string
		corrupt    func(e *Engine, b *book)
	}{
		{"level total", "totals", func(e *Engine, b *book) { b.lmap[0][100].qty++ }},
		{"empty level", "empty level", func(e *Engine, b *book) {
			l := e.lp.get(90)
			b.lmap[0][90] = l
			b.levels[0].ReplaceOrInsert(l)
		}},
		{"index entry lost", "index", func(e *Engine, b *book) { e.index.del(2) }},
		{"index entry stale", "index", func(e *Engine, b *book) {
			l, _ := e.index.get(1)
			l.px++
			e.index.put(1, l)
		}},
		{"crossed book", "crossed", func(e *Engine, b *book) {
			o, _ := b.orders[1].DeleteMin()
			o.setPx(b.ticks(99))
			b.orders[1].ReplaceOrInsert(o)
			l, _ := e.index.get(o.id)
			l.px = o.px()
			e.index.put(o.id, l)
			b.addLevel(&e.lp, 1, 105, -o.qty, -1)
			b.addLevel(&e.lp, 1, 99, o.qty, 1)
		}},
		{"trigger should have fired", "should have fired", func(e *Engine, b *book) { b.mark = 300 }},
		{"bad quantity", "invalid order", func(e *Engine, b *book) {
			o, _ := b.orders[0].DeleteMin()
			o.qty = 0
			b.orders[0].ReplaceOrInsert(o)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, b := build(t)
			c.corrupt(e, b)
			err := e.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error about %q", err, c.want)
			}
		})
	}
}
