// Package wire is the matching engine's messages as they travel between a
// client and a node: engine.Command and engine.Event to and from their
// enginesbe messages (schema 7002, each with its 8-byte SBE header), plus the
// service's own egress (Duplicate, DepthSnapshotEnd) and ingress
// (SubscribeDepth) messages.
//
// Both sides use it: package client encodes commands and decodes events,
// and the node (cluster/enginesvc, server) does the reverse, so the format
// has one definition. The package imports only engine and sbe/enginesbe,
// which keeps a client from linking the server stack (cluster, archive).
//
// Contracts: DecodeCommand and DecodeEvent are the exact inverses of
// AppendCommand and AppendEvent; a decoder given another schema, an unknown
// template or a block shorter than its message's returns an error, never
// panics; CheckCommand accepts exactly one well-formed command message, as a
// server must check before offering it to the log. Appending reuses dst's
// capacity, so a caller reusing its buffer allocates nothing per message.
package wire

import (
	"fmt"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/enginesbe"
)

// MaxCommandLength is the longest encoded command (NewOrder, header
// included).
const MaxCommandLength = 128

// AppendCommand appends c encoded as its enginesbe message (header
// included) to dst. Command.Time is encoded but ignored on the way in: the
// service takes the time from the log.
func AppendCommand(dst []byte, c *engine.Command) ([]byte, error) {
	off := len(dst)
	dst = append(dst, make([]byte, MaxCommandLength)...)
	b := dst[off:]
	var n int
	switch c.Kind {
	case engine.CmdDefineInstrument:
		var e enginesbe.DefineInstrumentEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).Tick(c.Tick).Lot(c.Lot).MinPrice(c.MinPrice).MaxPrice(c.MaxPrice)
		n = e.EncodedLength()
	case engine.CmdNewOrder:
		var e enginesbe.NewOrderEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		post := enginesbe.BoolFalse
		if c.Post {
			post = enginesbe.BoolTrue
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).OrderId(c.OrderID).Account(c.Account).
			Side(enginesbe.Side(c.Side)).OrderType(enginesbe.OrderType(c.Type)).Tif(enginesbe.TimeInForce(c.TIF)).
			Stp(enginesbe.STP(c.STP)).PostOnly(post).Ref(enginesbe.TriggerRef(c.Ref)).Price(c.Price).Stop(c.Stop).Qty(c.Qty)
		n = e.EncodedLength()
	case engine.CmdCancel:
		var e enginesbe.CancelEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).OrderId(c.OrderID)
		n = e.EncodedLength()
	case engine.CmdModify:
		var e enginesbe.ModifyEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).OrderId(c.OrderID).Price(c.Price).Qty(c.Qty)
		n = e.EncodedLength()
	case engine.CmdMassCancel:
		var e enginesbe.MassCancelEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).Account(c.Account)
		n = e.EncodedLength()
	case engine.CmdMarkPrice:
		var e enginesbe.MarkPriceEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			return dst[:off], err
		}
		e.Source(c.Source).Seq(c.Seq).Time(c.Time).Instrument(c.Instrument).Price(c.Price)
		n = e.EncodedLength()
	default:
		return dst[:off], fmt.Errorf("wire: cannot encode command kind %d", c.Kind)
	}
	return dst[:off+enginesbe.MessageHeaderEncodedLength+n], nil
}

