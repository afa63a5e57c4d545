package enginesvc

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
		return dst[:off], fmt.Errorf("enginesvc: cannot encode command kind %d", c.Kind)
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
		return fmt.Errorf("enginesvc: message of schema %d, want %d", h.SchemaId(), enginesbe.SchemaID)
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
		return fmt.Errorf("enginesvc: unknown command template %d", h.TemplateId())
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

// EventKind returns the kind of an encoded event (0 if it is not one).
func EventKind(b []byte) engine.EventKind {
	h, err := enginesbe.WrapMessageHeader(b, 0)
	if err != nil || h.SchemaId() != enginesbe.SchemaID || h.TemplateId() <= 10 || h.TemplateId() > 18 {
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
