package logbuf

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestConcurrentProducerConsumer runs a writer goroutine and a reader
// goroutine over one log through many term rotations, the writer held back
// by the reader's position, and checks every payload arrives once, in
// order, through both kinds of claim over partitions that hold the bytes
// of older terms at other frame boundaries. Run it with -race: the frame length word and positions are the
// only synchronisation.
func TestConcurrentProducerConsumer(t *testing.T) {
	const T = 64 << 10
	messages := 50000 // about 550 terms at an average of 720 bytes
	if testing.Short() || raceEnabled {
		messages = 20000
	}
	for _, mode := range []string{"poll", "controlled", "drain"} {
		t.Run(mode, func(t *testing.T) {
			l := mustNew(t, T, 1408, -1000)
			p := l.Publication()
			img := l.Image()
			deadline := time.Now().Add(20 * time.Second)
			var wg sync.WaitGroup
			var writeErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := uint64(12345)
				aborted := -1
				for seq := 0; seq < messages; {
					if time.Now().After(deadline) {
						writeErr = errTimeout
						return
					}
					rng = rng*6364136223846793005 + 1442695040888963407
					n := int(rng>>33) % 1377
					p.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
					// Odd messages take the claim that leaves the
					// partition's old bytes for the writer to cover.
					claim := p.TryClaim
					if seq%2 == 1 {
						claim = p.TryClaimOverwrite
					}
					c, pos, err := claim(n)
					if err != nil {
						writeErr = err
						return
					}
					if pos == BackPressured {
						runtime.Gosched()
						continue
					}
					if seq%2 == 0 && !allZero(c.Buffer()) {
						writeErr = errors.New("TryClaim's payload is not zeroed")
						return
					}
					fill(c.Buffer(), uint64(seq))
					if seq%97 == 0 && aborted != seq {
						c.Abort() // readers must skip it; re-send the same seq
						aborted = seq
						continue
					}
					c.Commit()
					seq++
				}
			}()
			var read uint64
			var bad bool
			var lastPos int64
			onFragment := func(buf []byte, off, length int, hdr Header) {
				if !check(buf[off:off+length], read) || hdr.Position() <= lastPos || hdr.Type() != TypeData || hdr.ReservedValue() != 0 {
					bad = true
				}
				lastPos = hdr.Position()
				read++
			}
			for read < uint64(messages) && !bad && time.Now().Before(deadline) {
				var n int
				switch mode {
				case "poll":
					n = img.Poll(onFragment, 10)
				case "drain":
					n = img.Drain(10)
					read += uint64(n)
				default:
					n = img.ControlledPoll(func(buf []byte, off, length int, hdr Header) Action {
						onFragment(buf, off, length, hdr)
						if read%5 == 0 {
							return Commit
						}
						return Continue
					}, 10)
				}
				if n == 0 {
					runtime.Gosched()
				}
			}
			wg.Wait()
			if writeErr != nil {
				t.Fatal(writeErr)
			}
			if bad {
				t.Fatalf("bad fragment %d", read)
			}
			if read != uint64(messages) {
				t.Fatalf("read %d of %d", read, messages)
			}
			if img.Position() != p.Position() {
				t.Fatalf("image %d publication %d", img.Position(), p.Position())
			}
			if terms := p.Position() / T; terms < 30 {
				t.Fatalf("only %d terms", terms)
			}
		})
	}
}
