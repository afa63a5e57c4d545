package snapshotsbe

import (
	"errors"
	"testing"
)

type order struct {
	id, account uint64
	price, qty  int64
	seq         uint64
	instrument  uint32
	side        Side
	stp         STP
	post        Bool
}

func orderN(i int) order {
	return order{uint64(i + 1), uint64(i * 7), int64(i*5 - 100), int64(i + 1), uint64(1000 + i), uint32(i / 3), Side(1 + i%2), STP(i % 5), Bool(i % 2)}
}

func putOrder(g *OrdersEntriesEncoder, o order) {
	g.OrderId(o.id).Account(o.account).Price(o.price).Qty(o.qty).Seq(o.seq).Instrument(o.instrument).Side(o.side).Stp(o.stp).PostOnly(o.post)
}

func getOrder(d *OrdersEntriesDecoder) order {
	return order{d.OrderId(), d.Account(), d.Price(), d.Qty(), d.Seq(), d.Instrument(), d.Side(), d.Stp(), d.PostOnly()}
}

// encodeBatch fills buf with one Orders message of as many entries as fit,
// taking them from next until it returns false, and closes the batch with
// ResetCountToIndex, as the snapshot publisher does.
func encodeBatch(t testing.TB, e *OrdersEncoder, buf []byte, next func(i int) (order, bool)) int {
	if err := e.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	capacity := (len(buf) - MessageHeaderEncodedLength - OrdersBlockLength - GroupSizeEncodingEncodedLength) / OrdersEntriesBlockLength
	g, err := e.EntriesCount(capacity)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < capacity; i++ {
		o, ok := next(i)
		if !ok {
			break
		}
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
		putOrder(g, o)
	}
	g.ResetCountToIndex()
	return MessageHeaderEncodedLength + e.EncodedLength()
}

func decodeBatch(t testing.TB, buf []byte) []order {
	var d OrdersDecoder
	if err := d.WrapWithHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := d.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var out []order
	for g.HasNext() {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
		out = append(out, getOrder(g))
	}
	return out
}

func TestOrdersRoundTripAndResetCount(t *testing.T) {
	// 1,408-byte MTU minus Aeron's 32-byte frame header: 29 entries fit.
	buf := make([]byte, 1408-32)
	var e OrdersEncoder
	for _, total := range []int{0, 1, 5, 28, 29, 40} {
		n := encodeBatch(t, &e, buf, func(i int) (order, bool) { return orderN(i), i < total })
		want := min(total, 29)
		if n != MessageHeaderEncodedLength+GroupSizeEncodingEncodedLength+want*OrdersEntriesBlockLength {
			t.Fatalf("total %d: encoded %d bytes", total, n)
		}
		got := decodeBatch(t, buf[:n])
		if len(got) != want {
			t.Fatalf("total %d: decoded %d entries, want %d", total, len(got), want)
		}
		for i, o := range got {
			if o != orderN(i) {
				t.Fatalf("entry %d: %+v, want %+v", i, o, orderN(i))
			}
		}
		var d OrdersDecoder
		_ = d.WrapWithHeader(buf[:n], 0)
		g, _ := d.Entries()
		for g.HasNext() {
			_, _ = g.Next()
		}
		if MessageHeaderEncodedLength+d.EncodedLength() != n {
			t.Fatalf("decoded length %d, encoded %d", MessageHeaderEncodedLength+d.EncodedLength(), n)
		}
	}
}

func TestRoundTripScalars(t *testing.T) {
	buf := make([]byte, 128)
	var be MeSnapshotBeginEncoder
	if err := be.WrapAndApplyHeader(buf, 3); err != nil {
		t.Fatal(err)
	}
	be.NextSeq(1).Sources(2).Instruments(3).Orders(4).Triggers(5).RecordVersion(6)
	var bd MeSnapshotBeginDecoder
	if err := bd.WrapWithHeader(buf, 3); err != nil {
		t.Fatal(err)
	}
	if bd.NextSeq() != 1 || bd.Sources() != 2 || bd.Instruments() != 3 || bd.Orders() != 4 || bd.Triggers() != 5 || bd.RecordVersion() != 6 {
		t.Fatal("Begin round trip")
	}
	var ed EndDecoder
	if err := ed.WrapWithHeader(buf, 3); !errors.Is(err, ErrHeader) {
		t.Fatalf("End decoder on a Begin message: %v, want ErrHeader", err)
	}
	var te TriggersEncoder
	if err := te.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, _ := te.EntriesCount(1)
	_, _ = g.Next()
	g.OrderId(1).Account(2).Stop(3).Price(4).Qty(5).Seq(6).Instrument(7).Side(SideSell).OrderType(OrderTypeStop).
		Tif(TimeInForceFOK).Ref(TriggerRefLastTrade).Stp(STPCancelOldest).PostOnly(BoolTrue)
	var td TriggersDecoder
	if err := td.WrapWithHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	gd, err := td.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gd.Next(); err != nil {
		t.Fatal(err)
	}
	if gd.OrderId() != 1 || gd.Account() != 2 || gd.Stop() != 3 || gd.Price() != 4 || gd.Qty() != 5 || gd.Seq() != 6 ||
		gd.Instrument() != 7 || gd.Side() != SideSell || gd.OrderType() != OrderTypeStop || gd.Tif() != TimeInForceFOK ||
		gd.Ref() != TriggerRefLastTrade || gd.Stp() != STPCancelOldest || gd.PostOnly() != BoolTrue {
		t.Fatal("Triggers round trip")
	}
	if _, err := gd.Next(); !errors.Is(err, ErrCount) {
		t.Fatalf("Next past the count: %v", err)
	}
	if SideSell.String() != "Sell" || Side(9).String() != "Side?" {
		t.Fatal("enum String")
	}
}

