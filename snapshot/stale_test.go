package snapshot

import (
	"fmt"
	"testing"

	"github.com/matchlog/matchlog/internal/stream"
)

// TestTakeOverStaleLog: the publisher claims without zeroing (the log
// buffer's TryClaimOverwrite), so it must write every byte of every claim.
// Each take here goes into a log whose partitions hold 0x5a everywhere but
// the header slot at the tail, as a log reused for term after term holds
// older bytes, and must be byte-identical to the take into a new log:
// linear, parallel with claims ahead, and parallel copying, twice each on
// the same log.
func TestTakeOverStaleLog(t *testing.T) {
	for _, g := range geometries {
		no, nt := BatchCapacity(g.mtu - 32)
		for _, s := range []bookSpec{
			{instruments: 2, sources: 3, orders: 1, triggers: 1},
			{instruments: 7, sources: 5, orders: 2*no + 1, triggers: nt + 1},
			{instruments: 5, sources: 4, orders: 3001, triggers: 30},
		} {
			e := buildEngine(t, s)
			f := e.Clone()
			want := capture(t, e, g.term, g.mtu)
			for _, mode := range []string{"linear", "ahead", "copying"} {
				t.Run(fmt.Sprintf("mtu%d/orders%d/%s", g.mtu, s.orders, mode), func(t *testing.T) {
					l, pub, img := newLog(t, g.term, g.mtu)
					for i := range 3 {
						b := l.Term(i)
						if i == 0 {
							b = b[32:] // the header slot at the tail, position 0
						}
						for j := range b {
							b[j] = 0x5a
						}
					}
					var c stream.Claimer = &stream.PublicationClaimer{Pub: pub}
					if mode == "copying" {
						c = claimOnly{c}
					}
					p, err := NewPublisher(c, nil)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := c.(stream.Overwriter); ok != (p.ow != nil) || mode != "copying" && p.ow == nil {
						t.Fatalf("claimer %T: the publisher's overwriting claims %v", c, p.ow)
					}
					if mode != "linear" {
						p.ParallelMin = 0
						if err := p.StartWorkers(2); err != nil {
							t.Fatal(err)
						}
						defer p.Close()
					}
					for range 2 {
						got, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
						if err != nil {
							t.Fatal(err)
						}
						sameFrags(t, want, got)
						if mode == "ahead" && !p.par.direct || mode == "copying" && p.par.direct {
							t.Fatalf("%s take: direct %v", mode, p.par.direct)
						}
					}
				})
			}
		}
	}
}
