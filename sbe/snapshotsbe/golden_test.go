package snapshotsbe

import (
	"bytes"
	"testing"

	"github.com/matchlog/matchlog/sbe/internal/sbetest"
)

// unhex joins hand-written hex lines, one field per line, spaces ignored.
func unhex(t *testing.T, lines ...string) []byte { t.Helper(); return sbetest.Unhex(t, lines...) }

func check(t *testing.T, got []byte, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs:\ngot  %x\nwant %x", got, want)
	}
}

// The expected bytes below are written by hand from the layout rules:
// little endian, fields at the offsets the schema comment gives, header
// blockLength, templateId, schemaId 7001 (0x1b59), version 1.

func TestGoldenBegin(t *testing.T) {
	buf := make([]byte, 64)
	var e MeSnapshotBeginEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.NextSeq(0x0102030405060708).Sources(2).Instruments(3).Orders(0x1000).Triggers(5).RecordVersion(1)
	n := MessageHeaderEncodedLength + e.EncodedLength()
	check(t, buf[:n], unhex(t,
		"2c00 0100 591b 0100", // header: block 44, template 1
		"0807060504030201",    // nextSeq @0
		"0200000000000000",    // sources @8
		"0300000000000000",    // instruments @16
		"0010000000000000",    // orders @24
		"0500000000000000",    // triggers @32
		"01000000",            // recordVersion @40
	))
}

func TestGoldenSourceHwm(t *testing.T) {
	buf := make([]byte, 64)
	var e SourceHwmEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Source(7).Seq(0xfffffffffffffffe)
	check(t, buf[:MessageHeaderEncodedLength+e.EncodedLength()], unhex(t,
		"1000 0200 591b 0100",
		"0700000000000000",
		"feffffffffffffff",
	))
}

func TestGoldenMark(t *testing.T) {
	buf := make([]byte, 64)
	var e MarkEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Tick(5).Lot(100).MinPrice(-10).MaxPrice(1 << 40).LastTrade(0).Mark(0x55).Instrument(0xabcdef01)
	check(t, buf[:MessageHeaderEncodedLength+e.EncodedLength()], unhex(t,
		"3400 0300 591b 0100", // block 52
		"0500000000000000",    // tick
		"6400000000000000",    // lot
		"f6ffffffffffffff",    // minPrice -10
		"0000000000010000",    // maxPrice 2^40
		"0000000000000000",    // lastTrade
		"5500000000000000",    // mark
		"01efcdab",            // instrument
	))
}

func TestGoldenOrders(t *testing.T) {
	buf := make([]byte, 256)
	var e OrdersEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := e.EntriesCount(2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
		g.OrderId(uint64(10 + i)).Account(0x77).Price(-1).Qty(3).Seq(9).Instrument(1).Side(SideSell).Stp(STPCancelBoth).PostOnly(BoolTrue)
	}
	entry := func(id string) string {
		return id + "0000000000000" + // orderId
			"7700000000000000" + // account
			"ffffffffffffffff" + // price -1
			"0300000000000000" + // qty
			"0900000000000000" + // seq
			"01000000" + // instrument @40
			"02" + "03" + "01" // side @44, stp @45, postOnly @46
	}
	check(t, buf[:MessageHeaderEncodedLength+e.EncodedLength()], unhex(t,
		"0000 0400 591b 0100", // block 0, template 4
		"2f00 0200",           // group: entry block 47, 2 entries
		entry("0a0"), entry("0b0"),
	))
}

func TestGoldenTriggers(t *testing.T) {
	buf := make([]byte, 256)
	var e TriggersEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := e.EntriesCount(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	g.OrderId(1).Account(2).Stop(3).Price(4).Qty(5).Seq(6).Instrument(7).Side(SideBuy).
		OrderType(OrderTypeStopLimit).Tif(TimeInForceIOC).Ref(TriggerRefMark).Stp(STPDecrement).PostOnly(BoolFalse)
	check(t, buf[:MessageHeaderEncodedLength+e.EncodedLength()], unhex(t,
		"0000 0500 591b 0100",
		"3a00 0100", // entry block 58, 1 entry
		"0100000000000000", "0200000000000000", "0300000000000000",
		"0400000000000000", "0500000000000000", "0600000000000000",
		"07000000",          // instrument @48
		"01 04 02 02 04 00", // side, orderType, tif, ref, stp, postOnly @52..57
	))
}

func TestGoldenEnd(t *testing.T) {
	buf := make([]byte, 64)
	var e EndEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Sources(1).Instruments(2).Orders(3).Triggers(4).StateHash(0xdeadbeefcafef00d).Checksum(0x0123456789abcdef)
	check(t, buf[:MessageHeaderEncodedLength+e.EncodedLength()], unhex(t,
		"3000 0600 591b 0100", // block 48
		"0100000000000000", "0200000000000000", "0300000000000000", "0400000000000000",
		"0df0fecaefbeadde",
		"efcdab8967452301",
	))
}

func TestBlockLengths(t *testing.T) {
	for name, c := range map[string][2]int{
		"Begin": {MeSnapshotBeginBlockLength, 44}, "SourceHwm": {SourceHwmBlockLength, 16},
		"Mark": {MarkBlockLength, 52}, "Orders": {OrdersBlockLength, 0}, "OrdersEntry": {OrdersEntriesBlockLength, 47},
		"Triggers": {TriggersBlockLength, 0}, "TriggersEntry": {TriggersEntriesBlockLength, 58}, "End": {EndBlockLength, 48},
	} {
		if c[0] != c[1] {
			t.Errorf("%s block length %d, want %d", name, c[0], c[1])
		}
	}
	if OrdersEntriesBlockLength > 82 {
		t.Errorf("an Orders entry is %d bytes, over the 82-byte budget", OrdersEntriesBlockLength)
	}
}
