package enginesbe

import (
	"encoding/binary"
	"testing"
)

// FuzzDecode wraps every message decoder over arbitrary bytes and reads every
// field: errors are fine, panics are not.
func FuzzDecode(f *testing.F) {
	for id := 1; id <= 18; id++ {
		b := make([]byte, 90)
		binary.LittleEndian.PutUint16(b[0:], 74)
		binary.LittleEndian.PutUint16(b[2:], uint16(id))
		binary.LittleEndian.PutUint16(b[4:], SchemaID)
		binary.LittleEndian.PutUint16(b[6:], SchemaVersion)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := WrapMessageHeader(b, 0)
		if err != nil {
			return
		}
		off, bl, v := MessageHeaderEncodedLength, int(h.BlockLength()), int(h.Version())
		var s int64
		switch h.TemplateId() {
		case DefineInstrumentTemplateID:
			var d DefineInstrumentDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()) + d.Time() + d.Tick() + d.Lot() + d.MinPrice() + d.MaxPrice() + int64(d.Instrument())
			}
		case NewOrderTemplateID:
			var d NewOrderDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()+d.Account()) + d.Time() + d.Price() + d.Stop() + d.Qty() + int64(d.Instrument()) +
					int64(d.Side()) + int64(d.OrderType()) + int64(d.Tif()) + int64(d.Stp()) + int64(d.PostOnly()) + int64(d.Ref())
			}
		case CancelTemplateID:
			var d CancelDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + d.Time() + int64(d.Instrument())
			}
		case ModifyTemplateID:
			var d ModifyDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + d.Time() + d.Price() + d.Qty() + int64(d.Instrument())
			}
		case MassCancelTemplateID:
			var d MassCancelDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.Account()) + d.Time() + int64(d.Instrument())
			}
		case MarkPriceTemplateID:
			var d MarkPriceDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()) + d.Time() + d.Price() + int64(d.Instrument())
			}
		case AcceptedTemplateID:
			var d AcceptedDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + int64(d.Instrument())
			}
		case RejectedTemplateID:
			var d RejectedDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + int64(d.Instrument()) + int64(d.Reason())
			}
		case TradeTemplateID:
			var d TradeDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()+d.Maker()) + d.Price() + d.Qty() + d.Remaining() + d.MakerRemaining() +
					int64(d.Instrument()) + int64(d.Side())
			}
		case CancelledTemplateID:
			var d CancelledDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + d.Price() + d.Qty() + d.Remaining() + int64(d.Instrument()) +
					int64(d.Side()) + int64(d.Reason())
			}
		case ReplacedTemplateID:
			var d ReplacedDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + d.Price() + d.Qty() + int64(d.Instrument()) + int64(d.Side())
			}
		case TriggerFiredTemplateID:
			var d TriggerFiredDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()+d.OrderId()) + d.Price() + int64(d.Instrument()) + int64(d.Side())
			}
		case DepthTemplateID:
			var d DepthDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()) + d.Price() + d.Qty() + d.Count() + int64(d.Instrument()) + int64(d.Side())
			}
		case ReleaseTemplateID:
			var d ReleaseDecoder
			if d.WrapForDecode(b, off, bl, v) == nil {
				s += int64(d.Source()+d.Seq()) + int64(d.Instrument())
			}
		}
		_ = s
	})
}
