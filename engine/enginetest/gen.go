package enginetest

import (
	"math"
	"math/rand/v2"

	"github.com/matchlog/matchlog/engine"
)

// GenConfig shapes a random command stream. Zero fields take the defaults
// shown.
type GenConfig struct {
	Instruments    int // instruments defined at the start (4)
	MaxInstruments int // new instruments appear now and then, up to this many (12)
	Accounts       int // accounts 1..Accounts, plus a few orders of account 0 (4)
	Sources        int // ingress sources; source ids 0, 1, 5, 9, ... (3)
	Spread         int // half-width in ticks of the crowded band prices are drawn from (6)
	InvalidPct     int // percent of deliberately invalid commands, every reject reason (6); -1 for none

	// WideIDs spreads order ids and account ids over the whole uint64
	// range instead of counting 1, 2, 3, ...
	WideIDs bool

	// Deep grows big books (tens of thousands of orders, deep B-trees):
	// mostly passive orders, few cancels, rare mass cancels.
	Deep bool
}

func (c GenConfig) withDefaults() GenConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Instruments, 4)
	def(&c.MaxInstruments, 12)
	def(&c.Accounts, 4)
	def(&c.Sources, 3)
	def(&c.Spread, 6)
	if c.InvalidPct == 0 {
		c.InvalidPct = 6
	}
	if c.InvalidPct < 0 {
		c.InvalidPct = 0
	}
	c.Instruments = min(c.Instruments, c.MaxInstruments, maxGenInstruments)
	c.MaxInstruments = min(c.MaxInstruments, maxGenInstruments)
	return c
}

const (
	maxGenInstruments = 64
	maxGenSources     = 16
	ringSize          = 4096 // recently created orders the generator remembers, by creation counter modulo ringSize
	bandTicks         = 100  // an instrument's band is its centre ± bandTicks ticks
)

type genInst struct {
	id                 uint32
	tick, lot          int64
	minP, maxP, centre int64
}

// genOrder is what the generator knows of an order it created; [Gen.Observe]
// keeps it current.
type genOrder struct {
	id          uint64
	inst        uint32
	side        engine.Side
	price, qty  int64
	live, armed bool
}

// Gen produces a seeded, reproducible stream of commands. It allocates
// nothing per command. Feed each command's events back through
// [Gen.Observe] so that cancels and modifies aim at live orders; without it
// they aim at recent order ids, live or not.
type Gen struct {
	cfg    GenConfig
	rng    *rand.Rand
	seqs   [maxGenSources]uint64
	insts  [maxGenInstruments]genInst
	nInst  int
	ring   [ringSize]genOrder
	nextID uint64 // counter of orders created; ids are idOf(counter)
	time   int64
}

// NewGen returns a generator for seed.
func NewGen(seed int64, cfg GenConfig) *Gen {
	cfg = cfg.withDefaults()
	cfg.Sources = min(cfg.Sources, maxGenSources)
	return &Gen{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x6d61746368)),
		nextID: 1,
	}
}

func (g *Gen) intn(n int) int           { return g.rng.IntN(n) }
func (g *Gen) chance(perMille int) bool { return g.rng.IntN(1000) < perMille }

// sourceID maps source index i to its id: 0, 1, 5, 9, ...
func sourceID(i int) uint64 {
	if i == 0 {
		return 0
	}
	return uint64(4*i - 3)
}

// Next fills c with the next command of the stream.
func (g *Gen) Next(c *engine.Command) {
	*c = engine.Command{}
	g.time += 1 + int64(g.intn(1000))
	c.Time = g.time

	s := g.intn(g.cfg.Sources)
	c.Source = sourceID(s)
	if g.nInst >= g.cfg.Instruments && g.seqs[s] > 0 && g.chance(g.cfg.InvalidPct*10/6) {
		// A resent command: at or below the source's high-water mark,
		// which is the last sequence issued on it. It must change nothing.
		c.Seq = g.seqs[s] - uint64(g.intn(int(min(g.seqs[s], 4))))
		g.valid(c, false)
		return
	}
	// A fresh sequence; now and then a gap.
	if g.chance(10) {
		g.seqs[s] += uint64(1 + g.intn(5))
	}
	g.seqs[s]++
	c.Seq = g.seqs[s]

	if g.nInst < g.cfg.Instruments {
		g.defineNew(c)
		return
	}
	if g.chance(g.cfg.InvalidPct * 10) {
		g.invalid(c)
		return
	}
	g.valid(c, true)
}

