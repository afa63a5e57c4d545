package logbuf

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestRecycleIsNew fills a log over several rotations (so every partition
// has been written, cleaned and written again, and the last term stops in
// the middle), recycles it and requires the bytes of a new log; then the
// recycled log carries frames like a new one.
func TestRecycleIsNew(t *testing.T) {
	const T = 64 << 10
	for _, stop := range []int{0, 1, 700, 3*T/1400 + 5, 11*T/1400 + 3} {
		l := mustNew(t, T, 1408, 1000)
		p := l.Publication()
		img := l.Image()
		for i := 0; i < stop; i++ {
			c, pos, err := p.TryClaim(1000 + i%300)
			if err != nil {
				t.Fatal(err)
			}
			if pos < 0 {
				img.Drain(1 << 30)
				p.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
				i--
				continue
			}
			b := c.Buffer()
			for j := range b {
				b[j] = byte(i + j | 1)
			}
			c.Commit()
		}
		img.Drain(1 << 30)
		r, err := Recycle(l, 4096, 7, 8, 9)
		if err != nil {
			t.Fatal(err)
		}
		want, err := New(T, 4096, 7, 8, 9)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Bytes(), want.Bytes()) {
			t.Fatalf("after %d frames: the recycled log differs from a new one", stop)
		}
		if r.MTU() != 4096 || r.SessionID() != 8 || r.StreamID() != 9 || r.InitialTermID() != 7 || r.TermLength() != T {
			t.Fatalf("recycled log's parameters: mtu %d session %d stream %d initial term %d term %d", r.MTU(), r.SessionID(), r.StreamID(), r.InitialTermID(), r.TermLength())
		}
		if l.Bytes() != nil {
			t.Fatal("the old log still reaches the memory")
		}
		rp, ri := r.Publication(), r.Image()
		if _, err := rp.Offer([]byte("after")); err != nil {
			t.Fatal(err)
		}
		var got []byte
		ri.Poll(func(buf []byte, off, n int, _ Header) { got = append(got, buf[off:off+n]...) }, 10)
		if string(got) != "after" {
			t.Fatalf("recycled log carried %q", got)
		}
	}
}

func TestRecycleRefusesMappedAndBad(t *testing.T) {
	f, err := CreateFile(filepath.Join(t.TempDir(), "x.logbuffer"), 64<<10, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Recycle(f, 1408, 0, 1, 2); err == nil {
		t.Fatal("recycled a mapped log")
	}
	if _, err := Recycle(nil, 1408, 0, 1, 2); err == nil {
		t.Fatal("recycled nil")
	}
	l := mustNew(t, 64<<10, 1408, 0)
	if _, err := Recycle(l, 1000, 0, 1, 2); err == nil {
		t.Fatal("took an MTU that is not a multiple of 32")
	}
	if l.Bytes() == nil {
		t.Fatal("a refused recycle took the log's memory")
	}
}
