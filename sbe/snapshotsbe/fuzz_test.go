package snapshotsbe

import (
	"encoding/binary"
	"testing"
)

// decodeAny decodes buf as whatever message its header names, touching every
// field, group entry and length. It must never panic.
func decodeAny(buf []byte) int {
	h, err := WrapMessageHeader(buf, 0)
	if err != nil {
		return 0
	}
	off, bl, v := MessageHeaderEncodedLength, int(h.BlockLength()), int(h.Version())
	sum := 0
	switch h.TemplateId() {
	case MeSnapshotBeginTemplateID:
		var d MeSnapshotBeginDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			sum += int(d.NextSeq() + d.Sources() + d.Instruments() + d.Orders() + d.Triggers() + uint64(d.RecordVersion()))
		}
	case SourceHwmTemplateID:
		var d SourceHwmDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			sum += int(d.Source() + d.Seq())
		}
	case MarkTemplateID:
		var d MarkDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			sum += int(d.Tick()+d.Lot()+d.MinPrice()+d.MaxPrice()+d.LastTrade()+d.Mark()) + int(d.Instrument())
		}
	case OrdersTemplateID:
		var d OrdersDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			if g, err := d.Entries(); err == nil {
				sum += int(g.OrderId()) + int(g.Side()) // before Next: null values
				for g.HasNext() {
					if _, err := g.Next(); err != nil {
						break
					}
					sum += int(g.OrderId()+g.Account()+g.Seq()) + int(g.Price()+g.Qty()) + int(g.Instrument()) + int(g.Side()) + int(g.Stp()) + int(g.PostOnly())
				}
			}
		}
	case TriggersTemplateID:
		var d TriggersDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			if g, err := d.Entries(); err == nil {
				sum += int(g.OrderId()) + int(g.Side()) // before Next: null values
				for g.HasNext() {
					if _, err := g.Next(); err != nil {
						break
					}
					sum += int(g.OrderId()+g.Account()+g.Seq()) + int(g.Stop()+g.Price()+g.Qty()) + int(g.Instrument()) +
						int(g.Side()) + int(g.OrderType()) + int(g.Tif()) + int(g.Ref()) + int(g.Stp()) + int(g.PostOnly())
				}
			}
		}
	case EndTemplateID:
		var d EndDecoder
		if d.WrapForDecode(buf, off, bl, v) == nil {
			sum += int(d.Sources() + d.Instruments() + d.Orders() + d.Triggers() + d.StateHash() + d.Checksum())
		}
	}
	return sum
}

func FuzzDecode(f *testing.F) {
	buf := make([]byte, 512)
	var oe OrdersEncoder
	n := encodeBatch(f, &oe, buf, func(i int) (order, bool) { return orderN(i), i < 3 })
	f.Add(append([]byte(nil), buf[:n]...))
	var te TriggersEncoder
	_ = te.WrapAndApplyHeader(buf, 0)
	g, _ := te.EntriesCount(2)
	_, _ = g.Next()
	_, _ = g.Next()
	f.Add(append([]byte(nil), buf[:MessageHeaderEncodedLength+te.EncodedLength()]...))
	for _, id := range []uint16{MeSnapshotBeginTemplateID, SourceHwmTemplateID, MarkTemplateID, EndTemplateID} {
		b := make([]byte, 70)
		binary.LittleEndian.PutUint16(b[0:], 60)
		binary.LittleEndian.PutUint16(b[2:], id)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAny(b)
		// Every truncation is an error or a shorter read, never a panic.
		for cut := len(b) - 1; cut >= 0 && cut > len(b)-64; cut-- {
			decodeAny(b[:cut])
		}
	})
}
