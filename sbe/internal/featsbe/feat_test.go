package featsbe

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/sbe/internal/sbetest"
)

func unhex(t *testing.T, lines ...string) []byte { t.Helper(); return sbetest.Unhex(t, lines...) }

func encodeThing(t *testing.T, buf []byte) int {
	t.Helper()
	var e ThingEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.Id(0x0102030405060708).SymbolString("ABC").Price(-2).Qty(5).Colour(ColourGreen).
		Flags(Flags(0).SetUrgent(true).SetHidden(true)).Ratio(1.5).Ticks(0, 1).Ticks(1, -1).Ticks(2, 2).Ticks(3, 99).
		Old(-3).Added(0x01020304)
	legs, err := e.LegsCount(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := legs.Next(); err != nil {
		t.Fatal(err)
	}
	box := legs.Box()
	box.Lo().SetX(1).SetY(2).SetColour(ColourRed)
	box.Hi().SetX(-1).SetY(0).SetColour(ColourBlue)
	box.SetCorners(Corners(0).SetRound(true))
	legs.Weight(300)
	fills, err := legs.FillsCount(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []uint32{10, 11} {
		if _, err := fills.Next(); err != nil {
			t.Fatal(err)
		}
		fills.Qty(q)
	}
	if n := fills.ResetCountToIndex(); n != 2 {
		t.Fatalf("ResetCountToIndex = %d", n)
	}
	if err := legs.PutNoteString("hi"); err != nil {
		t.Fatal(err)
	}
	extras, err := e.ExtrasCount(1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = extras.Next()
	extras.V(9)
	if err := e.PutPayload([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.PutCommentString(""); err != nil {
		t.Fatal(err)
	}
	return HeaderEncodedLength + e.EncodedLength()
}

// TestGoldenBigEndian checks every layout rule on a big-endian schema,
// against bytes written by hand.
func TestGoldenBigEndian(t *testing.T) {
	buf := bytes.Repeat([]byte{0xee}, 256) // padding must be zeroed, not left
	n := encodeThing(t, buf)
	want := unhex(t,
		"0040 0007 002a 0003",           // header: block 64, template 7, schema 42, version 3
		"0102030405060708",              // id @0
		"4142430000000000",              // symbol @8, NUL padded
		"fffffffffffffffe",              // price @16
		"00000005",                      // qty @24
		"47",                            // colour @28 'G'
		"000000",                        // gap before flags @32
		"0201",                          // flags: bits 9 and 0
		"3ff8000000000000",              // ratio @34 = 1.5: constants take no space, alignment="8" is ignored (as by real SBE)
		"0001 ffff 0002",                // ticks @42
		"fd",                            // old @48
		"01020304",                      // added @49
		"0000000000000000000000",        // blockLength override pads to 64
		"001d 0001",                     // legs: entry block 29, 1 entry
		"00000001 40000000 00000000 52", // box.lo: x, y, gap inside the composite, colour @12
		"ffffffff 00000000 00000000 42", // box.hi
		"02",                            // corners
		"012c",                          // weight
		"04 02",                         // fills (uint8 dimensions): block 4, reset to 2 entries
		"0000000a 0000000b",
		"0002 6869", // note: uint16 length, "hi"
		"0001 0001", // extras: block 1, 1 entry
		"09",
		"03 010203", // payload: uint8 length
		"0000",      // comment: empty
	)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("encoding differs:\ngot  %x\nwant %x", buf[:n], want)
	}
}

func TestDecodeAll(t *testing.T) {
	buf := make([]byte, 256)
	n := encodeThing(t, buf)
	var d ThingDecoder
	if err := d.WrapWithHeader(buf[:n], 0); err != nil {
		t.Fatal(err)
	}
	if d.Id() != 0x0102030405060708 || d.SymbolString() != "ABC" || string(d.Symbol()) != "ABC\x00\x00\x00\x00\x00" ||
		d.Price() != -2 || !d.HasPrice() || d.Qty() != 5 || d.Colour() != ColourGreen || !d.Flags().Hidden() || !d.Flags().Urgent() ||
		d.Magic() != 513 || d.Venue() != "XLON" || d.Level() != LevelHigh || d.Ratio() != 1.5 ||
		d.Ticks(0) != 1 || d.Ticks(1) != -1 || d.Ticks(2) != 2 || d.Ticks(3) != math.MinInt16 || d.Old() != -3 || d.Added() != 0x01020304 {
		t.Fatal("block fields")
	}
	legs, err := d.Legs()
	if err != nil || legs.Count() != 1 {
		t.Fatal(err)
	}
	if _, err := legs.Next(); err != nil {
		t.Fatal(err)
	}
	box := legs.Box()
	if box.Lo().X() != 1 || box.Lo().Y() != 2 || box.Lo().Colour() != ColourRed || box.Hi().X() != -1 || box.Hi().Colour() != ColourBlue ||
		!box.Corners().Round() || legs.Weight() != 300 {
		t.Fatal("legs entry")
	}
	fills, err := legs.Fills()
	if err != nil || fills.Count() != 2 {
		t.Fatalf("fills: %v", err)
	}
	var qs []uint32
	for fills.HasNext() {
		_, _ = fills.Next()
		qs = append(qs, fills.Qty())
	}
	if len(qs) != 2 || qs[0] != 10 || qs[1] != 11 {
		t.Fatalf("fills %v", qs)
	}
	if note, err := legs.Note(); err != nil || string(note) != "hi" {
		t.Fatalf("note %q %v", note, err)
	}
	extras, _ := d.Extras()
	_, _ = extras.Next()
	if extras.V() != 9 {
		t.Fatal("extras")
	}
	if p, err := d.Payload(); err != nil || !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Fatalf("payload %v %v", p, err)
	}
	if c, err := d.Comment(); err != nil || len(c) != 0 {
		t.Fatalf("comment %q %v", c, err)
	}
	if d.EncodedLength()+HeaderEncodedLength != n {
		t.Fatalf("decoded %d of %d bytes", d.EncodedLength()+HeaderEncodedLength, n)
	}
}

func TestOptionalNulls(t *testing.T) {
	buf := make([]byte, 256)
	var e ThingEncoder
	_ = e.WrapForEncode(buf, 0)
	e.PriceNull().QtyNull().RatioNull()
	var d ThingDecoder
	_ = d.WrapForDecode(buf, 0, ThingBlockLength, SchemaVersion)
	if d.HasPrice() || d.Price() != math.MinInt64 || d.HasQty() || d.Qty() != 0 || d.HasRatio() || !math.IsNaN(d.Ratio()) {
		t.Fatal("optional fields are not null")
	}
	if ColourNullValue != 0 || Colour(0).String() != "null" || LevelNullValue != math.MinInt32 {
		t.Fatal("enum null values")
	}
}

// TestOlderVersion decodes a version-2 message: a block of 49 bytes without
// "added", no extras group and no comment.
func TestOlderVersion(t *testing.T) {
	buf := make([]byte, 256)
	var e ThingEncoder
	_ = e.WrapForEncode(buf, 0)
	e.Id(1).Added(77)
	legs, _ := e.LegsCount(0)
	_ = legs
	// A v2 encoder wrote 49 bytes of block: move the rest down by hand.
	_ = e.PutPayload([]byte{5})
	v2 := append(append([]byte(nil), buf[:49]...), buf[64:e.EncodedLength()]...)
	var d ThingDecoder
	if err := d.WrapForDecode(v2, 0, 49, 2); err != nil {
		t.Fatal(err)
	}
	if d.Id() != 1 || d.HasAdded() || d.Added() != math.MinInt32 {
		t.Fatalf("added %d", d.Added())
	}
	// With version 2 but a longer block, sinceVersion still hides it.
	var d64 ThingDecoder
	_ = d64.WrapForDecode(buf, 0, 64, 1)
	if d64.HasAdded() {
		t.Fatal("added visible at version 1")
	}
	if l, err := d.Legs(); err != nil || l.Count() != 0 {
		t.Fatal(err)
	}
	if x, err := d.Extras(); err != nil || x.Count() != 0 || x.HasNext() {
		t.Fatal("extras present at version 2")
	}
	if p, err := d.Payload(); err != nil || !bytes.Equal(p, []byte{5}) {
		t.Fatalf("payload %v %v", p, err)
	}
	if c, err := d.Comment(); err != nil || c != nil {
		t.Fatal("comment present at version 2")
	}
}

func TestVarDataLimits(t *testing.T) {
	buf := make([]byte, 300)
	var e ThingEncoder
	_ = e.WrapForEncode(buf, 0)
	_, _ = e.LegsCount(0)
	_, _ = e.ExtrasCount(0)
	if err := e.PutPayload(make([]byte, 255)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("255 bytes into a uint8 length: %v", err)
	}
	if err := e.PutPayload(make([]byte, 254)); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("254 bytes past the buffer: %v", err)
	}
	if err := e.PutCommentString(strings.Repeat("x", 101)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("over maxValue 100: %v", err)
	}
	var e2 ThingEncoder
	_ = e2.WrapForEncode(buf, 0)
	l, _ := e2.LegsCount(1)
	_, _ = l.Next()
	if _, err := l.FillsCount(11); !errors.Is(err, ErrCount) {
		t.Fatalf("count over maxValue 10: %v", err)
	}
}

func TestEmptyMessage(t *testing.T) {
	buf := make([]byte, HeaderEncodedLength)
	var e EmptyEncoder
	if err := e.WrapAndApplyHeader(buf, 0); err != nil || e.EncodedLength() != 0 {
		t.Fatal(err)
	}
	var d EmptyDecoder
	if err := d.WrapWithHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.WrapWithHeader(buf[:7], 0); !errors.Is(err, ErrShortBuffer) {
		t.Fatal(err)
	}
}

func FuzzThing(f *testing.F) {
	buf := make([]byte, 256)
	var e ThingEncoder
	_ = e.WrapAndApplyHeader(buf, 0)
	_, _ = e.LegsCount(0)
	f.Add(append([]byte(nil), buf[:HeaderEncodedLength+e.EncodedLength()]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d ThingDecoder
		if d.WrapWithHeader(b, 0) != nil {
			return
		}
		_ = d.Id() + uint64(d.Price()) + uint64(d.Qty()) + uint64(d.Ratio()) + uint64(d.Ticks(2)) + uint64(d.Added())
		_ = d.SymbolString()
		legs, err := d.Legs()
		for err == nil && legs.HasNext() {
			if _, err = legs.Next(); err != nil {
				break
			}
			_ = legs.Box().Hi().Y() + float32(legs.Weight())
			var fills *ThingLegsFillsDecoder
			if fills, err = legs.Fills(); err != nil {
				break
			}
			for fills.HasNext() {
				if _, err = fills.Next(); err != nil {
					break
				}
				_ = fills.Qty()
			}
			_, err = legs.Note()
		}
		if err != nil {
			return
		}
		if x, err := d.Extras(); err == nil {
			for x.HasNext() {
				if _, err := x.Next(); err != nil {
					return
				}
				_ = x.V()
			}
		}
		_, _ = d.Payload()
		_, _ = d.Comment()
	})
}
