package snapshot

import (
	"encoding/binary"
	"testing"

	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// TestOrdersOffsets encodes one Orders entry with the generated encoder,
// every field a distinct value, and reads it back at the offsets onOrders
// uses: a field moved in the schema fails here by name.
func TestOrdersOffsets(t *testing.T) {
	buf := make([]byte, batchHeader+orderLength)
	var enc snapshotsbe.OrdersEncoder
	if err := enc.WrapAndApplyHeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	g, err := enc.EntriesCount(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	g.OrderId(0x0102030405060708).Account(0x1112131415161718).Price(0x2122232425262728).Qty(0x3132333435363738).
		Seq(0x4142434445464748).Instrument(0x51525354).Side(snapshotsbe.Side(2)).Stp(snapshotsbe.STP(3)).PostOnly(snapshotsbe.BoolTrue)
	e := buf[batchHeader:]
	le := binary.LittleEndian
	for _, f := range []struct {
		name      string
		got, want uint64
	}{
		{"orderId", le.Uint64(e[ordOrderID:]), 0x0102030405060708},
		{"account", le.Uint64(e[ordAccount:]), 0x1112131415161718},
		{"price", le.Uint64(e[ordPrice:]), 0x2122232425262728},
		{"qty", le.Uint64(e[ordQty:]), 0x3132333435363738},
		{"seq", le.Uint64(e[ordSeq:]), 0x4142434445464748},
		{"instrument", uint64(le.Uint32(e[ordInstrument:])), 0x51525354},
		{"side", uint64(e[ordSide]), 2},
		{"stp", uint64(e[ordSTP]), 3},
		{"postOnly", uint64(e[ordPostOnly]), uint64(snapshotsbe.BoolTrue)},
	} {
		if f.got != f.want {
			t.Errorf("%s at its offset reads %#x, want %#x", f.name, f.got, f.want)
		}
	}
}