// DecodeCommand decodes an enginesbe command message into c (all fields
// reset). An unknown schema or template is an error.
func DecodeCommand(b []byte, c *engine.Command) error {
	h, err := enginesbe.WrapMessageHeader(b, 0)
	if err != nil {
		return err
	}
	if h.SchemaId() != enginesbe.SchemaID {
		return fmt.Errorf("wire: message of schema %d, want %d", h.SchemaId(), enginesbe.SchemaID)
	}
	*c = engine.Command{}
	switch h.TemplateId() {
	case enginesbe.DefineInstrumentTemplateID:
		var d enginesbe.DefineInstrumentDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdDefineInstrument, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(),
			Tick: d.Tick(), Lot: d.Lot(), MinPrice: d.MinPrice(), MaxPrice: d.MaxPrice()}
	case enginesbe.NewOrderTemplateID:
		var d enginesbe.NewOrderDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdNewOrder, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(),
			OrderID: d.OrderId(), Account: d.Account(), Side: engine.Side(d.Side()), Type: engine.OrderType(d.OrderType()),
			TIF: engine.TimeInForce(d.Tif()), STP: engine.STP(d.Stp()), Post: d.PostOnly() == enginesbe.BoolTrue,
			Ref: engine.TriggerRef(d.Ref()), Price: d.Price(), Stop: d.Stop(), Qty: d.Qty()}
	case enginesbe.CancelTemplateID:
		var d enginesbe.CancelDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdCancel, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(), OrderID: d.OrderId()}
	case enginesbe.ModifyTemplateID:
		var d enginesbe.ModifyDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdModify, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(),
			OrderID: d.OrderId(), Price: d.Price(), Qty: d.Qty()}
	case enginesbe.MassCancelTemplateID:
		var d enginesbe.MassCancelDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdMassCancel, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(), Account: d.Account()}
	case enginesbe.MarkPriceTemplateID:
		var d enginesbe.MarkPriceDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*c = engine.Command{Kind: engine.CmdMarkPrice, Source: d.Source(), Seq: d.Seq(), Time: d.Time(), Instrument: d.Instrument(), Price: d.Price()}
	default:
		return fmt.Errorf("wire: unknown command template %d", h.TemplateId())
	}
	return nil
}

// MaxEventLength is the longest encoded event (header included).
const MaxEventLength = 128

// AppendEvent appends ev encoded as its enginesbe message to dst.
func AppendEvent(dst []byte, ev *engine.Event) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, MaxEventLength)...)
	b := dst[off:]
	var n int
	switch ev.Kind {
	case engine.EvAccepted:
		var e enginesbe.AcceptedEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID)
		n = e.EncodedLength()
	case engine.EvRejected:
		var e enginesbe.RejectedEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID).Reason(enginesbe.Reason(ev.Reason))
		n = e.EncodedLength()
	case engine.EvTrade:
		var e enginesbe.TradeEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID).Maker(ev.Maker).Side(enginesbe.Side(ev.Side)).
			Price(ev.Price).Qty(ev.Qty).Remaining(ev.Remaining).MakerRemaining(ev.MakerRemaining)
		n = e.EncodedLength()
	case engine.EvCancelled:
		var e enginesbe.CancelledEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID).Side(enginesbe.Side(ev.Side)).
			Price(ev.Price).Qty(ev.Qty).Remaining(ev.Remaining).Reason(enginesbe.Reason(ev.Reason))
		n = e.EncodedLength()
	case engine.EvReplaced:
		var e enginesbe.ReplacedEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID).Side(enginesbe.Side(ev.Side)).Price(ev.Price).Qty(ev.Qty)
		n = e.EncodedLength()
	case engine.EvTriggerFired:
		var e enginesbe.TriggerFiredEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).OrderId(ev.OrderID).Side(enginesbe.Side(ev.Side)).Price(ev.Price)
		n = e.EncodedLength()
	case engine.EvDepth:
		var e enginesbe.DepthEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument).Side(enginesbe.Side(ev.Side)).Price(ev.Price).Qty(ev.Qty).Count(ev.Count)
		n = e.EncodedLength()
	case engine.EvRelease:
		var e enginesbe.ReleaseEncoder
		_ = e.WrapAndApplyHeader(b, 0)
		e.Source(ev.Source).Seq(ev.Seq).Instrument(ev.Instrument)
		n = e.EncodedLength()
	default:
		return dst[:off]
	}
	return dst[:off+enginesbe.MessageHeaderEncodedLength+n]
}

// EventKind returns the kind of an encoded event (0 if it is not one): an
// engine.EventKind, or EvDuplicate or EvDepthSnapshotEnd for the service's
// own egress messages.
func EventKind(b []byte) engine.EventKind {
	h, err := enginesbe.WrapMessageHeader(b, 0)
	if err != nil || h.SchemaId() != enginesbe.SchemaID || h.TemplateId() <= 10 || h.TemplateId() > enginesbe.DepthSnapshotEndTemplateID {
		return 0
	}
	return engine.EventKind(h.TemplateId() - 10)
}

// DecodeRelease decodes a Release event's source and sequence.
func DecodeRelease(b []byte) (source, seq uint64, err error) {
	var d enginesbe.ReleaseDecoder
	if err := d.WrapWithHeader(b, 0); err != nil {
		return 0, 0, err
	}
	return d.Source(), d.Seq(), nil
}

