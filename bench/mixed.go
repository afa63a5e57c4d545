package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/matchlog/matchlog/engine"
)

// MixedSpec describes exchange-core's published benchmark mix: a book of
// about Orders resting orders, then a stream of 82% moves (modify to a new
// price, which loses time priority), 9% GTC limit orders, 3% IOC orders
// and 6% cancels.
//
// The book is held at steady size by how the GTC orders are priced, not by
// changing the mix: while the book holds fewer than Orders orders a GTC
// order is passive (a random level), otherwise it takes the whole best
// opposite level exactly and leaves nothing resting. An IOC order takes up
// to 100 lots with a limit two ticks through the best opposite price.
// Passive prices and moves stay within Width ticks of [Mid] on their own
// side (a move shifts the price by 1..MoveMax ticks, reflected at the
// edges), so moves never cross; trades come from the IOC and aggressive GTC
// orders.
type MixedSpec struct {
	Orders   int   // resting orders the book is held at
	Width    int64 // passive prices lie 1..Width ticks from Mid
	MoveMax  int64 // a move shifts a price by 1..MoveMax ticks
	Commands int   // length of the stream
	Seed     uint64
}

// DefaultMixed is the mix BenchmarkMixed and the engine report run: about
// 1,000 orders on about 750 levels, 1M commands.
func DefaultMixed() MixedSpec {
	return MixedSpec{Orders: 1000, Width: 1150, MoveMax: 20, Commands: 1 << 20, Seed: 1}
}

// Command classes of the mix, in [Mixed.Count].
const (
	MixMove = iota
	MixGTC
	MixIOC
	MixCancel
)

// Mixed is a generated mix: the commands that build its starting book and
// the stream that follows. Every command carries its final sequence, so
// applying Setup then Stream to a new engine, in order, reproduces the run
// the generator made; nothing in it is rejected.
type Mixed struct {
	Spec   MixedSpec
	Setup  []engine.Command // define the instrument, build the starting book
	Stream []engine.Command
	Count  [4]int // commands of each class in Stream

	// Measured while generating, sampled every 1,024 commands.
	AvgOrders float64 // resting orders
	AvgLevels float64 // price levels, both sides
	Trades    int     // trades in the stream
	EndHash   uint64  // state hash after the stream
}

type live struct {
	side  engine.Side
	price int64
	qty   int64
	pos   int // index in ids
}

// mixGen tracks the book the engine holds, from the engine's own events.
type mixGen struct {
	spec  MixedSpec
	r     *rand.Rand
	d     *Driver
	book  map[uint64]live
	ids   []uint64
	next  uint64
	depth []engine.Level
}

func (g *mixGen) add(id uint64, side engine.Side, price, qty int64) {
	g.book[id] = live{side: side, price: price, qty: qty, pos: len(g.ids)}
	g.ids = append(g.ids, id)
}

func (g *mixGen) remove(id uint64) {
	o, ok := g.book[id]
	if !ok {
		return
	}
	last := g.ids[len(g.ids)-1]
	g.ids[o.pos] = last
	if l, ok := g.book[last]; ok {
		l.pos = o.pos
		g.book[last] = l
	}
	g.ids = g.ids[:len(g.ids)-1]
	delete(g.book, id)
}

// apply applies c, follows its events and, if it is a GTC taker with a
// remainder, records that the remainder rests.
func (g *mixGen) apply(c *engine.Command, trades *int) error {
	side := c.Side
	if c.Kind == engine.CmdModify {
		side = g.book[c.OrderID].side
		g.remove(c.OrderID)
	}
	evs := g.d.Apply(c)
	if err := accepted(c, evs); err != nil {
		return err
	}
	rem := c.Qty
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case engine.EvTrade:
			*trades++
			if ev.OrderID == c.OrderID {
				rem = ev.Remaining
			}
			if ev.MakerRemaining == 0 {
				g.remove(ev.Maker)
			} else if o, ok := g.book[ev.Maker]; ok {
				o.qty = ev.MakerRemaining
				g.book[ev.Maker] = o
			}
		case engine.EvCancelled:
			if ev.OrderID == c.OrderID && c.Kind != engine.CmdCancel {
				rem = 0
			}
			if ev.Remaining == 0 {
				g.remove(ev.OrderID)
			}
		}
	}
	gtc := c.Kind == engine.CmdModify || (c.Kind == engine.CmdNewOrder && c.TIF == engine.GTC)
	if gtc && rem > 0 {
		g.add(c.OrderID, side, c.Price, rem)
	}
	return nil
}