// valid fills a command meant to be accepted (it may still be rejected:
// post-only crossing, a cancel that lost the race to a fill, ...).
func (g *Gen) valid(c *engine.Command, allowDefine bool) {
	r := g.intn(1000)
	if g.cfg.Deep {
		switch {
		case r < 30:
			g.cancel(c)
		case r < 110:
			g.modify(c)
		case r < 111:
			if g.chance(100) {
				g.massCancel(c)
			} else {
				g.mark(c, g.pickInst())
			}
		case r < 160:
			g.mark(c, g.pickInst())
		case r < 220:
			g.newStop(c, g.pickInst())
		case r < 260:
			g.newMarket(c, g.pickInst())
		default:
			g.newLimit(c, g.pickInst())
			if c.TIF == engine.GTC && !c.Post && g.chance(800) {
				c.Price = g.passivePrice(g.findInst(c.Instrument), c.Side)
				g.remember(c)
			}
		}
		return
	}
	switch {
	case r < 440:
		g.newLimit(c, g.pickInst())
	case r < 480:
		g.newMarket(c, g.pickInst())
	case r < 570:
		g.newStop(c, g.pickInst())
	case r < 700:
		g.cancel(c)
	case r < 860:
		g.modify(c)
	case r < 862:
		g.massCancel(c)
	case r < 930:
		g.mark(c, g.pickInst())
	case r < 933 && allowDefine && g.nInst < g.cfg.MaxInstruments:
		g.defineNew(c)
	default:
		g.newLimit(c, g.pickInst())
	}
}

// ---- instruments ----

func (g *Gen) pickInst() *genInst { return &g.insts[g.intn(g.nInst)] }

func (g *Gen) unusedInstID() uint32 {
	for {
		var id uint32
		if g.chance(20) {
			id = ^uint32(0)
		} else if g.chance(100) {
			id = 1<<31 + uint32(g.intn(1<<30))
		} else {
			id = 1 + uint32(g.intn(300))
		}
		if g.findInst(id) == nil {
			return id
		}
	}
}

func (g *Gen) findInst(id uint32) *genInst {
	for i := 0; i < g.nInst; i++ {
		if g.insts[i].id == id {
			return &g.insts[i]
		}
	}
	return nil
}

var (
	genTicks = [...]int64{1, 1, 2, 5, 10, 25}
	genLots  = [...]int64{1, 1, 10, 100}
)

func (g *Gen) defineNew(c *engine.Command) {
	in := &g.insts[g.nInst]
	g.nInst++
	in.id = g.unusedInstID()
	in.tick = genTicks[g.intn(len(genTicks))]
	in.lot = genLots[g.intn(len(genLots))]
	in.centre = in.tick * int64(500+g.intn(500))
	switch r := g.intn(100); {
	case r < 3: // prices at the top of int64
		in.tick = 1
		in.centre = math.MaxInt64 - 2*bandTicks
	case r < 6: // a band starting at the first tick
		in.centre = in.tick * (bandTicks + 1)
	}
	in.minP = in.centre - bandTicks*in.tick
	in.maxP = in.centre + bandTicks*in.tick
	if in.centre < math.MaxInt64/2 && g.chance(20) { // the widest band allowed: 2^32-1 ticks
		in.minP = in.tick
		in.maxP = in.tick * (1 << 32)
	}
	g.fillDefine(c, in)
}

func (g *Gen) fillDefine(c *engine.Command, in *genInst) {
	c.Kind = engine.CmdDefineInstrument
	c.Instrument = in.id
	c.Tick, c.Lot, c.MinPrice, c.MaxPrice = in.tick, in.lot, in.minP, in.maxP
	if g.chance(50) {
		c.OrderID = uint64(g.intn(100)) // ignored
	}
}

// ---- prices and quantities ----

// price returns a valid price: mostly in the crowded band around the
// centre, sometimes wider, now and then a band edge.
func (g *Gen) price(in *genInst) int64 {
	switch r := g.intn(1000); {
	case r < 5:
		return in.minP
	case r < 10:
		return in.maxP
	case r < 110:
		return in.centre + in.tick*int64(g.intn(61)-30)
	default:
		sp := g.cfg.Spread
		return in.centre + in.tick*int64(g.intn(2*sp+1)-sp)
	}
}

