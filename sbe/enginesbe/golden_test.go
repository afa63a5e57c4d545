package enginesbe

import (
	"bytes"
	"testing"
)

// Golden layouts of the messages not covered by engine_test.go, derived by
// hand from sbe/schemas/matchlog-engine.xml (byteOrder littleEndian, schema
// id 7002 = 0x1b5a, version 1). The header is blockLength, templateId,
// schemaId, version (uint16 each); the block holds the 8-byte fields in
// declaration order, then the uint32 instrument, then the one-byte enums, with
// no padding.
//
// Field values follow a pattern so that a swapped, shifted or byte-swapped
// field shows: the n-th field of a message holds 0xn1n2...n8 (8 bytes) or
// 0xn1n2n3n4 (the instrument), written little endian as n8 n7 ... n1. A few
// int64 fields are negative to pin the two's complement encoding.
const (
	f1 = 0x1112131415161718 // little endian: 18 17 16 15 14 13 12 11
	f2 = 0x2122232425262728 // 28 27 26 25 24 23 22 21
	f3 = 0x3132333435363738 // 38 37 36 35 34 33 32 31
	f4 = 0x4142434445464748 // 48 47 46 45 44 43 42 41
	f5 = 0x5152535455565758 // 58 57 56 55 54 53 52 51
	f6 = 0x6162636465666768 // 68 67 66 65 64 63 62 61
	f7 = 0x7172737475767778 // 78 77 76 75 74 73 72 71

	i4 = 0x41424344 // 44 43 42 41
	i5 = 0x51525354 // 54 53 52 51
	i6 = 0x61626364 // 64 63 62 61
	i7 = 0x71727374 // 74 73 72 71
	i8 = 0x81828384 // 84 83 82 81
)

// Negative values, by hand: -x = ^x + 1.
//
//	-f3 = 0xcecdcccbcac9c8c8 -> c8 c8 c9 ca cb cc cd ce
//	-f4 = 0xbebdbcbbbab9b8b8 -> b8 b8 b9 ba bb bc bd be
//	-f6 = 0x9e9d9c9b9a999898 -> 98 98 99 9a 9b 9c 9d 9e

func checkField[T comparable](t *testing.T, field string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", field, got, want)
	}
}

// checkBody checks what every decoder of a fixed-size message reports after
// WrapWithHeader on exactly the golden bytes.
func checkBody(t *testing.T, encodedLength, actingBlockLength, actingVersion, blockLength int) {
	t.Helper()
	checkField(t, "EncodedLength", encodedLength, blockLength)
	checkField(t, "ActingBlockLength", actingBlockLength, blockLength)
	checkField(t, "ActingVersion", actingVersion, SchemaVersion)
}

type goldenCase struct {
	name string
	// blockLength is the size of the block by hand from the XML.
	blockLength int
	// encode wraps buf at 0 with WrapAndApplyHeader, sets every field and
	// returns EncodedLength.
	encode func(buf []byte) (int, error)
	// want is the annotated hex of header and block.
	want []string
	// decode wraps the golden bytes with WrapWithHeader and checks every field.
	decode func(t *testing.T, b []byte)
}

