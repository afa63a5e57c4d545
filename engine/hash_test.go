package engine

import "testing"

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