// sidePrice returns a price for a new or moved order of side: mostly
// passive (buys at or below the centre, sells above it), so that books
// build up with crowded levels, sometimes anywhere, so that they trade.
func (g *Gen) sidePrice(in *genInst, side engine.Side) int64 {
	if g.chance(250) {
		return g.price(in)
	}
	return g.passivePrice(in, side)
}

// passivePrice returns a price at or below the centre for buys, above it
// for sells.
func (g *Gen) passivePrice(in *genInst, side engine.Side) int64 {
	sp := g.cfg.Spread
	k := int64(g.intn(sp + 1))
	if g.chance(100) {
		k = int64(g.intn(4 * sp))
	}
	if side == engine.Buy {
		return max(in.centre-in.tick*k, in.minP)
	}
	return min(in.centre+in.tick*(k+1), in.maxP)
}

func (g *Gen) qty(in *genInst) int64 {
	if g.chance(80) {
		return in.lot * int64(10+g.intn(60))
	}
	return in.lot * int64(1+g.intn(10))
}

func (g *Gen) side() engine.Side { return engine.Side(1 + g.intn(2)) }

func (g *Gen) account() uint64 {
	if g.chance(20) {
		return 0
	}
	return g.acctOf(1 + g.intn(g.cfg.Accounts))
}

// acctOf maps account number a (1..Accounts) to its id: a itself, or with
// WideIDs a value spread over the uint64 range.
func (g *Gen) acctOf(a int) uint64 {
	if g.cfg.WideIDs {
		return uint64(a) * 0x2545F4914F6CDD1D
	}
	return uint64(a)
}

func (g *Gen) stp() engine.STP {
	if g.chance(500) {
		return engine.STPNone
	}
	return engine.STP(1 + g.intn(4))
}

// ---- orders ----

// order fills the common fields of a new order with a fresh id and
// remembers it.
func (g *Gen) order(c *engine.Command, in *genInst, typ engine.OrderType) {
	c.Kind = engine.CmdNewOrder
	c.Instrument = in.id
	c.OrderID = g.idOf(g.nextID)
	g.nextID++
	c.Account = g.account()
	c.Side = g.side()
	c.Type = typ
	c.STP = g.stp()
	c.Qty = g.qty(in)
	if g.chance(50) { // fields the type does not use: ignored
		c.Ref = engine.TriggerRef(g.intn(4))
		c.Stop = int64(g.intn(3)) * in.tick
		if typ == engine.Market {
			c.Price = int64(g.intn(3)-1) * in.centre
		}
	}
	g.ring[(g.nextID-1)%ringSize] = genOrder{id: c.OrderID, inst: in.id, side: c.Side, qty: c.Qty}
}

func (g *Gen) remember(c *engine.Command) {
	o := g.known(c.OrderID)
	if o != nil {
		o.price = c.Price
		o.armed = c.Type == engine.Stop || c.Type == engine.StopLimit
	}
}

func (g *Gen) newLimit(c *engine.Command, in *genInst) {
	g.order(c, in, engine.Limit)
	c.Price = g.sidePrice(in, c.Side)
	switch r := g.intn(100); {
	case r < 72:
		c.TIF = engine.GTC
		c.Post = g.chance(120)
	case r < 88:
		c.TIF = engine.IOC
	default:
		c.TIF = engine.FOK
	}
	g.remember(c)
}

func (g *Gen) newMarket(c *engine.Command, in *genInst) {
	g.order(c, in, engine.Market)
	c.TIF = engine.IOC
	if g.chance(300) {
		c.TIF = engine.FOK
	}
	g.remember(c)
}

func (g *Gen) newStop(c *engine.Command, in *genInst) {
	typ := engine.StopLimit
	if g.chance(400) {
		typ = engine.Stop
	}
	g.order(c, in, typ)
	c.Ref = engine.RefLastTrade
	if g.chance(500) {
		c.Ref = engine.RefMark
	}
	c.Stop = g.price(in)
	if typ == engine.Stop {
		c.TIF = engine.IOC
		if g.chance(300) {
			c.TIF = engine.FOK
		}
		if g.chance(100) {
			c.Price = g.price(in) // ignored for stop-market orders
		}
	} else {
		c.Price = g.sidePrice(in, c.Side)
		switch r := g.intn(100); {
		case r < 70:
			c.TIF = engine.GTC
			c.Post = g.chance(150)
		case r < 90:
			c.TIF = engine.IOC
		default:
			c.TIF = engine.FOK
		}
	}
	g.remember(c)
	if typ == engine.Stop {
		g.known(c.OrderID).price = 0
	}
}

