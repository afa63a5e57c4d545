package enginesbe

import (
	"bytes"
	"errors"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/internal/sbetest"
)

func unhex(t *testing.T, lines ...string) []byte { t.Helper(); return sbetest.Unhex(t, lines...) }

// Hand-written layouts: little endian, header blockLength, templateId,
// schemaId 7002 (0x1b5a), version 1; 8-byte fields, then the instrument,
// then the one-byte enums.

func TestGoldenNewOrder(t *testing.T) {
	buf := make([]byte, 128)
	var e NewOrderEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Source(1).Seq(2).Time(3).OrderId(4).Account(5).Price(-6).Stop(7).Qty(8).Instrument(9).
		Side(SideSell).OrderType(OrderTypeStopLimit).Tif(TimeInForceGTC).Stp(STPCancelNewest).PostOnly(BoolTrue).Ref(TriggerRefMark)
	want := unhex(t,
		"4a00 0200 5a1b 0100",                                      // block 74, template 2
		"0100000000000000", "0200000000000000", "0300000000000000", // source, seq, time
		"0400000000000000", "0500000000000000", // orderId, account
		"faffffffffffffff", "0700000000000000", "0800000000000000", // price -6, stop, qty
		"09000000",          // instrument @64
		"02 04 01 01 01 02", // side, orderType, tif, stp, postOnly, ref @68..73
	)
	if got := buf[:MessageHeaderEncodedLength+e.EncodedLength()]; !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestGoldenTrade(t *testing.T) {
	buf := make([]byte, 128)
	var e TradeEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Source(1).Seq(2).OrderId(3).Maker(4).Price(5).Qty(6).Remaining(0).MakerRemaining(7).Instrument(0x0102).Side(SideBuy)
	want := unhex(t,
		"4500 0d00 5a1b 0100", // block 69, template 13
		"0100000000000000", "0200000000000000", "0300000000000000", "0400000000000000",
		"0500000000000000", "0600000000000000", "0000000000000000", "0700000000000000",
		"02010000", "01",
	)
	if got := buf[:MessageHeaderEncodedLength+e.EncodedLength()]; !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestGoldenRejectedAndRelease(t *testing.T) {
	buf := make([]byte, 64)
	var e RejectedEncoder
	_ = e.WrapAndApplyHeader(buf, 0)
	e.Source(1).Seq(2).OrderId(3).Instrument(4).Reason(ReasonPostOnlyWouldCross)
	want := unhex(t, "1d00 0c00 5a1b 0100", "0100000000000000", "0200000000000000", "0300000000000000", "04000000", "0c")
	if got := buf[:MessageHeaderEncodedLength+e.EncodedLength()]; !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	var r ReleaseEncoder
	_ = r.WrapAndApplyHeader(buf, 0)
	r.Source(0xff).Seq(0x100).Instrument(1)
	want = unhex(t, "1400 1200 5a1b 0100", "ff00000000000000", "0001000000000000", "01000000")
	if got := buf[:MessageHeaderEncodedLength+r.EncodedLength()]; !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

// TestTemplateIDsMatchKinds pins the id rule of the schema: commands use the
// CommandKind, events 10 + EventKind; and the enums carry the engine's values.
func TestTemplateIDsMatchKinds(t *testing.T) {
	ids := map[int]int{
		DefineInstrumentTemplateID: int(engine.CmdDefineInstrument), NewOrderTemplateID: int(engine.CmdNewOrder),
		CancelTemplateID: int(engine.CmdCancel), ModifyTemplateID: int(engine.CmdModify),
		MassCancelTemplateID: int(engine.CmdMassCancel), MarkPriceTemplateID: int(engine.CmdMarkPrice),
		AcceptedTemplateID: 10 + int(engine.EvAccepted), RejectedTemplateID: 10 + int(engine.EvRejected),
		TradeTemplateID: 10 + int(engine.EvTrade), CancelledTemplateID: 10 + int(engine.EvCancelled),
		ReplacedTemplateID: 10 + int(engine.EvReplaced), TriggerFiredTemplateID: 10 + int(engine.EvTriggerFired),
		DepthTemplateID: 10 + int(engine.EvDepth), ReleaseTemplateID: 10 + int(engine.EvRelease),
	}
	for got, want := range ids {
		if got != want {
			t.Errorf("template id %d, want %d", got, want)
		}
	}
	if len(ids) != 14 {
		t.Errorf("%d distinct template ids, want 14", len(ids))
	}
	pairs := [][2]int{
		{int(SideBuy), int(engine.Buy)}, {int(SideSell), int(engine.Sell)},
		{int(OrderTypeLimit), int(engine.Limit)}, {int(OrderTypeMarket), int(engine.Market)},
		{int(OrderTypeStop), int(engine.Stop)}, {int(OrderTypeStopLimit), int(engine.StopLimit)},
		{int(TimeInForceGTC), int(engine.GTC)}, {int(TimeInForceIOC), int(engine.IOC)}, {int(TimeInForceFOK), int(engine.FOK)},
		{int(STPNone), int(engine.STPNone)}, {int(STPCancelNewest), int(engine.STPCancelNewest)},
		{int(STPCancelOldest), int(engine.STPCancelOldest)}, {int(STPCancelBoth), int(engine.STPCancelBoth)},
		{int(STPDecrement), int(engine.STPDecrement)},
		{int(TriggerRefLastTrade), int(engine.RefLastTrade)}, {int(TriggerRefMark), int(engine.RefMark)},
	}
	for i, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("enum pair %d: %d != %d", i, p[0], p[1])
		}
	}
	for r := range 64 {
		er := engine.Reason(r)
		if er.String() == "reason?" {
			continue
		}
		if Reason(r).String() == "Reason?" {
			t.Errorf("engine reason %d (%s) has no schema value", r, er)
		}
	}
}

func TestRoundTripCommands(t *testing.T) {
	buf := make([]byte, 128)
	var ne NewOrderEncoder
	_ = ne.WrapAndApplyHeader(buf, 0)
	ne.Source(11).Seq(12).Time(-13).OrderId(14).Account(15).Price(16).Stop(17).Qty(18).Instrument(19).
		Side(SideBuy).OrderType(OrderTypeLimit).Tif(TimeInForceFOK).Stp(STPDecrement).PostOnly(BoolFalse).Ref(TriggerRefLastTrade)
	var nd NewOrderDecoder
	if err := nd.WrapWithHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	if nd.Source() != 11 || nd.Seq() != 12 || nd.Time() != -13 || nd.OrderId() != 14 || nd.Account() != 15 || nd.Price() != 16 ||
		nd.Stop() != 17 || nd.Qty() != 18 || nd.Instrument() != 19 || nd.Side() != SideBuy || nd.OrderType() != OrderTypeLimit ||
		nd.Tif() != TimeInForceFOK || nd.Stp() != STPDecrement || nd.PostOnly() != BoolFalse || nd.Ref() != TriggerRefLastTrade {
		t.Fatal("NewOrder")
	}
	var de DefineInstrumentEncoder
	_ = de.WrapAndApplyHeader(buf, 0)
	de.Source(1).Seq(2).Time(3).Tick(4).Lot(5).MinPrice(6).MaxPrice(7).Instrument(8)
	var dd DefineInstrumentDecoder
	if dd.WrapWithHeader(buf, 0) != nil || dd.Source() != 1 || dd.Seq() != 2 || dd.Time() != 3 || dd.Tick() != 4 || dd.Lot() != 5 ||
		dd.MinPrice() != 6 || dd.MaxPrice() != 7 || dd.Instrument() != 8 {
		t.Fatal("DefineInstrument")
	}
	var ce CancelEncoder
	_ = ce.WrapAndApplyHeader(buf, 0)
	ce.Source(1).Seq(2).Time(3).OrderId(4).Instrument(5)
	var cd CancelDecoder
	if cd.WrapWithHeader(buf, 0) != nil || cd.Source() != 1 || cd.Seq() != 2 || cd.Time() != 3 || cd.OrderId() != 4 || cd.Instrument() != 5 {
		t.Fatal("Cancel")
	}
	var me ModifyEncoder
	_ = me.WrapAndApplyHeader(buf, 0)
	me.Source(1).Seq(2).Time(3).OrderId(4).Price(5).Qty(6).Instrument(7)
	var md ModifyDecoder
	if md.WrapWithHeader(buf, 0) != nil || md.Source() != 1 || md.Seq() != 2 || md.Time() != 3 || md.OrderId() != 4 || md.Price() != 5 ||
		md.Qty() != 6 || md.Instrument() != 7 {
		t.Fatal("Modify")
	}
	var mce MassCancelEncoder
	_ = mce.WrapAndApplyHeader(buf, 0)
	mce.Source(1).Seq(2).Time(3).Account(4).Instrument(5)
	var mcd MassCancelDecoder
	if mcd.WrapWithHeader(buf, 0) != nil || mcd.Source() != 1 || mcd.Seq() != 2 || mcd.Time() != 3 || mcd.Account() != 4 || mcd.Instrument() != 5 {
		t.Fatal("MassCancel")
	}
	var mpe MarkPriceEncoder
	_ = mpe.WrapAndApplyHeader(buf, 0)
	mpe.Source(1).Seq(2).Time(3).Price(4).Instrument(5)
	var mpd MarkPriceDecoder
	if mpd.WrapWithHeader(buf, 0) != nil || mpd.Source() != 1 || mpd.Seq() != 2 || mpd.Time() != 3 || mpd.Price() != 4 || mpd.Instrument() != 5 {
		t.Fatal("MarkPrice")
	}
	if err := mpd.WrapWithHeader(buf[:MessageHeaderEncodedLength+MarkPriceBlockLength-1], 0); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("short MarkPrice: %v", err)
	}
	if err := cd.WrapWithHeader(buf, 0); !errors.Is(err, ErrHeader) {
		t.Fatalf("Cancel decoder on MarkPrice: %v", err)
	}
}

