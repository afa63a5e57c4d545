package logbuf

import (
	"bytes"
	"testing"
)

// TestPrefaultWhileWriting: a publication writes while Prefault's goroutine
// faults the log in, and every frame reads back as written.
func TestPrefaultWhileWriting(t *testing.T) {
	l, err := New(4<<20, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	wait := l.Prefault()
	pub, img := l.Publication(), l.Image()
	pub.SetPositionLimit(int64(l.TermWindowLength()))
	const frames = 1000
	for i := range frames {
		if pos, err := pub.Offer(bytes.Repeat([]byte{byte(i%251 + 1)}, 1000)); err != nil || pos < 0 {
			t.Fatalf("offer %d: %d, %v", i, pos, err)
		}
	}
	wait()
	i := 0
	img.Poll(func(buf []byte, off, n int, _ Header) {
		if !bytes.Equal(buf[off:off+n], bytes.Repeat([]byte{byte(i%251 + 1)}, 1000)) {
			t.Fatalf("frame %d differs after Prefault", i)
		}
		i++
	}, frames+1)
	if i != frames {
		t.Fatalf("read %d frames, want %d", i, frames)
	}
}
