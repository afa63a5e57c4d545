package archive

import (
	"bytes"
	"slices"
	"testing"
)

// sizeRecorder is a ReaderAt that records the length of every read.
type sizeRecorder struct {
	r     *bytes.Reader
	sizes []int
}

func (s *sizeRecorder) ReadAt(p []byte, off int64) (int, error) {
	s.sizes = append(s.sizes, len(p))
	return s.r.ReadAt(p, off)
}

// TestWindowGrows: a window's first read is 64 KiB, each later one twice
// the one before up to 1 MiB, and a first read of more than 64 KiB is as
// long as asked; the bytes are the file's.
func TestWindowGrows(t *testing.T) {
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	rec := &sizeRecorder{r: bytes.NewReader(data)}
	w := window{r: rec, size: int64(len(data))}
	for off := int64(0); off+32 <= int64(len(data)); off += 4096 {
		b, err := w.read(off, 32)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, data[off:off+32]) {
			t.Fatalf("bytes at %d differ", off)
		}
	}
	want := []int{64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 1 << 20, 1 << 20, 1 << 20}
	if !slices.Equal(rec.sizes[:len(want)], want) {
		t.Fatalf("read sizes %v, want %v first", rec.sizes, want)
	}

	rec = &sizeRecorder{r: bytes.NewReader(data)}
	w = window{r: rec, size: int64(len(data))}
	if _, err := w.read(100, 200<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := w.read(100+200<<10, 32); err != nil {
		t.Fatal(err)
	}
	if want := []int{200 << 10, 400 << 10}; !slices.Equal(rec.sizes, want) {
		t.Fatalf("read sizes %v, want %v", rec.sizes, want)
	}
}