// pickOrder returns a recently created order, preferring live ones (and
// resting ones when resting is set).
func (g *Gen) pickOrder(resting bool) *genOrder {
	window := min(g.nextID-1, ringSize)
	if window == 0 {
		return &g.ring[0]
	}
	var o *genOrder
	for try := 0; try < 12; try++ {
		id := g.nextID - 1 - uint64(g.intn(int(window)))
		o = &g.ring[id%ringSize]
		if o.live && (!resting || !o.armed) {
			return o
		}
	}
	return o
}

func (g *Gen) cancel(c *engine.Command) {
	c.Kind = engine.CmdCancel
	o := g.pickOrder(false)
	c.OrderID = o.id
	c.Instrument = o.inst
	if o.inst == 0 && g.nInst > 0 {
		c.Instrument = g.pickInst().id
	}
}

func (g *Gen) modify(c *engine.Command) {
	c.Kind = engine.CmdModify
	o := g.pickOrder(true)
	c.OrderID = o.id
	c.Instrument = o.inst
	in := g.findInst(o.inst)
	if in == nil {
		in = g.pickInst()
		c.Instrument = in.id
	}
	c.Price, c.Qty = o.price, o.qty
	if c.Price == 0 {
		c.Price = g.price(in)
	}
	if c.Qty == 0 {
		c.Qty = g.qty(in)
	}
	switch r := g.intn(100); {
	case r < 40: // quantity down, keeps priority
		if steps := c.Qty/in.lot - 1; steps >= 1 {
			c.Qty -= in.lot * (1 + int64(g.intn(int(min(steps, 1<<20)))))
		} else {
			c.Price = g.sidePrice(in, o.side)
		}
	case r < 55: // quantity up
		c.Qty += in.lot * int64(1+g.intn(5))
	case r < 85: // price change
		c.Price = g.sidePrice(in, o.side)
	default: // both
		c.Price = g.sidePrice(in, o.side)
		c.Qty = g.qty(in)
	}
}

func (g *Gen) massCancel(c *engine.Command) {
	c.Kind = engine.CmdMassCancel
	switch r := g.intn(100); {
	case r < 55:
		c.Instrument = g.pickInst().id
		c.Account = g.acctOf(1 + g.intn(g.cfg.Accounts))
	case r < 70:
		c.Instrument = g.pickInst().id
	case r < 98:
		c.Account = g.account()
	default: // everything
	}
}

func (g *Gen) mark(c *engine.Command, in *genInst) {
	c.Kind = engine.CmdMarkPrice
	c.Instrument = in.id
	c.Price = g.price(in)
	if g.chance(20) { // outside the band: marks are not band-checked
		c.Price = in.maxP + in.tick*int64(1+g.intn(5))
	}
}

// ---- invalid commands ----

// unknownInstID returns an instrument id that is not defined.
func (g *Gen) unknownInstID() uint32 {
	if g.chance(300) {
		return 0
	}
	return g.unusedInstID()
}

// offTick returns a price that is not a multiple of the tick, or a
// non-positive one when the tick is 1.
func (g *Gen) badPrice(in *genInst) int64 {
	if in.tick > 1 && g.chance(600) {
		return g.price(in) + 1 + int64(g.intn(int(in.tick-1)))
	}
	return -int64(g.intn(3)) * in.tick
}

func (g *Gen) outOfBand(in *genInst) int64 {
	if g.chance(500) {
		return in.minP - in.tick*int64(1+g.intn(3))
	}
	return in.maxP + in.tick*int64(1+g.intn(3))
}

func (g *Gen) badQty(in *genInst) int64 {
	if in.lot > 1 && g.chance(600) {
		return g.qty(in) + 1 + int64(g.intn(int(in.lot-1)))
	}
	return -int64(g.intn(3)) * in.lot
}

func (g *Gen) newAny(c *engine.Command, in *genInst) {
	switch g.intn(4) {
	case 0:
		g.newMarket(c, in)
	case 1:
		g.newStop(c, in)
	default:
		g.newLimit(c, in)
	}
}

