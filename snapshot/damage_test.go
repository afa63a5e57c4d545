package snapshot

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// damageStream is a small stream with every record kind and two batches
// of orders.
func damageStream(t testing.TB) [][]byte {
	t.Helper()
	no, _ := BatchCapacity(1408 - 32)
	e := buildEngine(t, bookSpec{instruments: 2, sources: 2, orders: no + 3, triggers: 3})
	frags := capture(t, e, 64<<10, 1408)
	if _, err := loadFrags(frags); err != nil {
		t.Fatal(err)
	}
	return frags
}

func cloneFrags(f [][]byte) [][]byte {
	out := make([][]byte, len(f))
	for i := range f {
		out[i] = slices.Clone(f[i])
	}
	return out
}

func wantErr(t *testing.T, what string, frags [][]byte, substr string) {
	t.Helper()
	err := mustFail(t, what, frags)
	if !strings.Contains(err.Error(), substr) {
		t.Fatalf("%s: error %q does not mention %q", what, err, substr)
	}
}

func TestDamagedFragments(t *testing.T) {
	frags := damageStream(t)
	n := len(frags)
	for i := range n {
		mustFail(t, "drop", slices.Delete(cloneFrags(frags), i, i+1))
		mustFail(t, "duplicate", slices.Insert(cloneFrags(frags), i, slices.Clone(frags[i])))
		if i+1 < n {
			f := cloneFrags(frags)
			f[i], f[i+1] = f[i+1], f[i]
			mustFail(t, "swap", f)
		}
		wantErr(t, "truncate stream", cloneFrags(frags)[:i], "snapshot ended before END")
	}
	wantErr(t, "BEGIN missing", cloneFrags(frags)[1:], "where SnapshotMarker BEGIN is expected")
	wantErr(t, "END missing", cloneFrags(frags)[:n-1], "snapshot ended before END")
	wantErr(t, "fragment after END", append(cloneFrags(frags), frags[2]), "after SnapshotMarker END")
}

// TestBitFlips flips each bit of the low and high end of every byte of
// every fragment: each must be caught, by a check or by the checksum.
func TestBitFlips(t *testing.T) {
	frags := damageStream(t)
	for i := range frags {
		for j := range frags[i] {
			for _, bit := range []byte{0x01, 0x80} {
				f := slices.Clone(frags)
				f[i] = slices.Clone(frags[i])
				f[i][j] ^= bit
				if _, err := loadFrags(f); err == nil {
					t.Fatalf("fragment %d byte %d bit %#x: flip not detected", i, j, bit)
				}
			}
		}
	}
}

func TestChecksumCatchesEntry(t *testing.T) {
	frags := damageStream(t)
	for i, f := range frags {
		if binary.LittleEndian.Uint16(f[2:]) == snapshotsbe.OrdersTemplateID {
			g := cloneFrags(frags)
			// The quantity of entry 2: a valid value, only the checksum
			// (or the state hash) can tell.
			g[i][batchHeader+2*orderLength+24]++
			wantErr(t, "entry", g, "checksum")
			return
		}
	}
	t.Fatal("no Orders message")
}

// TestFullClaimLoads: snapshots written before the last batch of a kind
// was claimed for its entries alone have it at full size, zeros after the
// entries; they load to the same engine.
func TestFullClaimLoads(t *testing.T) {
	g := geometries[1]
	e := buildEngine(t, bookSpec{instruments: 3, sources: 2, orders: 50, triggers: 7})
	frags := capture(t, e, g.term, g.mtu)
	no, nt := BatchCapacity(g.mtu - 32)
	padded := 0
	for i, f := range frags {
		switch binary.LittleEndian.Uint16(f[2:]) {
		case snapshotsbe.OrdersTemplateID:
			frags[i] = append(f, make([]byte, batchHeader+no*orderLength-len(f))...)
			padded++
		case snapshotsbe.TriggersTemplateID:
			frags[i] = append(f, make([]byte, batchHeader+nt*triggerLength-len(f))...)
			padded++
		}
	}
	if padded != 2 {
		t.Fatalf("%d batches padded, want one of each kind", padded)
	}
	got, err := loadFrags(frags)
	if err != nil {
		t.Fatal(err)
	}
	sameEngine(t, e, got)
}

