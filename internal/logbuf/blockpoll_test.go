package logbuf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestBlockPoll publishes random messages over several terms and reads
// them back with BlockPoll at several block limits: the blocks concatenate
// to the log's bytes, never cross a term, hold a padding frame alone, and
// end on frame boundaries no later than the limit (unless one frame is
// larger than it).
func TestBlockPoll(t *testing.T) {
	for _, limit := range []int{1, 64, 1000, 4096, 64 << 10} {
		l, err := New(64<<10, 1408, 5, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		pub, img := l.Publication(), l.Image()
		rng := rand.New(rand.NewPCG(1, uint64(limit)))
		var blocks, pads int
		for round := 0; round < 40; round++ {
			for i := 0; i < 30; i++ {
				msg := make([]byte, 1+rng.IntN(1300))
				if pos, err := pub.Offer(msg); err != nil || pos < 0 {
					break
				}
			}
			for {
				pos := img.Position()
				n, err := img.BlockPoll(func(term []byte, offset, length int, position int64) error {
					if position != pos {
						t.Fatalf("block at %d, image at %d", position, pos)
					}
					if offset+length > len(term) {
						t.Fatalf("block %d+%d crosses the term", offset, length)
					}
					first := binary16(term[offset+TypeFieldOffset:])
					if first == TypePad {
						pads++
						if Align(int(loadInt32(term, offset)), FrameAlignment) != length {
							t.Fatalf("padding block of %d bytes, frame %d", length, loadInt32(term, offset))
						}
					} else {
						for o := offset; o < offset+length; {
							fl := Align(int(loadInt32(term, o)), FrameAlignment)
							if binary16(term[o+TypeFieldOffset:]) == TypePad {
								t.Fatalf("padding inside a data block at %d", o)
							}
							o += fl
							if o > offset+length {
								t.Fatalf("block ends inside a frame")
							}
						}
						if length > limit && Align(int(loadInt32(term, offset)), FrameAlignment) < length {
							t.Fatalf("block of %d bytes over the limit %d", length, limit)
						}
					}
					blocks++
					return nil
				}, limit)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if img.Position() != pos+int64(n) {
					t.Fatalf("position %d after a %d-byte block at %d", img.Position(), n, pos)
				}
			}
			if img.Position() != pub.Position() {
				t.Fatalf("limit %d: image at %d, publication at %d", limit, img.Position(), pub.Position())
			}
			pub.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
		}
		if pads == 0 || blocks == 0 {
			t.Fatalf("limit %d: %d blocks, %d padding blocks", limit, blocks, pads)
		}
	}
}

// TestBlockPollError: a handler's error leaves the position where it was.
func TestBlockPollError(t *testing.T) {
	l, _ := New(64<<10, 1408, 0, 1, 2)
	pub, img := l.Publication(), l.Image()
	if _, err := pub.Offer(bytes.Repeat([]byte{7}, 100)); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("disk full")
	if n, err := img.BlockPoll(func([]byte, int, int, int64) error { return bad }, 1<<20); n != 0 || !errors.Is(err, bad) || img.Position() != 0 {
		t.Fatalf("n %d err %v position %d", n, err, img.Position())
	}
	if n, _ := img.BlockPoll(func([]byte, int, int, int64) error { return nil }, 1<<20); n != 160 || img.Position() != 160 {
		t.Fatalf("n %d position %d", n, img.Position())
	}
}

func binary16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