func (g *mixGen) best(s engine.Side) (engine.Level, bool) {
	g.depth = g.d.E.Depth(Instrument, s, 1, g.depth[:0])
	if len(g.depth) == 0 {
		return engine.Level{}, false
	}
	return g.depth[0], true
}

func (g *mixGen) passive(side engine.Side) engine.Command {
	g.next++
	off := 1 + g.r.Int64N(g.spec.Width)
	return NewLimit(g.next, side, PassivePrice(side, off), 1+g.r.Int64N(100), 1+g.r.Uint64N(1000))
}

func randSide(r *rand.Rand) engine.Side { return engine.Side(1 + r.Uint64()&1) }

// NewMixed generates the mix s describes. Generation runs the commands
// through an engine once, so it costs about as long as the stream takes to
// apply, plus the generator's own bookkeeping.
func NewMixed(s MixedSpec) (*Mixed, error) {
	g := &mixGen{spec: s, r: rand.New(rand.NewPCG(s.Seed, 0x313ed)), d: NewDriver(),
		book: make(map[uint64]live, 2*s.Orders)}
	m := &Mixed{Spec: s}
	def := DefineInstrument()
	def.Seq = 1
	m.Setup = append(m.Setup, def)
	var trades int
	for range s.Orders {
		c := g.passive(randSide(g.r))
		if err := g.apply(&c, &trades); err != nil {
			return nil, err
		}
		m.Setup = append(m.Setup, c)
	}
	trades = 0
	m.Stream = make([]engine.Command, 0, s.Commands)
	var sumOrders, sumLevels, samples float64
	for i := range s.Commands {
		var c engine.Command
		k := g.r.IntN(100)
		switch {
		case len(g.ids) == 0:
			c = g.passive(randSide(g.r))
			k = 82
		case k < 82:
			id := g.ids[g.r.IntN(len(g.ids))]
			o := g.book[id]
			off := o.price - Mid
			if o.side == engine.Buy {
				off = Mid - o.price
			}
			off = reflect(off+randDelta(g.r, s.MoveMax), s.Width)
			if p := PassivePrice(o.side, off); p != o.price {
				c = Modify(id, p, o.qty)
			} else {
				c = Modify(id, PassivePrice(o.side, reflect(off+1, s.Width)), o.qty)
				if c.Price == o.price {
					c.Price = PassivePrice(o.side, reflect(off-1, s.Width))
				}
			}
		case k < 91:
			side := randSide(g.r)
			if len(g.ids) < s.Orders {
				c = g.passive(side)
				break
			}
			opp := engine.Side(3 - side)
			lv, ok := g.best(opp)
			if !ok {
				c = g.passive(side)
				break
			}
			g.next++
			c = NewLimit(g.next, side, lv.Price, lv.Qty, 1+g.r.Uint64N(1000))
		case k < 94:
			side := randSide(g.r)
			opp := engine.Side(3 - side)
			price := Mid
			if lv, ok := g.best(opp); ok {
				price = lv.Price + 2
				if side == engine.Sell {
					price = lv.Price - 2
				}
			}
			g.next++
			c = NewIOC(g.next, side, price, 1+g.r.Int64N(100), 1+g.r.Uint64N(1000))
		default:
			c = Cancel(g.ids[g.r.IntN(len(g.ids))])
		}
		switch {
		case k < 82:
			m.Count[MixMove]++
		case k < 91:
			m.Count[MixGTC]++
		case k < 94:
			m.Count[MixIOC]++
		default:
			m.Count[MixCancel]++
		}
		if err := g.apply(&c, &trades); err != nil {
			return nil, fmt.Errorf("bench: mixed stream command %d: %w", i, err)
		}
		m.Stream = append(m.Stream, c)
		if i&1023 == 0 {
			sumOrders += float64(len(g.ids))
			sumLevels += float64(levels(g.d.E, &g.depth))
			samples++
		}
	}
	if n := g.d.E.Orders(); n != len(g.ids) {
		return nil, fmt.Errorf("bench: mixed generator tracks %d orders, engine holds %d", len(g.ids), n)
	}
	m.AvgOrders, m.AvgLevels = sumOrders/samples, sumLevels/samples
	m.Trades = trades
	m.EndHash = g.d.E.StateHash()
	return m, nil
}