// TestBadMessages damages one message at a time in ways a reader must name.
func TestBadMessages(t *testing.T) {
	frags := damageStream(t)
	find := func(template uint16) int { // the last such message
		for i := len(frags) - 1; i >= 0; i-- {
			f := frags[i]
			if binary.LittleEndian.Uint16(f[2:]) == template && binary.LittleEndian.Uint16(f[4:]) == snapshotsbe.SchemaID {
				return i
			}
		}
		t.Fatalf("no template %d", template)
		return -1
	}
	mark, orders, end := find(snapshotsbe.MarkTemplateID), find(snapshotsbe.OrdersTemplateID), find(snapshotsbe.EndTemplateID)
	for _, c := range []struct {
		what   string
		i      int
		damage func([]byte) []byte
		want   string
	}{
		{"unknown template", mark, func(b []byte) []byte { b[2] = 42; return b }, "unknown template 42"},
		{"wrong schema", mark, func(b []byte) []byte { b[4] = 1; return b }, "schema"},
		{"newer version", mark, func(b []byte) []byte { b[6] = 2; return b }, "schema version 2 not supported"},
		{"short", mark, func(b []byte) []byte { return b[:20] }, "short message"},
		{"no header", mark, func(b []byte) []byte { return b[:5] }, "no SBE header"},
		{"trailing garbage", mark, func(b []byte) []byte { return append(b, 1, 2, 3) }, "trailing garbage"},
		{"garbage after entries", orders, func(b []byte) []byte { return append(b, 0, 0, 9) }, "trailing garbage"},
		{"count past frame", orders, func(b []byte) []byte { b[10], b[11] = 0xff, 0x7f; return b }, "short message"},
		{"empty batch", orders, func(b []byte) []byte { b[10], b[11] = 0, 0; return b }, "empty batch"},
		{"entry length", orders, func(b []byte) []byte { b[8]++; return b }, "entry length"},
		{"end counts", end, func(b []byte) []byte { b[8+16]++; return b }, "counts"},
		{"end state hash", end, func(b []byte) []byte { b[8+32]++; return b }, "state hash"},
		{"end checksum", end, func(b []byte) []byte { b[8+40]++; return b }, "stream checksum"},
		{"begin type", 0, func(b []byte) []byte { b[8]++; return b }, "snapshot type 3"},
		{"begin app version", 0, func(b []byte) []byte { b[8+36]++; return b }, "app version"},
		{"end differs", len(frags) - 1, func(b []byte) []byte { b[8+8]++; return b }, "differs from BEGIN"},
	} {
		f := cloneFrags(frags)
		f[c.i] = c.damage(f[c.i])
		wantErr(t, c.what, f, c.want)
	}
	// The position of the fragment is named.
	f := cloneFrags(frags)
	f[mark][2] = 42
	err := mustFail(t, "position", f)
	if !strings.Contains(err.Error(), fmt.Sprintf("fragment %d (position", mark)) {
		t.Fatalf("error %q does not name fragment %d", err, mark)
	}
}

// TestBounded checks the fragment bound and the idle hook of a load.
func TestBounded(t *testing.T) {
	frags := damageStream(t)
	opts := testLoad
	opts.MaxFragments = int64(len(frags) - 1)
	if _, _, err := Load(stream.NewFrameSource(frags), opts); err == nil || !strings.Contains(err.Error(), "no END within") {
		t.Fatalf("bounded load: %v", err)
	}
	opts.MaxFragments = int64(len(frags))
	if _, _, err := Load(stream.NewFrameSource(frags), opts); err != nil {
		t.Fatal(err)
	}
	calls := 0
	opts = testLoad
	opts.IdlePolls = 5
	opts.Idle = func() error { calls++; return nil }
	if _, _, err := Load(stream.NewFrameSource(frags[:3]), opts); err == nil || calls != 4 {
		t.Fatalf("idle load: %v after %d idle calls", err, calls)
	}
	opts = testLoad
	opts.AppVersion++
	if _, _, err := Load(stream.NewFrameSource(frags), opts); err == nil {
		t.Fatal("wrong app version accepted")
	}
}
