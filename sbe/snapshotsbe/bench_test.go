package snapshotsbe

import (
	"fmt"
	"testing"
)

// BenchmarkOrdersEntry measures one resting order: Next plus nine setters,
// and Next plus nine getters.
func BenchmarkOrdersEntry(b *testing.B) {
	buf := make([]byte, 65504-32)
	o := orderN(7)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(OrdersEntriesBlockLength)
		var e OrdersEncoder
		capacity := (len(buf) - 16) / OrdersEntriesBlockLength
		_ = e.WrapAndApplyHeader(buf, 0)
		g, _ := e.EntriesCount(capacity)
		for b.Loop() {
			if g.Index() == capacity {
				_ = e.WrapAndApplyHeader(buf, 0)
				g, _ = e.EntriesCount(capacity)
			}
			_, _ = g.Next()
			putOrder(g, o)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(OrdersEntriesBlockLength)
		var e OrdersEncoder
		encodeBatch(b, &e, buf, func(int) (order, bool) { return o, true })
		var d OrdersDecoder
		_ = d.WrapWithHeader(buf, 0)
		g, _ := d.Entries()
		var sink uint64
		for b.Loop() {
			if !g.HasNext() {
				_ = d.WrapWithHeader(buf, 0)
				g, _ = d.Entries()
			}
			_, _ = g.Next()
			r := getOrder(g)
			sink += r.id
		}
		_ = sink
	})
}

// BenchmarkOrdersBatch encodes and decodes whole Orders messages sized to
// the default (1,408) and IPC maximum (65,504) MTUs; ns/entry is reported.
func BenchmarkOrdersBatch(b *testing.B) {
	for _, mtu := range []int{1408, 65504} {
		buf := make([]byte, mtu-32)
		o := orderN(7)
		var e OrdersEncoder
		n := encodeBatch(b, &e, buf, func(int) (order, bool) { return o, true })
		entries := (n - 16) / OrdersEntriesBlockLength
		b.Run(fmt.Sprintf("encode/mtu=%d", mtu), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				encodeBatch(b, &e, buf, func(int) (order, bool) { return o, true })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
		})
		b.Run(fmt.Sprintf("decode/mtu=%d", mtu), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			var d OrdersDecoder
			var sink uint64
			for b.Loop() {
				_ = d.WrapWithHeader(buf, 0)
				g, _ := d.Entries()
				for g.HasNext() {
					_, _ = g.Next()
					sink += getOrder(g).id
				}
			}
			_ = sink
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
		})
	}
}
