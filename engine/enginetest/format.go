package enginetest

import (
	"fmt"
	"strings"

	"github.com/matchlog/matchlog/engine"
)

// FormatCommand renders a command on one line, showing the fields its kind
// uses (all fields for an unknown kind).
func FormatCommand(c *engine.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s src=%d seq=%d inst=%d", c.Kind, c.Source, c.Seq, c.Instrument)
	switch c.Kind {
	case engine.CmdDefineInstrument:
		fmt.Fprintf(&b, " tick=%d lot=%d band=[%d,%d]", c.Tick, c.Lot, c.MinPrice, c.MaxPrice)
	case engine.CmdNewOrder:
		fmt.Fprintf(&b, " id=%d acct=%d %s %s %s stp=%s", c.OrderID, c.Account, c.Side, c.Type, c.TIF, c.STP)
		if c.Post {
			b.WriteString(" post")
		}
		fmt.Fprintf(&b, " px=%d qty=%d", c.Price, c.Qty)
		if c.Type == engine.Stop || c.Type == engine.StopLimit || c.Stop != 0 || c.Ref != 0 {
			fmt.Fprintf(&b, " stop=%d ref=%s", c.Stop, c.Ref)
		}
		if c.Side > engine.Sell || c.Type > engine.StopLimit || c.TIF > engine.FOK || c.STP > engine.STPDecrement || c.Ref > engine.RefMark {
			fmt.Fprintf(&b, " raw(side=%d type=%d tif=%d stp=%d ref=%d)", c.Side, c.Type, c.TIF, c.STP, c.Ref)
		}
	case engine.CmdCancel:
		fmt.Fprintf(&b, " id=%d", c.OrderID)
	case engine.CmdModify:
		fmt.Fprintf(&b, " id=%d px=%d qty=%d", c.OrderID, c.Price, c.Qty)
	case engine.CmdMassCancel:
		fmt.Fprintf(&b, " acct=%d", c.Account)
	case engine.CmdMarkPrice:
		fmt.Fprintf(&b, " px=%d", c.Price)
	default:
		fmt.Fprintf(&b, " raw=%+v", *c)
	}
	return b.String()
}

// FormatEvent renders an event on one line, showing the fields its kind
// sets (and any other non-zero field, marked with a "!").
func FormatEvent(e *engine.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s src=%d seq=%d inst=%d", e.Kind, e.Source, e.Seq, e.Instrument)
	used := map[string]bool{}
	field := func(name string, v any) {
		used[name] = true
		fmt.Fprintf(&b, " %s=%v", name, v)
	}
	switch e.Kind {
	case engine.EvAccepted:
		field("id", e.OrderID)
	case engine.EvRejected:
		field("id", e.OrderID)
		field("reason", e.Reason)
	case engine.EvTrade:
		field("id", e.OrderID)
		field("maker", e.Maker)
		field("side", e.Side)
		field("px", e.Price)
		field("qty", e.Qty)
		field("rem", e.Remaining)
		field("mrem", e.MakerRemaining)
	case engine.EvCancelled:
		field("id", e.OrderID)
		field("side", e.Side)
		field("px", e.Price)
		field("qty", e.Qty)
		field("rem", e.Remaining)
		field("reason", e.Reason)
	case engine.EvReplaced:
		field("id", e.OrderID)
		field("side", e.Side)
		field("px", e.Price)
		field("qty", e.Qty)
	case engine.EvTriggerFired:
		field("id", e.OrderID)
		field("side", e.Side)
		field("px", e.Price)
	case engine.EvDepth:
		field("side", e.Side)
		field("px", e.Price)
		field("qty", e.Qty)
		field("count", e.Count)
	}
	extra := func(name string, set bool, v any) {
		if set && !used[name] {
			fmt.Fprintf(&b, " !%s=%v", name, v)
		}
	}
	extra("id", e.OrderID != 0, e.OrderID)
	extra("maker", e.Maker != 0, e.Maker)
	extra("side", e.Side != 0, e.Side)
	extra("px", e.Price != 0, e.Price)
	extra("qty", e.Qty != 0, e.Qty)
	extra("rem", e.Remaining != 0, e.Remaining)
	extra("mrem", e.MakerRemaining != 0, e.MakerRemaining)
	extra("count", e.Count != 0, e.Count)
	extra("reason", e.Reason != 0, e.Reason)
	return b.String()
}

// FormatEvents renders events one per line, each prefixed by indent and its
// index.
func FormatEvents(evs []engine.Event, indent string) string {
	if len(evs) == 0 {
		return indent + "(no events)\n"
	}
	var b strings.Builder
	for i := range evs {
		fmt.Fprintf(&b, "%s%2d %s\n", indent, i, FormatEvent(&evs[i]))
	}
	return b.String()
}
