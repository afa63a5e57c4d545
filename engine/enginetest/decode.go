package enginetest

import "github.com/matchlog/matchlog/engine"

// ByteDecoder turns arbitrary bytes into a stream of commands, for fuzzing:
// every byte string decodes, small ranges of ids, prices and quantities
// make orders meet, and some bytes pass through raw to reach every
// validation branch. Missing bytes read as zero.
type ByteDecoder struct {
	data    []byte
	pos     int
	seqs    [4]uint64
	prelude int // instruments 1..3 defined so far, before any byte is read
}

// NewByteDecoder returns a decoder of data.
func NewByteDecoder(data []byte) *ByteDecoder { return &ByteDecoder{data: data} }

// More reports whether commands remain.
func (d *ByteDecoder) More() bool { return d.prelude < 3 || d.pos < len(d.data) }

func (d *ByteDecoder) b() byte {
	if d.pos >= len(d.data) {
		return 0
	}
	d.pos++
	return d.data[d.pos-1]
}

// instrument ids 1..3 (tick 1, 2, 5 when defined by the stream), sometimes
// an unknown one.
func (d *ByteDecoder) inst(x byte) uint32 {
	if x >= 250 {
		return uint32(x - 250) // 0..5
	}
	return uint32(1 + x%3)
}

// tickOf is the tick the decoder gives instrument i when it defines it.
func tickOf(i uint32) int64 {
	switch i {
	case 2:
		return 2
	case 3:
		return 5
	}
	return 1
}

func lotOf(i uint32) int64 {
	if i == 3 {
		return 10
	}
	return 1
}

// price: a narrow band around 100 ticks, now and then raw.
func (d *ByteDecoder) price(inst uint32, x byte) int64 {
	if x >= 240 {
		return int64(x) - 245 // -5..10: off tick, zero, negative
	}
	return tickOf(inst) * (94 + int64(x%13))
}

func (d *ByteDecoder) qty(inst uint32, x byte) int64 {
	if x >= 250 {
		return int64(x) - 252 // -2..3: off lot, zero, negative
	}
	return lotOf(inst) * int64(1+x%6)
}

// Next fills c with the next command; false when the bytes are used up.
// The first three commands define instruments 1, 2 and 3.
func (d *ByteDecoder) Next(c *engine.Command) bool {
	if !d.More() {
		return false
	}
	*c = engine.Command{}
	if d.prelude < 3 { // every stream starts by defining instruments 1, 2 and 3 on source 3
		d.prelude++
		i := uint32(d.prelude)
		d.seqs[3]++
		*c = engine.Command{Kind: engine.CmdDefineInstrument, Source: 3, Seq: d.seqs[3], Instrument: i,
			Tick: tickOf(i), Lot: lotOf(i), MinPrice: 90 * tickOf(i), MaxPrice: 110 * tickOf(i)}
		return true
	}
	op := d.b()
	src := op >> 6 // 0..3
	c.Source = uint64(src)
	if op&0x20 != 0 && d.seqs[src] > 0 && op&0x10 != 0 {
		c.Seq = d.seqs[src] - uint64(d.b()%2) // resent
	} else {
		d.seqs[src]++
		c.Seq = d.seqs[src]
	}
	c.Time = int64(d.pos)
	x := d.b()
	c.Instrument = d.inst(d.b())
	switch op & 0x0f {
	case 0: // define
		c.Kind = engine.CmdDefineInstrument
		c.Tick, c.Lot = tickOf(c.Instrument), lotOf(c.Instrument)
		c.MinPrice, c.MaxPrice = 90*c.Tick, 110*c.Tick
		if x&7 == 7 { // a broken definition
			c.Tick -= int64(x>>3) % 3
			c.MinPrice += int64(x >> 6)
		}
	case 1, 2, 3, 4, 5, 6: // new order
		c.Kind = engine.CmdNewOrder
		c.OrderID = uint64(d.b() % 24)
		c.Account = uint64(x % 3)
		c.Side = engine.Side(1 + x>>7)
		f := d.b()
		switch op & 0x0f {
		case 1, 2, 3:
			c.Type = engine.Limit
		case 4:
			c.Type = engine.Market
		case 5:
			c.Type = engine.Stop
		case 6:
			c.Type = engine.StopLimit
		}
		c.TIF = engine.TimeInForce(1 + f%3)
		if f&3 == 3 {
			c.TIF = engine.GTC // GTC half the time: books must fill up
		}
		if c.Type == engine.Market || c.Type == engine.Stop {
			c.TIF = engine.TimeInForce(2 + f%2)
		}
		c.STP = engine.STP((f >> 2) % 5)
		c.Post = f&0x20 != 0 && (c.Type == engine.Limit || c.Type == engine.StopLimit) && c.TIF == engine.GTC
		c.Ref = engine.TriggerRef(1 + (f>>6)&1)
		c.Price = d.price(c.Instrument, d.b())
		c.Qty = d.qty(c.Instrument, d.b())
		if c.Type == engine.Stop || c.Type == engine.StopLimit {
			c.Stop = d.price(c.Instrument, d.b())
		}
		if f&0x80 != 0 && x&0x40 != 0 { // raw enums
			g := d.b()
			c.Side, c.Type, c.TIF = engine.Side(g%4), engine.OrderType(g>>2%6), engine.TimeInForce(g>>5%5)
			c.STP, c.Post, c.Ref = engine.STP(x%7), g&1 != 0, engine.TriggerRef(x>>3%4)
		}
	case 7, 8: // cancel
		c.Kind = engine.CmdCancel
		c.OrderID = uint64(x % 24)
	case 9, 10, 11: // modify
		c.Kind = engine.CmdModify
		c.OrderID = uint64(x % 24)
		c.Price = d.price(c.Instrument, d.b())
		c.Qty = d.qty(c.Instrument, d.b())
	case 12: // mass cancel, now and then; otherwise a resting order
		if x&7 != 0 {
			c.Kind, c.Type, c.TIF = engine.CmdNewOrder, engine.Limit, engine.GTC
			c.OrderID = uint64(x % 24)
			c.Account = uint64(x>>3) % 3
			c.Side = engine.Side(1 + x>>7)
			c.Price = tickOf(c.Instrument) * (94 + int64(x>>3%6))
			if c.Side == engine.Sell {
				c.Price += 6 * tickOf(c.Instrument)
			}
			c.Qty = lotOf(c.Instrument) * int64(1+x%5)
			break
		}
		c.Kind = engine.CmdMassCancel
		if x&8 != 0 {
			c.Instrument = 0
		}
		c.Account = uint64(x>>4) % 4
	case 13, 14: // mark price
		c.Kind = engine.CmdMarkPrice
		c.Price = d.price(c.Instrument, x)
	default: // raw kind
		c.Kind = engine.CommandKind(x % 9)
		c.OrderID = uint64(x % 24)
		c.Price = d.price(c.Instrument, x)
		c.Qty = d.qty(c.Instrument, x)
		c.Tick, c.Lot, c.MinPrice, c.MaxPrice = 1, 1, int64(x%3), 200
		c.Side, c.Type, c.TIF = engine.Side(1+x%2), engine.OrderType(1+x%4), engine.TimeInForce(1+x%3)
	}
	return true
}
