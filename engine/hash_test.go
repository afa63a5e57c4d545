package engine

import (
	"fmt"
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

// BenchmarkHashRestingRun measures the run digest over the same orders as
// BenchmarkHashResting, cut into runs of one length (ns/record): the
// vector digest where the CPU has it (vec) and the Go one (go).
func BenchmarkHashRestingRun(b *testing.B) {
	os := make([]order, 4096)
	accts := make([]uint64, 4096*7)
	for i := range os {
		os[i] = order{pa: pxAcct(uint32(i), uint32(i)*7), sk: uint64(i) << skSeqPos, id: uint64(i) * 13, qty: int64(i + 1)}
	}
	h0 := mix(tagResting, 1<<8|uint64(Buy))
	for _, n := range []int{2, 3, 4, 6, 8, 16, 31, 256} {
		for _, impl := range []string{"vec", "go"} {
			if impl == "vec" && !vecHash {
				continue
			}
			b.Run(fmt.Sprintf("run=%d/%s", n, impl), func(b *testing.B) {
				b.ReportAllocs()
				var s uint64
				for b.Loop() {
					for r := os; len(r) > 0; {
						k := min(n, len(r))
						if impl == "vec" {
							v, _ := hashRunVec(h0, 100, r[:k], accts)
							s += v
						} else {
							s += hashRestingRunGo(1, Buy, 100, r[:k], accts)
						}
						r = r[k:]
					}
				}
				hashSink = s
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(os)), "ns/record")
			})
		}
	}
}

// TestHashRunVec holds the vector digest to the Go one on random runs of
// every length up to 70 (full groups of eight and every tail), with account
// tables of several sizes, and checks that a dense account number outside
// the table, at any position of a run, is reported rather than read.
func TestHashRunVec(t *testing.T) {
	if !vecHash {
		t.Skip("no vector digest on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for _, na := range []int{1, 7, 300} {
		accts := make([]uint64, na)
		for i := range accts {
			accts[i] = rng.Uint64()
		}
		orders := make([]order, 70)
		for i := range orders {
			side := Side(1 + rng.IntN(2))
			orders[i] = order{pa: pxAcct(uint32(rng.Uint64()), uint32(rng.IntN(na))),
				sk: packSK(1+rng.Uint64N(maxSeq), STP(rng.IntN(int(STPDecrement)+1)), rng.IntN(2) == 0, side),
				id: rng.Uint64(), qty: 1 + rng.Int64N(1<<40)}
		}
		for _, side := range []Side{Buy, Sell} {
			inst, price := rng.Uint32(), rng.Int64()
			h0 := mix(tagResting, uint64(inst)<<8|uint64(side))
			for n := 1; n <= len(orders); n++ {
				want := hashRestingRunGo(inst, side, price, orders[:n], accts)
				got, ok := hashRunVec(h0, uint64(price), orders[:n], accts)
				if !ok || got != want {
					t.Fatalf("%d accounts, side %v, %d orders: vector digest %#x (ok %v), want %#x", na, side, n, got, ok, want)
				}
			}
		}
		for n := 1; n <= 17; n++ {
			for bad := range n {
				run := append([]order(nil), orders[:n]...)
				run[bad].pa = pxAcct(run[bad].px(), uint32(na+rng.IntN(3)))
				if _, ok := hashRunVec(1, 2, run, accts); ok {
					t.Fatalf("%d accounts, %d orders: account number %d at %d accepted", na, n, run[bad].acct(), bad)
				}
			}
		}
	}
}

// TestHashRestingRunBadAccount checks that a run with a dense account
// number outside the table fails as indexing it in Go does, whatever the
// run's length (vector or Go digest).
func TestHashRestingRunBadAccount(t *testing.T) {
	accts := []uint64{5, 6, 7}
	for _, n := range []int{1, vecRunMin, 9} {
		run := make([]order, n)
		for i := range run {
			run[i] = order{pa: pxAcct(1, uint32(i%len(accts))), sk: 1 << skSeqPos, id: uint64(i + 1), qty: 1}
		}
		run[n-1].pa = pxAcct(1, uint32(len(accts)))
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%d orders: no failure for account number %d of %d", n, len(accts), len(accts))
				}
			}()
			hashRestingRun(1, Buy, 10, run, accts)
		}()
	}
}