var goldenCases = []goldenCase{
	{
		name:        "DefineInstrument",
		blockLength: 7*8 + 4, // 60
		encode: func(buf []byte) (int, error) {
			var e DefineInstrumentEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Time(f3).Tick(f4).Lot(f5).MinPrice(-f6).MaxPrice(f7).Instrument(i8)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"3c00 0100 5a1b 0100", // header: blockLength 60, templateId 1, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 time       int64  f3
			"4847464544434241",    // @24 tick       int64  f4
			"5857565554535251",    // @32 lot        int64  f5
			"9898999a9b9c9d9e",    // @40 minPrice   int64  -f6
			"7877767574737271",    // @48 maxPrice   int64  f7
			"84838281",            // @56 instrument uint32 i8
		},
		decode: func(t *testing.T, b []byte) {
			var d DefineInstrumentDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), DefineInstrumentBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "time", d.Time(), f3)
			checkField(t, "tick", d.Tick(), f4)
			checkField(t, "lot", d.Lot(), f5)
			checkField(t, "minPrice", d.MinPrice(), -f6)
			checkField(t, "maxPrice", d.MaxPrice(), f7)
			checkField(t, "instrument", d.Instrument(), i8)
		},
	},
	{
		name:        "Cancel",
		blockLength: 4*8 + 4, // 36
		encode: func(buf []byte) (int, error) {
			var e CancelEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Time(f3).OrderId(f4).Instrument(i5)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2400 0300 5a1b 0100", // header: blockLength 36, templateId 3, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 time       int64  f3
			"4847464544434241",    // @24 orderId    uint64 f4
			"54535251",            // @32 instrument uint32 i5
		},
		decode: func(t *testing.T, b []byte) {
			var d CancelDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), CancelBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "time", d.Time(), f3)
			checkField(t, "orderId", d.OrderId(), f4)
			checkField(t, "instrument", d.Instrument(), i5)
		},
	},
	{
		name:        "Modify",
		blockLength: 6*8 + 4, // 52
		encode: func(buf []byte) (int, error) {
			var e ModifyEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Time(f3).OrderId(f4).Price(f5).Qty(f6).Instrument(i7)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"3400 0400 5a1b 0100", // header: blockLength 52, templateId 4, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 time       int64  f3
			"4847464544434241",    // @24 orderId    uint64 f4
			"5857565554535251",    // @32 price      int64  f5
			"6867666564636261",    // @40 qty        int64  f6
			"74737271",            // @48 instrument uint32 i7
		},
		decode: func(t *testing.T, b []byte) {
			var d ModifyDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), ModifyBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "time", d.Time(), f3)
			checkField(t, "orderId", d.OrderId(), f4)
			checkField(t, "price", d.Price(), f5)
			checkField(t, "qty", d.Qty(), f6)
			checkField(t, "instrument", d.Instrument(), i7)
		},
	},
	{
		name:        "MassCancel",
		blockLength: 4*8 + 4, // 36
		encode: func(buf []byte) (int, error) {
			var e MassCancelEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Time(f3).Account(f4).Instrument(i5)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2400 0500 5a1b 0100", // header: blockLength 36, templateId 5, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 time       int64  f3
			"4847464544434241",    // @24 account    uint64 f4
			"54535251",            // @32 instrument uint32 i5
		},
		decode: func(t *testing.T, b []byte) {
			var d MassCancelDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), MassCancelBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "time", d.Time(), f3)
			checkField(t, "account", d.Account(), f4)
			checkField(t, "instrument", d.Instrument(), i5)
		},
	},
	{
		name:        "MarkPrice",
		blockLength: 4*8 + 4, // 36
		encode: func(buf []byte) (int, error) {
			var e MarkPriceEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Time(f3).Price(-f4).Instrument(i5)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2400 0600 5a1b 0100", // header: blockLength 36, templateId 6, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 time       int64  f3
			"b8b8b9babbbcbdbe",    // @24 price      int64  -f4
			"54535251",            // @32 instrument uint32 i5
		},
		decode: func(t *testing.T, b []byte) {
			var d MarkPriceDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), MarkPriceBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "time", d.Time(), f3)
			checkField(t, "price", d.Price(), -f4)
			checkField(t, "instrument", d.Instrument(), i5)
		},
	},
	{
		name:        "Accepted",
		blockLength: 3*8 + 4, // 28
		encode: func(buf []byte) (int, error) {
			var e AcceptedEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).OrderId(f3).Instrument(i4)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"1c00 0b00 5a1b 0100", // header: blockLength 28, templateId 11, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 orderId    uint64 f3
			"44434241",            // @24 instrument uint32 i4
		},
		decode: func(t *testing.T, b []byte) {
			var d AcceptedDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), AcceptedBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "orderId", d.OrderId(), f3)
			checkField(t, "instrument", d.Instrument(), i4)
		},
	},
	{
		name:        "Cancelled",
		blockLength: 6*8 + 4 + 1 + 1, // 54
		encode: func(buf []byte) (int, error) {
			var e CancelledEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).OrderId(f3).Price(f4).Qty(f5).Remaining(f6).Instrument(i7).
					Side(SideSell).Reason(ReasonCxlMassCancel)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"3600 0e00 5a1b 0100", // header: blockLength 54, templateId 14, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 orderId    uint64 f3
			"4847464544434241",    // @24 price      int64  f4
			"5857565554535251",    // @32 qty        int64  f5
			"6867666564636261",    // @40 remaining  int64  f6
			"74737271",            // @48 instrument uint32 i7
			"02",                  // @52 side       Side   Sell = 2
			"24",                  // @53 reason     Reason CxlMassCancel = 36
		},
		decode: func(t *testing.T, b []byte) {
			var d CancelledDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), CancelledBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "orderId", d.OrderId(), f3)
			checkField(t, "price", d.Price(), f4)
			checkField(t, "qty", d.Qty(), f5)
			checkField(t, "remaining", d.Remaining(), f6)
			checkField(t, "instrument", d.Instrument(), i7)
			checkField(t, "side", d.Side(), SideSell)
			checkField(t, "reason", d.Reason(), ReasonCxlMassCancel)
		},
	},
	{
		name:        "Replaced",
		blockLength: 5*8 + 4 + 1, // 45
		encode: func(buf []byte) (int, error) {
			var e ReplacedEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).OrderId(f3).Price(f4).Qty(f5).Instrument(i6).Side(SideBuy)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2d00 0f00 5a1b 0100", // header: blockLength 45, templateId 15, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 orderId    uint64 f3
			"4847464544434241",    // @24 price      int64  f4
			"5857565554535251",    // @32 qty        int64  f5
			"64636261",            // @40 instrument uint32 i6
			"01",                  // @44 side       Side   Buy = 1
		},
		decode: func(t *testing.T, b []byte) {
			var d ReplacedDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), ReplacedBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "orderId", d.OrderId(), f3)
			checkField(t, "price", d.Price(), f4)
			checkField(t, "qty", d.Qty(), f5)
			checkField(t, "instrument", d.Instrument(), i6)
			checkField(t, "side", d.Side(), SideBuy)
		},
	},
	{
		name:        "TriggerFired",
		blockLength: 4*8 + 4 + 1, // 37
		encode: func(buf []byte) (int, error) {
			var e TriggerFiredEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).OrderId(f3).Price(f4).Instrument(i5).Side(SideSell)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2500 1000 5a1b 0100", // header: blockLength 37, templateId 16, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"3837363534333231",    // @16 orderId    uint64 f3
			"4847464544434241",    // @24 price      int64  f4
			"54535251",            // @32 instrument uint32 i5
			"02",                  // @36 side       Side   Sell = 2
		},
		decode: func(t *testing.T, b []byte) {
			var d TriggerFiredDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), TriggerFiredBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "orderId", d.OrderId(), f3)
			checkField(t, "price", d.Price(), f4)
			checkField(t, "instrument", d.Instrument(), i5)
			checkField(t, "side", d.Side(), SideSell)
		},
	},
	{
		name:        "Depth",
		blockLength: 5*8 + 4 + 1, // 45
		encode: func(buf []byte) (int, error) {
			var e DepthEncoder
			err := e.WrapAndApplyHeader(buf, 0)
			if err == nil {
				e.Source(f1).Seq(f2).Price(-f3).Qty(f4).Count(f5).Instrument(i6).Side(SideBuy)
			}
			return e.EncodedLength(), err
		},
		want: []string{
			"2d00 1100 5a1b 0100", // header: blockLength 45, templateId 17, schemaId 7002, version 1
			"1817161514131211",    // @0  source     uint64 f1
			"2827262524232221",    // @8  seq        uint64 f2
			"c8c8c9cacbcccdce",    // @16 price      int64  -f3
			"4847464544434241",    // @24 qty        int64  f4
			"5857565554535251",    // @32 count      int64  f5
			"64636261",            // @40 instrument uint32 i6
			"01",                  // @44 side       Side   Buy = 1
		},
		decode: func(t *testing.T, b []byte) {
			var d DepthDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				t.Fatal(err)
			}
			checkBody(t, d.EncodedLength(), d.ActingBlockLength(), d.ActingVersion(), DepthBlockLength)
			checkField(t, "source", d.Source(), f1)
			checkField(t, "seq", d.Seq(), f2)
			checkField(t, "price", d.Price(), -f3)
			checkField(t, "qty", d.Qty(), f4)
			checkField(t, "count", d.Count(), f5)
			checkField(t, "instrument", d.Instrument(), i6)
			checkField(t, "side", d.Side(), SideBuy)
		},
	},
}

