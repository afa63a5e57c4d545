package engine

// Side is the side of an order.
type Side uint8

// Sides. The zero value is invalid.
const (
	Buy  Side = 1
	Sell Side = 2
)

func (s Side) String() string {
	switch s {
	case Buy:
		return "buy"
	case Sell:
		return "sell"
	}
	return "side?"
}

// OrderType is the type of a new order.
type OrderType uint8

// Order types. The zero value is invalid.
const (
	Limit     OrderType = 1
	Market    OrderType = 2
	Stop      OrderType = 3 // armed; becomes a market order when triggered
	StopLimit OrderType = 4 // armed; becomes a limit order when triggered
)

func (t OrderType) String() string {
	switch t {
	case Limit:
		return "limit"
	case Market:
		return "market"
	case Stop:
		return "stop"
	case StopLimit:
		return "stop_limit"
	}
	return "type?"
}

// TimeInForce says how long an order may stay in the book.
type TimeInForce uint8

// Times in force. The zero value is invalid.
const (
	GTC TimeInForce = 1 // good till cancelled: the remainder rests
	IOC TimeInForce = 2 // immediate or cancel: the remainder is cancelled
	FOK TimeInForce = 3 // fill or kill: filled completely at once, or not at all
)

func (t TimeInForce) String() string {
	switch t {
	case GTC:
		return "gtc"
	case IOC:
		return "ioc"
	case FOK:
		return "fok"
	}
	return "tif?"
}

// STP is an order's self-trade prevention mode. It is the taker's mode that
// decides what happens when the taker meets a maker of the same account.
type STP uint8

// Self-trade prevention modes. The zero value is "none": orders of the same
// account trade with each other.
const (
	STPNone         STP = 0
	STPCancelNewest STP = 1 // cancel the taker's remainder; the maker stays
	STPCancelOldest STP = 2 // cancel the maker; the taker goes on matching
	STPCancelBoth   STP = 3 // cancel the maker and the taker's remainder
	STPDecrement    STP = 4 // reduce both by the smaller quantity, no trade
)

func (s STP) String() string {
	switch s {
	case STPNone:
		return "none"
	case STPCancelNewest:
		return "cancel_newest"
	case STPCancelOldest:
		return "cancel_oldest"
	case STPCancelBoth:
		return "cancel_both"
	case STPDecrement:
		return "decrement"
	}
	return "stp?"
}

// TriggerRef is the price a stop order is armed against.
type TriggerRef uint8

// Trigger references. The zero value is invalid for stop orders.
const (
	RefLastTrade TriggerRef = 1
	RefMark      TriggerRef = 2
)

func (r TriggerRef) String() string {
	switch r {
	case RefLastTrade:
		return "last"
	case RefMark:
		return "mark"
	}
	return "ref?"
}

// CommandKind says what a [Command] asks for.
type CommandKind uint8

// Command kinds. The zero value is invalid.
const (
	CmdDefineInstrument CommandKind = 1
	CmdNewOrder         CommandKind = 2
	CmdCancel           CommandKind = 3
	CmdModify           CommandKind = 4
	CmdMassCancel       CommandKind = 5
	CmdMarkPrice        CommandKind = 6
)

func (k CommandKind) String() string {
	switch k {
	case CmdDefineInstrument:
		return "define_instrument"
	case CmdNewOrder:
		return "new_order"
	case CmdCancel:
		return "cancel"
	case CmdModify:
		return "modify"
	case CmdMassCancel:
		return "mass_cancel"
	case CmdMarkPrice:
		return "mark_price"
	}
	return "command?"
}

// Command is one input to the engine. Which fields matter depends on Kind;
// the others are ignored. A Command is a plain value: the engine never keeps
// a pointer to it.
type Command struct {
	Kind       CommandKind
	Source     uint64 // ingress source id
	Seq        uint64 // the source's sequence; at or below the source's high-water mark the command is ignored
	Time       int64  // timestamp assigned by the sequencer (nanoseconds); the engine never reads a clock
	Instrument uint32

	// New order, cancel, modify.
	OrderID uint64
	Account uint64 // new order; mass cancel
	Side    Side
	Type    OrderType
	TIF     TimeInForce
	STP     STP
	Post    bool // post-only
	Ref     TriggerRef
	Price   int64 // limit price (limit, stop-limit); new price (modify); mark price (mark price)
	Stop    int64 // stop price (stop, stop-limit)
	Qty     int64 // quantity (new order); new remaining quantity (modify)

	// Define instrument.
	Tick     int64 // tick size: every price is a multiple of it
	Lot      int64 // lot size: every quantity is a multiple of it
	MinPrice int64 // price band, inclusive
	MaxPrice int64
}

// EventKind says what an [Event] reports.
type EventKind uint8

// Event kinds.
const (
	EvAccepted     EventKind = 1
	EvRejected     EventKind = 2
	EvTrade        EventKind = 3
	EvCancelled    EventKind = 4
	EvReplaced     EventKind = 5
	EvTriggerFired EventKind = 6
	EvDepth        EventKind = 7
	EvRelease      EventKind = 8
)

