package snapshot

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// putOrder and setGroupCount write what the generated flyweights write.
func TestPutOrderMatchesFlyweight(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 19))
	const n = 5
	want := make([]byte, batchHeader+n*orderLength)
	got := make([]byte, len(want))
	var enc snapshotsbe.OrdersEncoder
	if err := enc.WrapAndApplyHeader(want, 0); err != nil {
		t.Fatal(err)
	}
	g, err := enc.EntriesCount(n + 3)
	if err != nil {
		t.Fatal(err)
	}
	var enc2 snapshotsbe.OrdersEncoder
	if err := enc2.WrapAndApplyHeader(got, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := enc2.EntriesCount(n + 3); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		inst, id, acct, seq := rng.Uint32(), rng.Uint64(), rng.Uint64(), rng.Uint64()
		px, qty := int64(rng.Uint64()), int64(rng.Uint64())
		side, stp, post := engine.Side(1+rng.IntN(2)), engine.STP(rng.IntN(4)), rng.IntN(2) == 0
		e, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		e.OrderId(id).Account(acct).Price(px).Qty(qty).Seq(seq).Instrument(inst).
			Side(snapshotsbe.Side(side)).Stp(snapshotsbe.STP(stp)).PostOnly(boolOf(post))
		off := batchHeader + i*orderLength
		putOrder(got[off:off+orderLength], inst, side, id, acct, px, qty, seq, stp, post)
	}
	g.ResetCountToIndex()
	setGroupCount(got, n)
	if !bytes.Equal(got, want) {
		t.Fatalf("putOrder/setGroupCount bytes differ from the flyweight's:\n got %x\nwant %x", got, want)
	}
}