func TestShortBuffers(t *testing.T) {
	full := make([]byte, 512)
	var e OrdersEncoder
	n := encodeBatch(t, &e, full, func(i int) (order, bool) { return orderN(i), i < 3 })
	for cut := 0; cut < n; cut++ {
		var d OrdersDecoder
		err := d.WrapWithHeader(full[:cut], 0)
		if err == nil {
			var g *OrdersEntriesDecoder
			if g, err = d.Entries(); err == nil {
				for g.HasNext() && err == nil {
					_, err = g.Next()
				}
			}
		}
		if !errors.Is(err, ErrShortBuffer) {
			t.Fatalf("cut at %d of %d: %v, want ErrShortBuffer", cut, n, err)
		}
	}
	// Encoders refuse what does not fit.
	var be MeSnapshotBeginEncoder
	if err := be.WrapAndApplyHeader(make([]byte, MessageHeaderEncodedLength+MeSnapshotBeginBlockLength-1), 0); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("WrapAndApplyHeader: %v", err)
	}
	if err := be.WrapForEncode(full, -1); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("negative offset: %v", err)
	}
	small := make([]byte, MessageHeaderEncodedLength+GroupSizeEncodingEncodedLength+OrdersEntriesBlockLength+1)
	if err := e.WrapAndApplyHeader(small, 0); err != nil {
		t.Fatal(err)
	}
	g, err := e.EntriesCount(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("second entry: %v, want ErrShortBuffer", err)
	}
	if _, err := e.EntriesCount(70000); !errors.Is(err, ErrCount) {
		t.Fatalf("count 70000: %v", err)
	}
	var d OrdersDecoder
	if err := d.WrapForDecode(full, 10, 600, 1); !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("block past the end: %v", err)
	}
}

// TestGettersBeforeNext reads an entry before Next on a group whose
// declared entry block runs past the buffer: null values, no panic.
func TestGettersBeforeNext(t *testing.T) {
	buf := make([]byte, MessageHeaderEncodedLength+GroupSizeEncodingEncodedLength)
	var e OrdersEncoder
	_ = e.WrapAndApplyHeader(buf, 0)
	_, _ = e.EntriesCount(0)
	var d OrdersDecoder
	if err := d.WrapWithHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := d.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if g.HasNext() || g.Seq() != 18446744073709551615 || g.PostOnly() != BoolNullValue {
		t.Fatal("entry fields before Next are not null")
	}
}

// TestOlderBlock decodes with an acting block length shorter than ours: the
// fields past it read as null values, never out of range.
func TestOlderBlock(t *testing.T) {
	buf := make([]byte, 64)
	var e MarkEncoder
	_ = e.WrapForEncode(buf, 0)
	e.Tick(1).Instrument(9)
	var d MarkDecoder
	if err := d.WrapForDecode(buf, 0, 8, 1); err != nil {
		t.Fatal(err)
	}
	if d.Tick() != 1 || d.Instrument() != 4294967295 || d.Mark() != -9223372036854775808 {
		t.Fatalf("tick %d instrument %d mark %d", d.Tick(), d.Instrument(), d.Mark())
	}
}

func TestEncodeAllocs(t *testing.T) {
	buf := make([]byte, 65504-32)
	var e OrdersEncoder
	o := orderN(3)
	allocs := testing.AllocsPerRun(100, func() {
		_ = e.WrapAndApplyHeader(buf, 0)
		g, _ := e.EntriesCount(100)
		for range 100 {
			_, _ = g.Next()
			putOrder(g, o)
		}
		g.ResetCountToIndex()
	})
	if allocs != 0 {
		t.Fatalf("encoding a batch allocates %v times", allocs)
	}
	// Codecs are reused: one holds pointers into itself, so one declared
	// per message would escape to the heap.
	var d OrdersDecoder
	allocs = testing.AllocsPerRun(100, func() {
		_ = d.WrapWithHeader(buf, 0)
		g, _ := d.Entries()
		for g.HasNext() {
			_, _ = g.Next()
			_ = getOrder(g)
		}
	})
	if allocs != 0 {
		t.Fatalf("decoding a batch allocates %v times", allocs)
	}
}

// TestNewerEntryBlock decodes a batch written by a newer schema whose
// entries are 2 bytes longer: the decoder steps by the wire's entry length
// and reads our fields unchanged.
func TestNewerEntryBlock(t *testing.T) {
	buf := make([]byte, 512)
	var e OrdersEncoder
	n := encodeBatch(t, &e, buf, func(i int) (order, bool) { return orderN(i), i < 3 })
	const hdr = MessageHeaderEncodedLength + GroupSizeEncodingEncodedLength
	newer := append([]byte(nil), buf[:hdr]...)
	newer[hdr-4] = OrdersEntriesBlockLength + 2 // the dimension's blockLength
	for i := range 3 {
		entry := buf[hdr+i*OrdersEntriesBlockLength : hdr+(i+1)*OrdersEntriesBlockLength]
		newer = append(append(newer, entry...), 0xaa, 0xbb)
	}
	if len(newer) != n+6 {
		t.Fatalf("built %d bytes", len(newer))
	}
	got := decodeBatch(t, newer)
	for i := range 3 {
		if got[i] != orderN(i) {
			t.Fatalf("entry %d: %+v", i, got[i])
		}
	}
}