func TestRoundTripEvents(t *testing.T) {
	buf := make([]byte, 128)
	var ae AcceptedEncoder
	_ = ae.WrapAndApplyHeader(buf, 0)
	ae.Source(1).Seq(2).OrderId(3).Instrument(4)
	var ad AcceptedDecoder
	if ad.WrapWithHeader(buf, 0) != nil || ad.Source() != 1 || ad.Seq() != 2 || ad.OrderId() != 3 || ad.Instrument() != 4 {
		t.Fatal("Accepted")
	}
	var re RejectedEncoder
	_ = re.WrapAndApplyHeader(buf, 0)
	re.Source(1).Seq(2).OrderId(3).Instrument(4).Reason(ReasonNoChange)
	var rd RejectedDecoder
	if rd.WrapWithHeader(buf, 0) != nil || rd.Source() != 1 || rd.Seq() != 2 || rd.OrderId() != 3 || rd.Instrument() != 4 || rd.Reason() != ReasonNoChange {
		t.Fatal("Rejected")
	}
	var te TradeEncoder
	_ = te.WrapAndApplyHeader(buf, 0)
	te.Source(1).Seq(2).OrderId(3).Maker(4).Price(5).Qty(6).Remaining(7).MakerRemaining(8).Instrument(9).Side(SideSell)
	var td TradeDecoder
	if td.WrapWithHeader(buf, 0) != nil || td.Source() != 1 || td.Seq() != 2 || td.OrderId() != 3 || td.Maker() != 4 || td.Price() != 5 ||
		td.Qty() != 6 || td.Remaining() != 7 || td.MakerRemaining() != 8 || td.Instrument() != 9 || td.Side() != SideSell {
		t.Fatal("Trade")
	}
	var ce CancelledEncoder
	_ = ce.WrapAndApplyHeader(buf, 0)
	ce.Source(1).Seq(2).OrderId(3).Price(4).Qty(5).Remaining(6).Instrument(7).Side(SideBuy).Reason(ReasonCxlSelfTrade)
	var cd CancelledDecoder
	if cd.WrapWithHeader(buf, 0) != nil || cd.Source() != 1 || cd.Seq() != 2 || cd.OrderId() != 3 || cd.Price() != 4 || cd.Qty() != 5 ||
		cd.Remaining() != 6 || cd.Instrument() != 7 || cd.Side() != SideBuy || cd.Reason() != ReasonCxlSelfTrade {
		t.Fatal("Cancelled")
	}
	var pe ReplacedEncoder
	_ = pe.WrapAndApplyHeader(buf, 0)
	pe.Source(1).Seq(2).OrderId(3).Price(4).Qty(5).Instrument(6).Side(SideSell)
	var pd ReplacedDecoder
	if pd.WrapWithHeader(buf, 0) != nil || pd.Source() != 1 || pd.Seq() != 2 || pd.OrderId() != 3 || pd.Price() != 4 || pd.Qty() != 5 ||
		pd.Instrument() != 6 || pd.Side() != SideSell {
		t.Fatal("Replaced")
	}
	var fe TriggerFiredEncoder
	_ = fe.WrapAndApplyHeader(buf, 0)
	fe.Source(1).Seq(2).OrderId(3).Price(4).Instrument(5).Side(SideBuy)
	var fd TriggerFiredDecoder
	if fd.WrapWithHeader(buf, 0) != nil || fd.Source() != 1 || fd.Seq() != 2 || fd.OrderId() != 3 || fd.Price() != 4 || fd.Instrument() != 5 || fd.Side() != SideBuy {
		t.Fatal("TriggerFired")
	}
	var dpe DepthEncoder
	_ = dpe.WrapAndApplyHeader(buf, 0)
	dpe.Source(1).Seq(2).Price(3).Qty(4).Count(5).Instrument(6).Side(SideSell)
	var dpd DepthDecoder
	if dpd.WrapWithHeader(buf, 0) != nil || dpd.Source() != 1 || dpd.Seq() != 2 || dpd.Price() != 3 || dpd.Qty() != 4 || dpd.Count() != 5 ||
		dpd.Instrument() != 6 || dpd.Side() != SideSell {
		t.Fatal("Depth")
	}
	var le ReleaseEncoder
	_ = le.WrapAndApplyHeader(buf, 0)
	le.Source(1).Seq(2).Instrument(3)
	var ld ReleaseDecoder
	if ld.WrapWithHeader(buf, 0) != nil || ld.Source() != 1 || ld.Seq() != 2 || ld.Instrument() != 3 {
		t.Fatal("Release")
	}
}

func TestEncodeAllocs(t *testing.T) {
	buf := make([]byte, 128)
	var e TradeEncoder
	if a := testing.AllocsPerRun(100, func() {
		_ = e.WrapAndApplyHeader(buf, 0)
		e.Source(1).Seq(2).OrderId(3).Maker(4).Price(5).Qty(6).Remaining(7).MakerRemaining(8).Instrument(9).Side(SideSell)
	}); a != 0 {
		t.Fatalf("encoding a Trade allocates %v times", a)
	}
}
