package snapshotsbe_test

import (
	"fmt"

	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// Example encodes one Orders batch in place, closes it early with
// ResetCountToIndex, and decodes it.
func Example() {
	claim := make([]byte, 1408-32) // one claim at the default MTU
	var e snapshotsbe.OrdersEncoder
	if err := e.WrapAndApplyHeader(claim, 0); err != nil {
		panic(err)
	}
	capacity := (len(claim) - snapshotsbe.MessageHeaderEncodedLength - snapshotsbe.GroupSizeEncodingEncodedLength) /
		snapshotsbe.OrdersEntriesBlockLength
	g, err := e.EntriesCount(capacity)
	if err != nil {
		panic(err)
	}
	for i := range 3 { // the record kind changes after three orders
		if _, err := g.Next(); err != nil {
			panic(err)
		}
		g.OrderId(uint64(100 + i)).Price(int64(5000 - i)).Qty(10).Side(snapshotsbe.SideBuy)
	}
	g.ResetCountToIndex()
	n := snapshotsbe.MessageHeaderEncodedLength + e.EncodedLength()
	fmt.Println("capacity", capacity, "bytes", n)

	var d snapshotsbe.OrdersDecoder
	if err := d.WrapWithHeader(claim[:n], 0); err != nil {
		panic(err)
	}
	gd, err := d.Entries()
	if err != nil {
		panic(err)
	}
	for gd.HasNext() {
		if _, err := gd.Next(); err != nil {
			panic(err)
		}
		fmt.Println(gd.OrderId(), gd.Side(), gd.Price(), gd.Qty())
	}
	// Output:
	// capacity 29 bytes 153
	// 100 Buy 5000 10
	// 101 Buy 4999 10
	// 102 Buy 4998 10
}
