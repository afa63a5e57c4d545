package scenario

import (
	"strconv"

	"github.com/matchlog/matchlog/engine"
)

// AppendEvent appends ev to dst as one JSON line (with its newline) holding
// "event" and the fields of its kind, and returns the extended buffer.
func AppendEvent(dst []byte, ev *engine.Event) []byte {
	dst = append(dst, `{"event":`...)
	if name := eventNames.name[ev.Kind]; name != "" {
		dst = strconv.AppendQuote(dst, name)
	} else {
		dst = strconv.AppendUint(dst, uint64(ev.Kind), 10)
	}
	switch ev.Kind {
	case engine.EvAccepted:
		dst = appendUint(dst, `,"source":`, ev.Source)
		dst = appendUint(dst, `,"seq":`, ev.Seq)
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
	case engine.EvRejected:
		dst = appendUint(dst, `,"source":`, ev.Source)
		dst = appendUint(dst, `,"seq":`, ev.Seq)
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendEnum(dst, `,"reason":`, reasonNames, uint8(ev.Reason))
	case engine.EvTrade:
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendUint(dst, `,"maker":`, ev.Maker)
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendInt(dst, `,"price":`, ev.Price)
		dst = appendInt(dst, `,"qty":`, ev.Qty)
		dst = appendInt(dst, `,"remaining":`, ev.Remaining)
		dst = appendInt(dst, `,"maker_remaining":`, ev.MakerRemaining)
	case engine.EvCancelled:
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendInt(dst, `,"price":`, ev.Price)
		dst = appendInt(dst, `,"qty":`, ev.Qty)
		dst = appendInt(dst, `,"remaining":`, ev.Remaining)
		dst = appendEnum(dst, `,"reason":`, reasonNames, uint8(ev.Reason))
	case engine.EvReplaced:
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendInt(dst, `,"price":`, ev.Price)
		dst = appendInt(dst, `,"qty":`, ev.Qty)
	case engine.EvTriggerFired:
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendInt(dst, `,"price":`, ev.Price)
	case engine.EvDepth:
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendInt(dst, `,"price":`, ev.Price)
		dst = appendInt(dst, `,"qty":`, ev.Qty)
		dst = appendInt(dst, `,"count":`, ev.Count)
	case engine.EvRelease:
		dst = appendUint(dst, `,"source":`, ev.Source)
		dst = appendUint(dst, `,"seq":`, ev.Seq)
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
	default: // not an event the engine emits: write everything
		dst = appendEnum(dst, `,"reason":`, reasonNames, uint8(ev.Reason))
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(ev.Side))
		dst = appendUint(dst, `,"instrument":`, uint64(ev.Instrument))
		dst = appendUint(dst, `,"source":`, ev.Source)
		dst = appendUint(dst, `,"seq":`, ev.Seq)
		dst = appendUint(dst, `,"order_id":`, ev.OrderID)
		dst = appendUint(dst, `,"maker":`, ev.Maker)
		dst = appendInt(dst, `,"price":`, ev.Price)
		dst = appendInt(dst, `,"qty":`, ev.Qty)
		dst = appendInt(dst, `,"remaining":`, ev.Remaining)
		dst = appendInt(dst, `,"maker_remaining":`, ev.MakerRemaining)
		dst = appendInt(dst, `,"count":`, ev.Count)
	}
	return append(dst, "}\n"...)
}

// AppendSummary appends the summary line that ends an event stream.
func AppendSummary(dst []byte, s Summary) []byte {
	dst = append(dst, `{"state_hash":"0x`...)
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, "0123456789abcdef"[s.StateHash>>uint(shift)&0xf])
	}
	dst = append(dst, '"')
	dst = appendUint(dst, `,"commands":`, uint64(s.Commands))
	dst = appendUint(dst, `,"events":`, uint64(s.Events))
	return append(dst, "}\n"...)
}

// AppendCommand appends c to dst as one JSON line (with its newline) in the
// format [Reader] reads, and returns the extended buffer. It writes the
// fields c's kind (and order type) uses, every one of them, defaults
// included; [ParseCommand] of the line gives back c with the unused fields
// zeroed. A command of unknown kind cannot be written: its "cmd" is the
// numeric code, which [Reader] rejects.
func AppendCommand(dst []byte, c *engine.Command) []byte {
	dst = append(dst, `{"cmd":`...)
	if name := cmdNames.name[c.Kind]; name != "" {
		dst = strconv.AppendQuote(dst, name)
	} else {
		dst = strconv.AppendUint(dst, uint64(c.Kind), 10)
	}
	dst = appendUint(dst, `,"source":`, c.Source)
	dst = appendUint(dst, `,"seq":`, c.Seq)
	dst = appendInt(dst, `,"time":`, c.Time)
	dst = appendUint(dst, `,"instrument":`, uint64(c.Instrument))
	switch c.Kind {
	case engine.CmdDefineInstrument:
		dst = appendInt(dst, `,"tick":`, c.Tick)
		dst = appendInt(dst, `,"lot":`, c.Lot)
		dst = appendInt(dst, `,"min_price":`, c.MinPrice)
		dst = appendInt(dst, `,"max_price":`, c.MaxPrice)
	case engine.CmdNewOrder:
		dst = appendUint(dst, `,"order_id":`, c.OrderID)
		dst = appendUint(dst, `,"account":`, c.Account)
		dst = appendEnum(dst, `,"side":`, sideNames, uint8(c.Side))
		dst = appendEnum(dst, `,"type":`, typeNames, uint8(c.Type))
		dst = appendEnum(dst, `,"tif":`, tifNames, uint8(c.TIF))
		allowed, _ := orderFields(c.Type)
		if allowed&m(fPrice) != 0 {
			dst = appendInt(dst, `,"price":`, c.Price)
		}
		if allowed&m(fStop) != 0 {
			dst = appendInt(dst, `,"stop":`, c.Stop)
			dst = appendEnum(dst, `,"ref":`, refNames, uint8(c.Ref))
		}
		dst = appendInt(dst, `,"qty":`, c.Qty)
		dst = append(dst, `,"post_only":`...)
		dst = strconv.AppendBool(dst, c.Post)
		dst = appendEnum(dst, `,"stp":`, stpNames, uint8(c.STP))
	case engine.CmdCancel:
		dst = appendUint(dst, `,"order_id":`, c.OrderID)
	case engine.CmdModify:
		dst = appendUint(dst, `,"order_id":`, c.OrderID)
		dst = appendInt(dst, `,"price":`, c.Price)
		dst = appendInt(dst, `,"qty":`, c.Qty)
	case engine.CmdMassCancel:
		dst = appendUint(dst, `,"account":`, c.Account)
	case engine.CmdMarkPrice:
		dst = appendInt(dst, `,"price":`, c.Price)
	}
	return append(dst, "}\n"...)
}

func appendUint(dst []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(dst, key...), v, 10)
}

func appendInt(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// appendEnum writes the name of code v, or the code itself if it has none.
func appendEnum(dst []byte, key string, e *enum, v uint8) []byte {
	dst = append(dst, key...)
	if name := e.name[v]; name != "" {
		dst = append(dst, '"')
		dst = append(dst, name...)
		return append(dst, '"')
	}
	return strconv.AppendUint(dst, uint64(v), 10)
}
