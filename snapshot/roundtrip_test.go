package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// geometry is a log geometry to test at: the MTU and a term length whose
// max message length (term/8) admits it.
type geometry struct{ mtu, term int }

var geometries = []geometry{{1408, 64 << 10}, {65504, 512 << 10}}

// TestRoundTrip takes books at batch-boundary sizes through a log and
// restores them: equal state hash, equal record stream, and a second take
// of the restored engine byte-identical to the first.
func TestRoundTrip(t *testing.T) {
	for _, g := range geometries {
		no, nt := BatchCapacity(g.mtu - 32)
		for _, s := range []bookSpec{
			{},
			{instruments: 1},
			{instruments: 1, sources: 1, orders: 1},
			{instruments: 1, sources: 1, triggers: 1},
			{instruments: 2, sources: 3, orders: 1, triggers: 1},
			{instruments: 3, sources: 2, orders: no - 1, triggers: nt - 1},
			{instruments: 5, sources: 4, orders: no, triggers: nt},
			{instruments: 7, sources: 5, orders: no + 1, triggers: nt + 1},
			{instruments: 11, sources: 9, orders: 2 * no, triggers: 2 * nt},
			{instruments: 40, sources: 30, orders: 2*no + 1, triggers: 3},
		} {
			t.Run(fmt.Sprintf("mtu%d/%+v", g.mtu, s), func(t *testing.T) {
				e := buildEngine(t, s)
				frags := capture(t, e, g.term, g.mtu)
				checkFraming(t, frags, g.mtu-32, s)
				got, err := loadFrags(frags)
				if err != nil {
					t.Fatal(err)
				}
				sameEngine(t, e, got)
				again := capture(t, got, g.term, g.mtu)
				if len(again) != len(frags) {
					t.Fatalf("retake: %d fragments, want %d", len(again), len(frags))
				}
				for i := range frags {
					if !bytes.Equal(frags[i], again[i]) {
						t.Fatalf("retake: fragment %d differs", i)
					}
				}
			})
		}
	}
}

// checkFraming checks the stream's shape: markers around it, one message
// per record kind change, batches claimed at full size with their counts
// telling how many entries are valid.
func checkFraming(t *testing.T, frags [][]byte, maxPayload int, s bookSpec) {
	t.Helper()
	no, nt := BatchCapacity(maxPayload)
	wantBatches := func(n, per int) int { return (n + per - 1) / per }
	var orders, triggers, nOrd, nTrg int
	for _, f := range frags {
		switch binary.LittleEndian.Uint16(f[2:]) {
		case snapshotsbe.OrdersTemplateID:
			if len(f) != batchHeader+no*orderLength {
				t.Fatalf("Orders frame of %d bytes, want the full claim %d", len(f), batchHeader+no*orderLength)
			}
			orders += int(binary.LittleEndian.Uint16(f[10:]))
			nOrd++
		case snapshotsbe.TriggersTemplateID:
			if len(f) != batchHeader+nt*triggerLength {
				t.Fatalf("Triggers frame of %d bytes, want the full claim %d", len(f), batchHeader+nt*triggerLength)
			}
			triggers += int(binary.LittleEndian.Uint16(f[10:]))
			nTrg++
		}
	}
	if orders != s.orders || triggers != s.triggers || nOrd != wantBatches(s.orders, no) || nTrg != wantBatches(s.triggers, nt) {
		t.Fatalf("%d orders in %d batches, %d triggers in %d; want %d (%d per batch) and %d (%d per batch)",
			orders, nOrd, triggers, nTrg, s.orders, no, s.triggers, nt)
	}
	if n := len(frags); binary.LittleEndian.Uint16(frags[0][2:]) != 100 || binary.LittleEndian.Uint16(frags[n-1][2:]) != 100 {
		t.Fatal("stream not framed by SnapshotMarker")
	}
}