// invalid fills a command that hits one reject reason (or several, to
// exercise the validation order).
func (g *Gen) invalid(c *engine.Command) {
	in := g.pickInst()
	switch g.intn(38) {
	case 0: // unknown instrument, new order
		g.newAny(c, in)
		c.Instrument = g.unknownInstID()
	case 1:
		g.cancel(c)
		c.Instrument = g.unknownInstID()
	case 2:
		g.modify(c)
		c.Instrument = g.unknownInstID()
	case 3:
		g.mark(c, in)
		c.Instrument = g.unknownInstID()
	case 4:
		g.massCancel(c)
		c.Instrument = g.unusedInstID()
	case 5: // duplicate instrument
		g.fillDefine(c, in)
		if g.chance(500) {
			c.Tick = 0 // duplicate is checked before the definition
		}
	case 6: // bad instrument definitions
		var def genInst
		def.id = g.unusedInstID()
		def.tick, def.lot = 5, 10
		def.minP, def.maxP = 1000, 2000
		switch g.intn(8) {
		case 0:
			def.id = 0
		case 1:
			def.tick = -int64(g.intn(2))
		case 2:
			def.lot = -int64(g.intn(2))
		case 3:
			def.minP = -5 * int64(g.intn(2))
		case 4:
			def.maxP = def.minP - 5
		case 5:
			def.minP += 2
		case 6:
			def.maxP += 3
		case 7: // a band of 2^32 ticks: one too many
			def.maxP = def.minP + def.tick*(1<<32)
		}
		g.fillDefine(c, &def)
	case 7:
		g.newAny(c, in)
		c.Side = engine.Side([]uint8{0, 3, 255}[g.intn(3)])
	case 8:
		g.newAny(c, in)
		c.Type = engine.OrderType([]uint8{0, 5, 200}[g.intn(3)])
	case 9:
		g.newAny(c, in)
		c.TIF = engine.TimeInForce([]uint8{0, 4, 99}[g.intn(3)])
	case 10:
		g.newStop(c, in)
		c.Ref = engine.TriggerRef([]uint8{0, 3}[g.intn(2)])
	case 11:
		g.newMarket(c, in)
		c.TIF = engine.GTC
	case 12:
		g.newStop(c, in)
		c.Type = engine.Stop
		c.TIF = engine.GTC
	case 13: // post-only with a type or TIF that does not allow it
		g.newAny(c, in)
		c.Post = true
		if c.TIF == engine.GTC && (c.Type == engine.Limit || c.Type == engine.StopLimit) {
			c.TIF = engine.TimeInForce(2 + g.intn(2))
		}
	case 14:
		g.newAny(c, in)
		c.STP = engine.STP(5 + g.intn(251))
	case 15:
		g.newAny(c, in)
		c.Qty = g.badQty(in)
	case 16:
		g.newLimit(c, in)
		c.Price = g.badPrice(in)
	case 17:
		g.newLimit(c, in)
		c.Price = g.outOfBand(in)
	case 18:
		g.newStop(c, in)
		c.Stop = g.badPrice(in)
	case 19:
		g.newStop(c, in)
		c.Stop = g.outOfBand(in)
	case 20:
		g.newStop(c, in)
		c.Type = engine.StopLimit
		if c.TIF == engine.IOC && g.chance(500) {
			c.TIF = engine.GTC
		}
		c.Price = g.outOfBand(in)
	case 21:
		g.newAny(c, in)
		c.OrderID = 0
	case 22: // an id that is live, perhaps on another instrument
		g.newAny(c, in)
		c.OrderID = g.pickOrder(false).id
	case 23: // post-only that crosses
		g.newLimit(c, in)
		c.TIF = engine.GTC
		c.Post = true
		if c.Side == engine.Buy {
			c.Price = in.centre + in.tick*int64(g.cfg.Spread)
		} else {
			c.Price = in.centre - in.tick*int64(g.cfg.Spread)
		}
	case 24: // unknown order
		c.Kind = engine.CmdCancel + engine.CommandKind(g.intn(2))
		c.Instrument = in.id
		c.OrderID = g.idOf(g.nextID + 1_000_000 + uint64(g.intn(100)))
		c.Price, c.Qty = g.price(in), g.qty(in)
	case 25: // live order, wrong instrument
		g.cancel(c)
		if g.chance(500) {
			g.modify(c)
		}
		if g.nInst > 1 {
			for c.Instrument == in.id {
				in = g.pickInst()
			}
			c.Instrument = in.id
		}
	case 26: // modify an armed order
		for try := 0; try < 20; try++ {
			o := g.pickOrder(false)
			if o.live && o.armed {
				c.Kind, c.Instrument, c.OrderID = engine.CmdModify, o.inst, o.id
				c.Price, c.Qty = o.price+in.tick, o.qty
				if c.Price == in.tick {
					c.Price = in.centre
				}
				return
			}
		}
		g.modify(c)
	case 27:
		g.modify(c)
		if gi := g.findInst(c.Instrument); gi != nil {
			c.Qty = g.badQty(gi)
		}
	case 28:
		g.modify(c)
		if gi := g.findInst(c.Instrument); gi != nil {
			c.Price = g.badPrice(gi)
		}
	case 29:
		g.modify(c)
		if gi := g.findInst(c.Instrument); gi != nil {
			c.Price = g.outOfBand(gi)
		}
	case 30: // no change
		o := g.pickOrder(true)
		c.Kind, c.Instrument, c.OrderID = engine.CmdModify, o.inst, o.id
		c.Price, c.Qty = o.price, o.qty
	case 31:
		c.Kind = engine.CommandKind([]uint8{0, 7, 255}[g.intn(3)])
		c.Instrument = in.id
		c.OrderID = uint64(g.intn(5))
		c.Price, c.Qty = g.price(in), g.qty(in)
	case 32:
		g.mark(c, in)
		c.Price = g.badPrice(in)
	case 33, 34: // several faults at once: the first in validation order wins
		g.newAny(c, in)
		for k := 2 + g.intn(3); k > 0; k-- {
			switch g.intn(9) {
			case 0:
				c.Side = 0
			case 1:
				c.Type = 9
			case 2:
				c.STP = 7
			case 3:
				c.Qty = g.badQty(in)
			case 4:
				c.Price = g.badPrice(in)
			case 5:
				c.Price = g.outOfBand(in)
			case 6:
				c.Stop = g.outOfBand(in)
			case 7:
				c.OrderID = 0
			case 8:
				c.Post = true
			}
		}
	case 36: // modify with several faults
		g.modify(c)
		if gi := g.findInst(c.Instrument); gi != nil {
			if g.chance(500) {
				c.Qty = g.badQty(gi)
			}
			c.Price = g.outOfBand(gi)
		}
	default:
		g.newAny(c, in)
		c.Kind = engine.CmdModify // a new order's fields on a modify
	}
}

