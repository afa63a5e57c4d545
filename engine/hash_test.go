package engine

import (
	"math/rand/v2"
	"testing"
)

var hashSink uint64

// BenchmarkHashResting measures the digest of one resting-order record
// alone, over 4,096 orders held in the cache: the floor under any walk
// that computes the state hash (ns/record).
func BenchmarkHashResting(b *testing.B) {
	os := make([]order, 4096)
	for i := range os {
		os[i] = order{pa: pxAcct(uint32(i), uint32(i)*7), sk: uint64(i) << skSeqPos, id: uint64(i) * 13, qty: int64(i + 1)}
	}
	b.ReportAllocs()
	var s uint64
	for b.Loop() {
		for i := range os {
			o := &os[i]
			s += HashResting(1, Buy, o.id, uint64(o.acct()), int64(o.px()), o.qty, o.sk>>skSeqPos, STP(o.sk&3), o.sk&4 != 0)
		}
	}
	hashSink = s
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(os)), "ns/record")
}

// TestHashRestingRun holds the run digest to the sum of HashResting over
// the run's records, for runs of every length up to 33 (odd and even, so
// both the paired loop and the last single record), with every field
// random, the STP and post-only flags among them.
func TestHashRestingRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 16))
	accts := make([]uint64, 50)
	for i := range accts {
		accts[i] = rng.Uint64()
	}
	for _, side := range []Side{Buy, Sell} {
		orders := make([]order, 33)
		for i := range orders {
			orders[i] = order{pa: pxAcct(uint32(rng.Uint64()), uint32(rng.IntN(len(accts)))),
				sk: packSK(1+rng.Uint64N(maxSeq), STP(rng.IntN(int(STPDecrement)+1)), rng.IntN(2) == 0, side),
				id: rng.Uint64(), qty: 1 + rng.Int64N(1<<40)}
		}
		inst, price := rng.Uint32(), rng.Int64()
		for n := 0; n <= len(orders); n++ {
			var want uint64
			for _, o := range orders[:n] {
				want += HashResting(inst, side, o.id, accts[o.acct()], price, o.qty, skSeq(o.sk), skSTPOf(o.sk), skPostOf(o.sk))
			}
			if got := hashRestingRun(inst, side, price, orders[:n], accts); got != want {
				t.Fatalf("side %v, %d orders: run digest %#x, want %#x", side, n, got, want)
			}
		}
	}
}
