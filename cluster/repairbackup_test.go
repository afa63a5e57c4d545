package cluster

import (
	"bytes"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestRestoreCuts: a failed start writes back the bytes its crash repair
// cut from a segment's torn tail (a segment too large to be recorded
// whole is otherwise checked by length only, which a cut and refilled
// segment passes), and leaves the rest of the segment as it is.
func TestRestoreCuts(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("a"); err != nil {
		t.Fatal(err)
	}
	seg := make([]byte, 2<<20)
	for i := range 4096 {
		seg[i] = byte(i%251 + 1)
	}
	torn := seg[4096 : 4096+300]
	for i := range torn {
		torn[i] = byte(i%7 + 1)
	}
	orig := bytes.Clone(seg)
	// The repair: cut at 4096, refilled to the full length with zeros.
	clear(seg[4096:])
	f, err := mem.Create("a/0-0.rec")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(seg, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := &Node{fs: mem, adir: "a", cuts: []segmentCut{{segment: "0-0.rec", offset: 4096, data: bytes.Clone(orig[4096 : 4096+300])}}}
	if err := n.restoreCuts(); err != nil {
		t.Fatal(err)
	}
	f, err = mem.Open("a/0-0.rec")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(orig))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !bytes.Equal(got, orig) {
		t.Fatal("the segment after restoreCuts is not the segment as the start found it")
	}
}