// Egress kinds of the service's own messages, beyond the engine's event
// kinds: EventKind returns them for Duplicate (template 19) and
// DepthSnapshotEnd (template 20), keeping the rule template = 10 + kind.
// engine.Event never carries them.
const (
	// EvDuplicate answers a command the engine ignored because its
	// (Source, Seq) was at or below the source's high-water mark: it was
	// applied before. It is a command's terminal answer, as EvRelease is.
	EvDuplicate engine.EventKind = enginesbe.DuplicateTemplateID - 10
	// EvDepthSnapshotEnd ends the Depth levels answering a SubscribeDepth.
	EvDepthSnapshotEnd engine.EventKind = enginesbe.DepthSnapshotEndTemplateID - 10
)

// DecodeEvent decodes an enginesbe event message (any engine.EventKind,
// templates 11 to 18) into ev (all fields reset): the inverse of
// AppendEvent. Another schema or template, or a block shorter than the
// message's, is an error.
func DecodeEvent(b []byte, ev *engine.Event) error {
	h, err := enginesbe.WrapMessageHeader(b, 0)
	if err != nil {
		return err
	}
	if h.SchemaId() != enginesbe.SchemaID {
		return fmt.Errorf("wire: message of schema %d, want %d", h.SchemaId(), enginesbe.SchemaID)
	}
	*ev = engine.Event{}
	switch h.TemplateId() {
	case enginesbe.AcceptedTemplateID:
		var d enginesbe.AcceptedDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvAccepted, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId()}
	case enginesbe.RejectedTemplateID:
		var d enginesbe.RejectedDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvRejected, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId(),
			Reason: engine.Reason(d.Reason())}
	case enginesbe.TradeTemplateID:
		var d enginesbe.TradeDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvTrade, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId(),
			Maker: d.Maker(), Side: engine.Side(d.Side()), Price: d.Price(), Qty: d.Qty(), Remaining: d.Remaining(),
			MakerRemaining: d.MakerRemaining()}
	case enginesbe.CancelledTemplateID:
		var d enginesbe.CancelledDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvCancelled, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId(),
			Side: engine.Side(d.Side()), Price: d.Price(), Qty: d.Qty(), Remaining: d.Remaining(), Reason: engine.Reason(d.Reason())}
	case enginesbe.ReplacedTemplateID:
		var d enginesbe.ReplacedDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvReplaced, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId(),
			Side: engine.Side(d.Side()), Price: d.Price(), Qty: d.Qty()}
	case enginesbe.TriggerFiredTemplateID:
		var d enginesbe.TriggerFiredDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvTriggerFired, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(), OrderID: d.OrderId(),
			Side: engine.Side(d.Side()), Price: d.Price()}
	case enginesbe.DepthTemplateID:
		var d enginesbe.DepthDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvDepth, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument(),
			Side: engine.Side(d.Side()), Price: d.Price(), Qty: d.Qty(), Count: d.Count()}
	case enginesbe.ReleaseTemplateID:
		var d enginesbe.ReleaseDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		*ev = engine.Event{Kind: engine.EvRelease, Source: d.Source(), Seq: d.Seq(), Instrument: d.Instrument()}
	default:
		return fmt.Errorf("wire: unknown event template %d", h.TemplateId())
	}
	return nil
}

// AppendDuplicate appends a Duplicate message (the answer to a command the
// engine ignored as already applied) to dst.
func AppendDuplicate(dst []byte, source, seq uint64) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, enginesbe.MessageHeaderEncodedLength+enginesbe.DuplicateBlockLength)...)
	var e enginesbe.DuplicateEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.Source(source).Seq(seq)
	return dst
}

// DecodeDuplicate decodes a Duplicate message's source and sequence.
func DecodeDuplicate(b []byte) (source, seq uint64, err error) {
	var d enginesbe.DuplicateDecoder
	if err := d.WrapWithHeader(b, 0); err != nil {
		return 0, 0, err
	}
	return d.Source(), d.Seq(), nil
}

// MaxDepthLevels caps the levels per side a SubscribeDepth may ask for;
// more are answered with MaxDepthLevels, 0 with DefaultDepthLevels.
const (
	MaxDepthLevels     = 100
	DefaultDepthLevels = 10
)

