package aeroncheck

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/matchlog/matchlog/internal/fixtures"
)

// fixtureDir is shared/fixtures/aeron/single-node-1: the cluster and archive
// directories of a stopped single-node Aeron 1.48 cluster (see its README).
func fixtureDir(t testing.TB) string {
	t.Helper()
	return fixtures.AeronSingleNode(t)
}

// copyFixture copies the named fixture files (relative to the fixture dir)
// into a temporary directory and returns their contents, read from the copy:
// the fixture itself stays read-only and untouched.
func copyFixture(t testing.TB, names ...string) map[string][]byte {
	t.Helper()
	src := fixtureDir(t)
	dst := t.TempDir()
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.Base(n))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if out[n], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Aeron data frame header (aeron-formats.md 1.1).
const (
	frameHeaderLength = 32
	frameAlignment    = 32
	frameTypePad      = 0
	frameTypeData     = 1
	frameFlagsWhole   = 0xC0 // BEGIN | END
)

type frame struct {
	fileOffset int
	flags      uint8
	typ        uint16
	termOffset int32
	sessionID  int32
	streamID   int32
	termID     int32
	payload    []byte
}

// frames walks the frames of one segment file from offset start until a
// frame length <= 0, skipping nothing: PAD frames are returned too.
func frames(t testing.TB, seg []byte, start int) []frame {
	t.Helper()
	var out []frame
	le := binary.LittleEndian
	for off := start; off+frameHeaderLength <= len(seg); {
		n := int32(le.Uint32(seg[off:]))
		if n <= 0 {
			break
		}
		f := frame{
			fileOffset: off,
			flags:      seg[off+5],
			typ:        le.Uint16(seg[off+6:]),
			termOffset: int32(le.Uint32(seg[off+8:])),
			sessionID:  int32(le.Uint32(seg[off+12:])),
			streamID:   int32(le.Uint32(seg[off+16:])),
			termID:     int32(le.Uint32(seg[off+20:])),
		}
		if f.typ != frameTypePad {
			if off+int(n) > len(seg) || n < frameHeaderLength {
				t.Fatalf("frame at %d: length %d runs past the segment (%d bytes)", off, n, len(seg))
			}
			f.payload = seg[off+frameHeaderLength : off+int(n)]
		}
		out = append(out, f)
		off += (int(n) + frameAlignment - 1) &^ (frameAlignment - 1)
	}
	return out
}
