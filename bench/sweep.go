package bench

import (
	"cmp"
	"slices"

	"github.com/matchlog/matchlog/engine"
)

// Sweep is the aggressive-match workload: IOC buy orders that each fill
// exactly Makers resting asks. Every ask in the book has quantity
// [SweepQty] and every taker asks for Makers·SweepQty with a limit above
// the whole ask side, so each taker trades with the next Makers asks in
// price-time order and no partial fills are left behind.
//
// A batch of takers eats Batch asks from the front of the book. Refill
// puts the same asks back (same ids, prices and quantities; new arrival
// sequences), so the book returns to its size; call it outside the timer.
type Sweep struct {
	B      *Book
	Makers int
	Batch  int // asks eaten per batch, a multiple of Makers

	takers []engine.Command
	queue  []Placed // asks in price-time order
	refill []engine.Command
}

// SweepQty is the quantity of every order in a sweep's book.
const SweepQty = 10

// NewSweep builds a book of orders resting orders on levels levels per
// side and a batch of takers that each fill makers asks.
func NewSweep(orders, levels, makers int, seed uint64) *Sweep {
	bk := BuildBook(BookSpec{Orders: orders, Levels: levels, Qty: SweepQty, Seed: seed, Keep: true})
	s := &Sweep{B: bk, Makers: makers}
	for _, p := range bk.Placed {
		if p.Side == engine.Sell {
			s.queue = append(s.queue, p)
		}
	}
	// Placed is in arrival order; a stable sort by price gives the
	// price-time order the engine matches in.
	slices.SortStableFunc(s.queue, func(a, b Placed) int { return cmp.Compare(a.Price, b.Price) })
	s.Batch = min(10_240, len(s.queue)/2) / makers * makers
	top := PassivePrice(engine.Sell, int64(levels))
	for i := range s.Batch / makers {
		s.takers = append(s.takers, NewIOC(bk.NextID+uint64(i), engine.Buy, top, int64(makers)*SweepQty, 1))
	}
	s.refill = make([]engine.Command, s.Batch)
	return s
}

// Takers returns the batch of taker commands.
func (s *Sweep) Takers() []engine.Command { return s.takers }

// Refill puts back the asks the last batch ate.
func (s *Sweep) Refill() {
	eaten := s.queue[:s.Batch]
	for i, p := range eaten {
		s.refill[i] = NewLimit(p.ID, p.Side, p.Price, p.Qty, 1)
		s.B.D.mustApply(&s.refill[i])
	}
	// The refilled asks arrive after every ask still resting, so within a
	// price they queue behind them.
	s.queue = slices.Concat(s.queue[s.Batch:], eaten)
	slices.SortStableFunc(s.queue, func(a, b Placed) int { return cmp.Compare(a.Price, b.Price) })
}