// AppendSubscribeDepth appends a SubscribeDepth command (handled by the
// service, not the engine) to dst.
func AppendSubscribeDepth(dst []byte, source, seq uint64, instrument uint32, levels uint16) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, enginesbe.MessageHeaderEncodedLength+enginesbe.SubscribeDepthBlockLength)...)
	var e enginesbe.SubscribeDepthEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.Source(source).Seq(seq).Instrument(instrument).Levels(levels)
	return dst
}

// DecodeSubscribeDepth decodes a SubscribeDepth command.
func DecodeSubscribeDepth(b []byte) (source, seq uint64, instrument uint32, levels uint16, err error) {
	var d enginesbe.SubscribeDepthDecoder
	if err := d.WrapWithHeader(b, 0); err != nil {
		return 0, 0, 0, 0, err
	}
	return d.Source(), d.Seq(), d.Instrument(), d.Levels(), nil
}

// AppendDepthSnapshotEnd appends a DepthSnapshotEnd message to dst.
func AppendDepthSnapshotEnd(dst []byte, source, seq uint64, instrument uint32, levels uint16) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, enginesbe.MessageHeaderEncodedLength+enginesbe.DepthSnapshotEndBlockLength)...)
	var e enginesbe.DepthSnapshotEndEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.Source(source).Seq(seq).Instrument(instrument).Levels(levels)
	return dst
}

// DecodeDepthSnapshotEnd decodes a DepthSnapshotEnd message.
func DecodeDepthSnapshotEnd(b []byte) (source, seq uint64, instrument uint32, levels uint16, err error) {
	var d enginesbe.DepthSnapshotEndDecoder
	if err := d.WrapWithHeader(b, 0); err != nil {
		return 0, 0, 0, 0, err
	}
	return d.Source(), d.Seq(), d.Instrument(), d.Levels(), nil
}

// CheckCommand checks that b is exactly one well-formed command message
// (an engine command or SubscribeDepth) as a server must before offering
// it to the log: schema 7002, a command template, a block at least the
// schema's and a message length that is exactly header plus block. It
// returns the command's source.
func CheckCommand(b []byte) (source uint64, err error) {
	h, err := enginesbe.WrapMessageHeader(b, 0)
	if err != nil {
		return 0, fmt.Errorf("wire: command of %d bytes is shorter than a message header", len(b))
	}
	if h.SchemaId() != enginesbe.SchemaID {
		return 0, fmt.Errorf("wire: message of schema %d, want %d", h.SchemaId(), enginesbe.SchemaID)
	}
	var want int
	switch h.TemplateId() {
	case enginesbe.DefineInstrumentTemplateID:
		want = enginesbe.DefineInstrumentBlockLength
	case enginesbe.NewOrderTemplateID:
		want = enginesbe.NewOrderBlockLength
	case enginesbe.CancelTemplateID:
		want = enginesbe.CancelBlockLength
	case enginesbe.ModifyTemplateID:
		want = enginesbe.ModifyBlockLength
	case enginesbe.MassCancelTemplateID:
		want = enginesbe.MassCancelBlockLength
	case enginesbe.MarkPriceTemplateID:
		want = enginesbe.MarkPriceBlockLength
	case enginesbe.SubscribeDepthTemplateID:
		want = enginesbe.SubscribeDepthBlockLength
	default:
		return 0, fmt.Errorf("wire: template %d of schema %d is not a command", h.TemplateId(), enginesbe.SchemaID)
	}
	bl := int(h.BlockLength())
	if bl < want {
		return 0, fmt.Errorf("wire: command template %d with block length %d, want at least %d", h.TemplateId(), bl, want)
	}
	if len(b) != enginesbe.MessageHeaderEncodedLength+bl {
		return 0, fmt.Errorf("wire: command template %d of %d bytes, its header says %d", h.TemplateId(), len(b), enginesbe.MessageHeaderEncodedLength+bl)
	}
	// Every command starts with its uint64 source.
	return uint64(b[8]) | uint64(b[9])<<8 | uint64(b[10])<<16 | uint64(b[11])<<24 |
		uint64(b[12])<<32 | uint64(b[13])<<40 | uint64(b[14])<<48 | uint64(b[15])<<56, nil
}
