package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/matchlog/matchlog/engine"
)

// The instrument every workload trades, and the price its books centre on.
// Tick and lot are 1, so any positive price and quantity is valid.
const (
	Instrument uint32 = 1
	Source     uint64 = 1
	Mid        int64  = 1_000_000
)

// DefineInstrument is the command that defines [Instrument].
func DefineInstrument() engine.Command {
	return engine.Command{Kind: engine.CmdDefineInstrument, Source: Source, Instrument: Instrument,
		Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 2 * Mid}
}

// Driver feeds commands to one engine as the single source [Source],
// stamping each command with the next sequence so that batches of commands
// can be applied again and again.
type Driver struct {
	E   *engine.Engine
	seq uint64
}

// NewDriver returns a driver of a new engine with [Instrument] defined.
func NewDriver() *Driver {
	d := &Driver{E: engine.New()}
	c := DefineInstrument()
	d.mustApply(&c)
	return d
}

// Apply stamps c with the next sequence and applies it.
func (d *Driver) Apply(c *engine.Command) []engine.Event {
	d.seq++
	c.Seq = d.seq
	return d.E.Apply(c)
}

// Seq returns the sequence of the last command applied.
func (d *Driver) Seq() uint64 { return d.seq }

// Skip moves the driver's sequence to seq, for commands applied to d.E
// directly with sequences of their own.
func (d *Driver) Skip(seq uint64) { d.seq = seq }

// mustApply applies c and panics if the engine rejects it: workloads are
// built to be valid, so a reject is a bug in the workload or the engine.
func (d *Driver) mustApply(c *engine.Command) []engine.Event {
	evs := d.Apply(c)
	if err := accepted(c, evs); err != nil {
		panic(err)
	}
	return evs
}

func accepted(c *engine.Command, evs []engine.Event) error {
	if len(evs) == 0 {
		return fmt.Errorf("bench: %v order %d (seq %d) ignored", c.Kind, c.OrderID, c.Seq)
	}
	if evs[0].Kind != engine.EvAccepted {
		return fmt.Errorf("bench: %v order %d (seq %d) rejected: %v", c.Kind, c.OrderID, c.Seq, evs[0].Reason)
	}
	return nil
}

// Placed is a resting order a workload put in a book.
type Placed struct {
	ID    uint64
	Side  engine.Side
	Price int64
	Qty   int64
}

// NewLimit returns a GTC limit order command.
func NewLimit(id uint64, side engine.Side, price, qty int64, account uint64) engine.Command {
	return engine.Command{Kind: engine.CmdNewOrder, Source: Source, Instrument: Instrument, OrderID: id,
		Account: account, Side: side, Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: qty}
}

// NewIOC returns an IOC limit order command.
func NewIOC(id uint64, side engine.Side, price, qty int64, account uint64) engine.Command {
	c := NewLimit(id, side, price, qty, account)
	c.TIF = engine.IOC
	return c
}

// Cancel returns a cancel command.
func Cancel(id uint64) engine.Command {
	return engine.Command{Kind: engine.CmdCancel, Source: Source, Instrument: Instrument, OrderID: id}
}

// Modify returns a modify command: new price and new remaining quantity.
func Modify(id uint64, price, qty int64) engine.Command {
	return engine.Command{Kind: engine.CmdModify, Source: Source, Instrument: Instrument, OrderID: id,
		Price: price, Qty: qty}
}

// PassivePrice is the price at offset ticks (≥ 1) away from [Mid] on side
// s: bids below Mid, asks above, so passive orders of the two sides never
// cross.
func PassivePrice(s engine.Side, offset int64) int64 {
	if s == engine.Buy {
		return Mid - offset
	}
	return Mid + offset
}

// BookSpec describes a book built from empty through new-order commands
// in random arrival order: each order's side and level are drawn at random,
// ids rise with arrival, so arrival order is unrelated to walk order. No
// order crosses: bids sit at Mid-1 … Mid-Levels, asks at Mid+1 … Mid+Levels.
type BookSpec struct {
	// Orders is the number of resting orders when PerLevel is 0: each picks
	// a side and one of Levels levels uniformly at random.
	Orders int
	// Levels is the number of price levels on each side.
	Levels int
	// PerLevel, when > 0, puts exactly PerLevel orders at each of the Levels
	// levels of each side (2·Levels·PerLevel orders, in shuffled arrival
	// order); Orders is then ignored.
	PerLevel int
	// Qty, when > 0, gives every order this quantity; otherwise quantities
	// are uniform in 1..100.
	Qty  int64
	Seed uint64
	// Keep records every order placed in [Book.Placed].
	Keep bool
}

// Count returns the number of orders the spec builds.
func (s BookSpec) Count() int {
	if s.PerLevel > 0 {
		return 2 * s.Levels * s.PerLevel
	}
	return s.Orders
}

// Book is a book built by [BuildBook].
type Book struct {
	D      *Driver
	Spec   BookSpec
	Placed []Placed // arrival order, when Spec.Keep
	NextID uint64   // first id not used by the book
	rng    *rand.Rand
}

// BuildBook builds the book s describes into a new engine.
func BuildBook(s BookSpec) *Book {
	d := NewDriver()
	bk := &Book{D: d, Spec: s, rng: rand.New(rand.NewPCG(s.Seed, 0x3017))}
	bk.Fill(d)
	return bk
}

// Fill places the book's orders into d, which must not hold them yet; it
// is BuildBook's work, exposed so that a build can be timed alone.
func (bk *Book) Fill(d *Driver) {
	s := bk.Spec
	r := rand.New(rand.NewPCG(s.Seed, 0xb00c))
	n := s.Count()
	if s.Keep {
		bk.Placed = make([]Placed, 0, n)
	}
	var slots []int32
	if s.PerLevel > 0 {
		slots = make([]int32, 0, n)
		for l := range s.Levels {
			for range 2 * s.PerLevel {
				slots = append(slots, int32(l))
			}
		}
		r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	}
	// Per level and side, the number of orders still to place (PerLevel
	// mode): the slot says the level, the side alternates by count.
	var left [2][]int32
	if s.PerLevel > 0 {
		for i := range left {
			left[i] = make([]int32, s.Levels)
			for l := range left[i] {
				left[i][l] = int32(s.PerLevel)
			}
		}
	}
	var c engine.Command
	for i := range n {
		var side engine.Side
		var lvl int64
		if s.PerLevel > 0 {
			lvl = int64(slots[i])
			si := int(r.Uint64() & 1)
			if left[si][lvl] == 0 {
				si ^= 1
			}
			left[si][lvl]--
			side = engine.Side(si + 1)
		} else {
			side = engine.Side(1 + r.Uint64()&1)
			lvl = r.Int64N(int64(s.Levels))
		}
		qty := s.Qty
		if qty <= 0 {
			qty = 1 + r.Int64N(100)
		}
		id := uint64(i + 1)
		price := PassivePrice(side, 1+lvl)
		c = NewLimit(id, side, price, qty, 1+r.Uint64N(1000))
		d.mustApply(&c)
		if s.Keep {
			bk.Placed = append(bk.Placed, Placed{ID: id, Side: side, Price: price, Qty: qty})
		}
	}
	bk.NextID = uint64(n + 1)
}

// Rand returns the book's random source for workloads built on it.
func (bk *Book) Rand() *rand.Rand { return bk.rng }
