package snapshot

import (
	"fmt"
	"testing"

	"github.com/matchlog/matchlog/internal/stream"
)

// TestTakeAllocs proves a reused Publisher's take allocates nothing, over
// a log whose reader (a drain) is released through the idle function.
func TestTakeAllocs(t *testing.T) {
	for _, g := range geometries {
		e := buildEngine(t, bookSpec{instruments: 4, sources: 3, orders: 3000, triggers: 100})
		l, pub, img := newLog(t, g.term, g.mtu)
		window := int64(l.TermWindowLength())
		idle := func() error {
			img.Drain(1 << 30)
			pub.SetPositionLimit(img.Position() + window)
			return nil
		}
		p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, idle)
		if err != nil {
			t.Fatal(err)
		}
		take := func() {
			if err := p.Take(e, testMarker); err != nil {
				t.Fatal(err)
			}
		}
		take()
		if a := testing.AllocsPerRun(20, take); a != 0 {
			t.Fatalf("mtu %d: %v allocations per take", g.mtu, a)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	for _, g := range geometries {
		e := buildEngine(b, bookSpec{instruments: 8, sources: 4, orders: 100_000})
		l, pub, img := newLog(b, 16<<20, g.mtu)
		window := int64(l.TermWindowLength())
		p, _ := NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error {
			img.Drain(1 << 30)
			pub.SetPositionLimit(img.Position() + window)
			return nil
		})
		b.Run(fmt.Sprintf("mtu%d", g.mtu), func(b *testing.B) {
			for b.Loop() {
				if err := p.Take(e, testMarker); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/order")
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	e := buildEngine(b, bookSpec{instruments: 8, sources: 4, orders: 100_000})
	frags := capture(b, e, 16<<20, 65504)
	var l Loader
	for b.Loop() {
		if _, _, err := l.Load(stream.NewFrameSource(frags), testLoad); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/order")
}

// BenchmarkChecksum: the stream checksum over one full Orders batch at MTU
// 1,408 (1,375 bytes, 29 entries); docs/performance.md has the figures.
func BenchmarkChecksum(b *testing.B) {
	// A full Orders batch at MTU 1,408 and at 65,504.
	for _, size := range []int{1375, 65436} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			buf := make([]byte, size)
			for i := range buf {
				buf[i] = byte(i * 7)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			h := checksumBasis
			for b.Loop() {
				h = checksum(h, buf)
			}
			if h == 0 {
				b.Log(h)
			}
		})
	}
}
