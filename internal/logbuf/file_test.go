//go:build unix

package logbuf

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestFileBackedLog(t *testing.T) {
	const T = 64 << 10
	path := filepath.Join(t.TempDir(), "1.logbuffer")
	l, err := CreateFile(path, T, 1408, 17, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateFile(path, T, 1408, 17, 3, 4); err == nil {
		t.Fatal("CreateFile over an existing file")
	}
	p := unlimited(l.Publication())
	var seq uint64
	for p.Position() < T+T/4 { // one rotation
		offer(t, p, 1000, seq)
		seq++
	}
	written := seq
	end := p.Position()
	meta := append([]byte(nil), l.MetaData()...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != 3*T+4096 || !bytes.Equal(onDisk[3*T:], meta) {
		t.Fatalf("file %d bytes, metadata differs: %v", len(onDisk), !bytes.Equal(onDisk[3*T:], meta))
	}
	if h := ReadFrameHeader(onDisk); h.FrameLength != 1032 || h.TermID != 17 || h.SessionID != 3 || h.StreamID != 4 {
		t.Fatalf("first frame on disk %+v", h)
	}

	l, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.TermLength() != T || l.MTU() != 1408 || l.InitialTermID() != 17 || l.SessionID() != 3 || l.StreamID() != 4 {
		t.Fatalf("reopened %d %d %d %d %d", l.TermLength(), l.MTU(), l.InitialTermID(), l.SessionID(), l.StreamID())
	}
	if l.TailPosition() != end {
		t.Fatalf("tail %d, want %d", l.TailPosition(), end)
	}
	p = unlimited(l.Publication())
	if p.Position() != end {
		t.Fatalf("publication resumes at %d, want %d", p.Position(), end)
	}
	offer(t, p, 1000, seq)
	seq++
	var read uint64
	img := l.ImageAt(0)
	img.Poll(func(buf []byte, off, length int, hdr Header) {
		if !check(buf[off:off+length], read) {
			t.Fatalf("payload %d", read)
		}
		read++
	}, math.MaxInt)
	if read != seq || read != written+1 || img.Position() != p.Position() {
		t.Fatalf("read %d of %d to %d", read, seq, img.Position())
	}

	// Files that are not log buffers are refused.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, make([]byte, 3*T+4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(bad); err == nil {
		t.Fatal("opened a zero file")
	}
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("opened a missing file")
	}
}