// levels counts the price levels of both sides.
func levels(e *engine.Engine, buf *[]engine.Level) int {
	n := 0
	for _, s := range []engine.Side{engine.Buy, engine.Sell} {
		*buf = e.Depth(Instrument, s, 1<<30, (*buf)[:0])
		n += len(*buf)
	}
	return n
}

func randDelta(r *rand.Rand, max int64) int64 {
	d := 1 + r.Int64N(max)
	if r.Uint64()&1 == 0 {
		return -d
	}
	return d
}

// reflect folds off into 1..width.
func reflect(off, width int64) int64 {
	for off < 1 || off > width {
		if off < 1 {
			off = 2 - off
		}
		if off > width {
			off = 2*width - off
		}
	}
	return off
}

// NewDriver returns a driver whose engine has applied m.Setup.
func (m *Mixed) NewDriver() *Driver {
	d := &Driver{E: engine.New()}
	for i := range m.Setup {
		c := m.Setup[i]
		d.mustApply(&c)
	}
	return d
}

// Runner applies a mix's stream to an engine, over and over: when the
// stream runs out it rebuilds the engine from Setup and starts again. The
// stream's sequences are fixed, so each pass needs a new engine.
type Runner struct {
	M   *Mixed
	D   *Driver
	Pos int // next command of Stream
	// Warm is the number of stream commands applied after each rebuild
	// before the runner counts as steady: they fill free lists and tables.
	Warm int
}

// NewRunner returns a runner at the start of a fresh pass, already warm.
func (m *Mixed) NewRunner(warm int) *Runner {
	r := &Runner{M: m, Warm: min(warm, len(m.Stream)/2)}
	r.Reset()
	return r
}

// Reset rebuilds the engine and applies the warm-up commands.
func (r *Runner) Reset() {
	r.D = r.M.NewDriver()
	r.D.Skip(uint64(len(r.M.Setup)))
	for i := range r.Warm {
		r.D.E.Apply(&r.M.Stream[i])
	}
	r.Pos = r.Warm
}

// Left returns the number of commands left in this pass.
func (r *Runner) Left() int { return len(r.M.Stream) - r.Pos }

// Step applies the next command and reports whether the engine accepted
// it. The caller resets the runner when Left is 0.
func (r *Runner) Step() bool {
	evs := r.D.E.Apply(&r.M.Stream[r.Pos])
	r.Pos++
	return len(evs) > 0 && evs[0].Kind == engine.EvAccepted
}

// Run applies the next n commands (n ≤ Left) and returns how many the
// engine did not accept (0 for a sound mix).
func (r *Runner) Run(n int) (bad int) {
	e := r.D.E
	s := r.M.Stream[r.Pos : r.Pos+n]
	for i := range s {
		evs := e.Apply(&s[i])
		if len(evs) == 0 || evs[0].Kind != engine.EvAccepted {
			bad++
		}
	}
	r.Pos += n
	return bad
}
