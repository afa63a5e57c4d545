package logbuf

import (
	"fmt"
	"math"
	"testing"
)

const benchTermLength = 64 << 20 // Aeron's IPC default

// BenchmarkTryClaimCommit claims, touches and commits one message per op,
// with no reader (the limit is lifted), through term rotations.
func BenchmarkTryClaimCommit(b *testing.B) {
	for _, size := range []int{1376, 65472} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := mustNew(b, benchTermLength, size+HeaderLength, 0)
			p := unlimited(l.Publication())
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c, pos, err := p.TryClaim(size)
				if err != nil || pos < 0 {
					b.Fatal(pos, err)
				}
				buf := c.Buffer()
				buf[0], buf[len(buf)-1] = 1, 2
				c.Commit()
			}
		})
	}
}

// BenchmarkOffer copies a payload into each claim.
func BenchmarkOffer(b *testing.B) {
	for _, size := range []int{1376, 65472} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := mustNew(b, benchTermLength, size+HeaderLength, 0)
			p := unlimited(l.Publication())
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if pos, err := p.Offer(payload); err != nil || pos < 0 {
					b.Fatal(pos, err)
				}
			}
		})
	}
}

// benchRead measures one reader op per fragment. The log is filled once
// through a rotation (1.25 terms), then read over and over from position 0,
// so the reads cross the padding frame and the term boundary.
func benchRead(b *testing.B, size int, read func(img *Image, limit int) int) {
	l := mustNew(b, benchTermLength, max(size+HeaderLength, DefaultMTU), 0)
	p := unlimited(l.Publication())
	frames := 0
	for p.Position() < benchTermLength+benchTermLength/4 {
		c, _, err := p.TryClaim(size)
		if err != nil {
			b.Fatal(err)
		}
		c.Commit()
		frames++
	}
	img := l.ImageAt(0)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(frames, b.N-done)
		for got := 0; got < n; {
			got += read(img, n-got)
		}
		done += n
		if n == frames {
			img.position.Store(0)
		} else {
			break
		}
	}
}

func BenchmarkPoll(b *testing.B) {
	for _, size := range []int{1376, 65472} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			var sum int
			handler := func(buf []byte, off, length int, hdr Header) { sum += int(buf[off]) }
			benchRead(b, size, func(img *Image, limit int) int { return img.Poll(handler, limit) })
			_ = sum
		})
	}
}

func BenchmarkControlledPoll(b *testing.B) {
	b.Run("size=1376", func(b *testing.B) {
		handler := func(buf []byte, off, length int, hdr Header) Action { return Continue }
		benchRead(b, 1376, func(img *Image, limit int) int { return img.ControlledPoll(handler, limit) })
	})
}

func BenchmarkDrain(b *testing.B) {
	for _, size := range []int{1376, 65472} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			benchRead(b, size, func(img *Image, limit int) int { return img.Drain(limit) })
		})
	}
}

// BenchmarkClaimAndDrain is the snapshot shape: one writer claiming and
// committing, a drain-only reader releasing it every half term, one
// goroutine.
func BenchmarkClaimAndDrain(b *testing.B) {
	for _, size := range []int{1376, 65472} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l := mustNew(b, benchTermLength, size+HeaderLength, 0)
			p := l.Publication()
			img := l.Image()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for {
					c, pos, err := p.TryClaim(size)
					if err != nil {
						b.Fatal(err)
					}
					if pos > 0 {
						c.Commit()
						break
					}
					img.Drain(math.MaxInt)
					p.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
				}
			}
		})
	}
}