func (k EventKind) String() string {
	switch k {
	case EvAccepted:
		return "accepted"
	case EvRejected:
		return "rejected"
	case EvTrade:
		return "trade"
	case EvCancelled:
		return "cancelled"
	case EvReplaced:
		return "replaced"
	case EvTriggerFired:
		return "trigger_fired"
	case EvDepth:
		return "depth"
	case EvRelease:
		return "release"
	}
	return "event?"
}

// Reason is the reason code of a rejection or a cancellation.
type Reason uint8

// Reject reasons.
const (
	ReasonNone Reason = 0

	RejUnknownInstrument   Reason = 1
	RejDuplicateInstrument Reason = 2
	RejBadInstrument       Reason = 3 // instrument definition: id 0, tick or lot ≤ 0, band empty, negative, or off tick
	RejBadSide             Reason = 4
	RejBadType             Reason = 5 // unknown order type, time in force or trigger reference, or a combination not allowed
	RejBadSTP              Reason = 6
	RejBadPrice            Reason = 7  // off tick
	RejPriceOutOfBand      Reason = 8  // outside [MinPrice, MaxPrice]
	RejBadQuantity         Reason = 9  // ≤ 0 or not a multiple of the lot
	RejDuplicateOrderID    Reason = 10 // order id 0, or an id already resting or armed
	RejUnknownOrder        Reason = 11 // cancel or modify of an id that is not resting or armed (on that instrument)
	RejPostOnlyWouldCross  Reason = 12
	RejNotModifiable       Reason = 13 // modify of an armed (not yet triggered) order
	RejBadCommand          Reason = 14 // unknown command kind
	RejNoChange            Reason = 15 // modify to the same price and quantity
	// RejStorageFull is never the engine's: a node whose archive volume
	// is short of space refuses the command before it is sequenced (so it
	// is in no log and changes no state) and answers it with this reason;
	// the client may send it again once space returns.
	RejStorageFull Reason = 16
)

// Cancel reasons.
const (
	CxlRequested   Reason = 32 // cancel command
	CxlIOC         Reason = 33 // remainder of an IOC order, or of a market order that found no more liquidity
	CxlFOK         Reason = 34 // a fill-or-kill order that could not fill completely
	CxlSelfTrade   Reason = 35 // self-trade prevention
	CxlMassCancel  Reason = 36
	CxlPostOnly    Reason = 37 // a post-only order that would cross when its trigger fired
	CxlNoReference Reason = 38 // reserved
)

var reasonNames = map[Reason]string{
	ReasonNone:             "none",
	RejUnknownInstrument:   "unknown_instrument",
	RejDuplicateInstrument: "duplicate_instrument",
	RejBadInstrument:       "bad_instrument",
	RejBadSide:             "bad_side",
	RejBadType:             "bad_type",
	RejBadSTP:              "bad_stp",
	RejBadPrice:            "bad_price",
	RejPriceOutOfBand:      "price_out_of_band",
	RejBadQuantity:         "bad_quantity",
	RejDuplicateOrderID:    "duplicate_order_id",
	RejUnknownOrder:        "unknown_order",
	RejPostOnlyWouldCross:  "post_only_would_cross",
	RejNotModifiable:       "not_modifiable",
	RejBadCommand:          "bad_command",
	RejNoChange:            "no_change",
	RejStorageFull:         "storage_full",
	CxlRequested:           "requested",
	CxlIOC:                 "ioc",
	CxlFOK:                 "fok",
	CxlSelfTrade:           "self_trade",
	CxlMassCancel:          "mass_cancel",
	CxlPostOnly:            "post_only",
	CxlNoReference:         "no_reference",
}

func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return "reason?"
}

// Event is one output of the engine. Which fields are set depends on Kind:
//
//	Accepted      Source Seq Instrument OrderID (0 unless a new order, cancel or modify)
//	Rejected      Source Seq Instrument OrderID (0 unless a new order, cancel or modify) Reason
//	Trade         Instrument OrderID=taker Maker Side=taker side Price Qty
//	              Remaining=taker remaining MakerRemaining
//	Cancelled     Instrument OrderID Side Price Qty=quantity removed Remaining=left after Reason
//	Replaced      Instrument OrderID Side Price=new price Qty=new quantity
//	TriggerFired  Instrument OrderID Side Price=reference price that fired it
//	Depth         Instrument Side Price Qty=level total Count=orders at the level (0: level gone)
//	Release       Source Seq Instrument
//
// Source and Seq are set on every event of a command.
type Event struct {
	Kind           EventKind
	Reason         Reason
	Side           Side
	Instrument     uint32
	Source         uint64
	Seq            uint64
	OrderID        uint64
	Maker          uint64
	Price          int64
	Qty            int64
	Remaining      int64
	MakerRemaining int64
	Count          int64
}