// Observe updates what the generator knows of its orders from the events of
// the command it last generated.
func (g *Gen) Observe(evs []engine.Event) {
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case engine.EvAccepted:
			if o := g.known(e.OrderID); o != nil {
				o.live = true
			}
		case engine.EvTrade:
			if o := g.known(e.OrderID); o != nil {
				o.qty = e.Remaining
				o.live = e.Remaining > 0
			}
			if o := g.known(e.Maker); o != nil {
				o.qty = e.MakerRemaining
				o.live = e.MakerRemaining > 0
			}
		case engine.EvCancelled:
			if o := g.known(e.OrderID); o != nil {
				o.qty = e.Remaining
				o.live = e.Remaining > 0
			}
		case engine.EvReplaced:
			if o := g.known(e.OrderID); o != nil {
				o.price, o.qty = e.Price, e.Qty
			}
		case engine.EvTriggerFired:
			if o := g.known(e.OrderID); o != nil {
				o.armed = false
			}
		}
	}
}

func (g *Gen) known(id uint64) *genOrder {
	if id == 0 {
		return nil
	}
	o := &g.ring[g.counterOf(id)%ringSize]
	if o.id != id {
		return nil
	}
	return o
}

// Wide ids are the counter times an odd constant: a bijection of uint64.
const (
	idMul = 0x9E3779B97F4A7C15
	idInv = 0xF1DE83E19937733D // idMul * idInv == 1 (mod 2^64)
)

func (g *Gen) idOf(counter uint64) uint64 {
	if g.cfg.WideIDs {
		return counter * idMul
	}
	return counter
}

func (g *Gen) counterOf(id uint64) uint64 {
	if g.cfg.WideIDs {
		return id * idInv
	}
	return id
}
