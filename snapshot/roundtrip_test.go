package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/stream"
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
// per record kind change, batches claimed at full size but for the last of
// each kind, which is exactly as long as its entries, with counts telling
// how many entries there are.
func checkFraming(t *testing.T, frags [][]byte, maxPayload int, s bookSpec) {
	t.Helper()
	no, nt := BatchCapacity(maxPayload)
	wantBatches := func(n, per int) int { return (n + per - 1) / per }
	var orders, triggers, nOrd, nTrg int
	for _, f := range frags {
		count := int(binary.LittleEndian.Uint16(f[10:]))
		switch binary.LittleEndian.Uint16(f[2:]) {
		case snapshotsbe.OrdersTemplateID:
			orders += count
			nOrd++
			if want := batchHeader + count*orderLength; len(f) != want || (orders < s.orders && count != no) {
				t.Fatalf("Orders batch %d: %d entries in %d bytes, want %d bytes and %d entries unless it is the last",
					nOrd, count, len(f), want, no)
			}
		case snapshotsbe.TriggersTemplateID:
			triggers += count
			nTrg++
			if want := batchHeader + count*triggerLength; len(f) != want || (triggers < s.triggers && count != nt) {
				t.Fatalf("Triggers batch %d: %d entries in %d bytes, want %d bytes and %d entries unless it is the last",
					nTrg, count, len(f), want, nt)
			}
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

// TestMoreThanCounted: a record stream with more resting orders or armed
// triggers than its header counted fails the take (the batches are sized
// from the counts), and no End is written.
func TestMoreThanCounted(t *testing.T) {
	g := geometries[0]
	for _, kind := range []string{"resting orders", "armed triggers"} {
		l, pub, img := newLog(t, g.term, g.mtu)
		p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
		if err != nil {
			t.Fatal(err)
		}
		frags, err := captureWith(t, p, l, pub, img, func(p *Publisher) error {
			p.Reset(testMarker)
			if err := p.OnHeader(engine.Header{Version: engine.RecordVersion, Instruments: 1, Orders: 1, Triggers: 1}); err != nil {
				return err
			}
			if err := p.OnMark(1, 1, 1, 1, 1000, 0, 0); err != nil {
				return err
			}
			orders := 1
			if kind == "resting orders" {
				orders = 2
			}
			for i := range orders {
				if err := p.OnResting(1, engine.Buy, uint64(i+1), 1, 10, 1, uint64(i+1), engine.STPNone, false); err != nil {
					return err
				}
			}
			for i := range 3 - orders {
				if err := p.OnArmedTrigger(1, engine.Buy, uint64(10+i), 1, engine.StopLimit, engine.GTC, engine.RefLastTrade,
					20, 20, 1, uint64(10+i), engine.STPNone, false); err != nil {
					return err
				}
			}
			return p.OnEnd(0, 1, 1, 1, 0)
		})
		if !errors.Is(err, ErrPublish) || !strings.Contains(err.Error(), "more "+kind+" than the header's count") {
			t.Fatalf("%s: error %v", kind, err)
		}
		for _, f := range frags {
			if binary.LittleEndian.Uint16(f[2:]) == snapshotsbe.EndTemplateID {
				t.Fatalf("%s: End written", kind)
			}
		}
	}
}
