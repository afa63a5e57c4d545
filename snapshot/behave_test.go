package snapshot

import (
	"errors"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/stream"
)

// TestRestoredBehaves continues the original and the restored engine with
// the same commands (trades through several levels, cancels, a mark price
// that fires triggers) and compares their events and state hashes.
func TestRestoredBehaves(t *testing.T) {
	e := buildEngine(t, bookSpec{instruments: 3, sources: 2, orders: 200, triggers: 40})
	got, err := loadFrags(capture(t, e, 64<<10, 1408))
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	kinds := map[engine.EventKind]int{}
	for i := range 300 {
		inst := uint32((i%3 + 1) * 3)
		seq++
		c := engine.Command{Source: 999, Seq: seq, Instrument: inst}
		switch i % 4 {
		case 0: // sweeps the asks and sets the last trade
			c.Kind, c.OrderID, c.Account, c.Side, c.Type, c.TIF, c.Price, c.Qty =
				engine.CmdNewOrder, uint64(1_000_000+i), 77, engine.Buy, engine.Limit, engine.IOC, 2400, 150
		case 1: // sweeps the bids
			c.Kind, c.OrderID, c.Account, c.Side, c.Type, c.TIF, c.Price, c.Qty =
				engine.CmdNewOrder, uint64(1_000_000+i), 78, engine.Sell, engine.Limit, engine.IOC, 600, 150
		case 2:
			c.Kind, c.OrderID = engine.CmdCancel, uint64(10+i)
		case 3:
			c.Kind, c.Price = engine.CmdMarkPrice, int64(110+i%30) // fires sell stops
		}
		want, have := e.Apply(&c), got.Apply(&c)
		for _, ev := range want {
			kinds[ev.Kind]++
		}
		if w, h := enginetest.FormatEvents(want, ""), enginetest.FormatEvents(have, ""); w != h {
			t.Fatalf("command %d %s:\noriginal:\n%srestored:\n%s", i, enginetest.FormatCommand(&c), w, h)
		}
	}
	if kinds[engine.EvTrade] == 0 || kinds[engine.EvTriggerFired] == 0 || kinds[engine.EvCancelled] == 0 {
		t.Fatalf("commands too tame: %v", kinds)
	}
	sameEngine(t, e, got)
}

// failingClaimer fails every claim after its first ok ones.
type failingClaimer struct {
	stream.PublicationClaimer
	ok int
}

var errPublication = errors.New("publication gone")

func (f *failingClaimer) TryClaim(n int) ([]byte, int64, error) {
	return f.fail(n, f.PublicationClaimer.TryClaim)
}

// TryClaimOverwrite is the claim the publisher makes when it can.
func (f *failingClaimer) TryClaimOverwrite(n int) ([]byte, int64, error) {
	return f.fail(n, f.PublicationClaimer.TryClaimOverwrite)
}

func (f *failingClaimer) fail(n int, claim func(int) ([]byte, int64, error)) ([]byte, int64, error) {
	if f.ok == 0 {
		return nil, 0, errPublication
	}
	f.ok--
	return claim(n)
}

// TestPublicationError fails the publication at every claim of a take:
// the take fails with the error, no claim is left open, and what was
// committed does not load.
func TestPublicationError(t *testing.T) {
	e := buildEngine(t, bookSpec{instruments: 2, sources: 2, orders: 70, triggers: 30})
	for k := 0; ; k++ {
		_, pub, img := newLog(t, 64<<10, 1408)
		fc := &failingClaimer{PublicationClaimer: stream.PublicationClaimer{Pub: pub}, ok: k}
		p, err := NewPublisher(fc, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Take(e, testMarker)
		if err == nil {
			if k < 5 {
				t.Fatalf("take with %d claims succeeded", k)
			}
			return // every claim succeeded: k is past the stream's claims
		}
		if !errors.Is(err, errPublication) || !errors.Is(err, ErrPublish) {
			t.Fatalf("claim %d: %v", k, err)
		}
		if _, _, err := Load(stream.NewImageSource(img), testLoad); err == nil {
			t.Fatalf("claim %d: the stream of a failed take loaded", k)
		}
		// The next take on the same publisher starts clean.
		fc.ok = 1 << 30
		if err := p.Take(e, testMarker); err != nil {
			t.Fatalf("retake after failure at claim %d: %v", k, err)
		}
	}
}