// TestGoldenAllMessages encodes every message not covered by the golden
// tests in engine_test.go and compares header and block byte for byte with
// the layout derived by hand from the XML; then decodes those bytes and
// checks every field.
func TestGoldenAllMessages(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.want...)
			// The hand-written table must agree with itself: the header's
			// blockLength is the block size summed from the XML, and the
			// annotated lines add up to header + block.
			if got := int(want[0]) | int(want[1])<<8; got != tc.blockLength {
				t.Fatalf("golden header blockLength %d, XML block %d", got, tc.blockLength)
			}
			if len(want) != MessageHeaderEncodedLength+tc.blockLength {
				t.Fatalf("golden is %d bytes, want %d", len(want), MessageHeaderEncodedLength+tc.blockLength)
			}

			// Fill the buffer with a marker so that bytes the encoder does
			// not write (or writes past the block) show.
			const marker = 0xa5
			buf := bytes.Repeat([]byte{marker}, 128)
			n, err := tc.encode(buf)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.blockLength {
				t.Errorf("EncodedLength %d, want %d", n, tc.blockLength)
			}
			if got := buf[:len(want)]; !bytes.Equal(got, want) {
				t.Errorf("encoded\ngot  %x\nwant %x", got, want)
			}
			for i := len(want); i < len(buf); i++ {
				if buf[i] != marker {
					t.Fatalf("encoder wrote byte %d past the message (%#x)", i, buf[i])
				}
			}

			tc.decode(t, bytes.Clone(want))
		})
	}
}
