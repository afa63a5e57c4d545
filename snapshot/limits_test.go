package snapshot

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/stream"
)

// TestPastFramingLimits streams books larger than the MTU, the max message
// length (term/8) and several whole terms through one log while a reader
// on another goroutine restores from the image: the publisher is held back
// by the position limit and its idle function moves the limit as the
// reader goes, so the log rotates through its terms many times.
func TestPastFramingLimits(t *testing.T) {
	for _, c := range []struct {
		mtu, term int
		spec      bookSpec
	}{
		// 64 KiB terms, MTU 8 KiB = max message length: ~5 terms of orders.
		{8192, 64 << 10, bookSpec{instruments: 8, sources: 6, orders: 7000, triggers: 500}},
		// MTU 1408 over 64 KiB terms: ~1,400 frames, ~5 terms.
		{1408, 64 << 10, bookSpec{instruments: 3, sources: 2, orders: 6000, triggers: 300}},
		// MTU 65504 = max message length of a 512 KiB term: ~3 terms.
		{65504, 512 << 10, bookSpec{instruments: 8, sources: 4, orders: 40000, triggers: 2000}},
	} {
		t.Run(fmt.Sprintf("mtu%d/term%d", c.mtu, c.term), func(t *testing.T) {
			e := buildEngine(t, c.spec)
			wire := int64(c.spec.orders*orderLength + c.spec.triggers*triggerLength)
			if wire < 3*int64(c.term) {
				t.Fatalf("book of %d wire bytes does not exceed the log", wire)
			}
			l, pub, img := newLog(t, c.term, c.mtu)
			var done atomic.Bool
			type result struct {
				e   *engine.Engine
				err error
			}
			res := make(chan result, 1)
			go func() {
				after := 0
				opts := testLoad
				opts.IdlePolls = 1 << 30
				opts.Idle = func() error {
					if done.Load() {
						if after++; after > 2 {
							return errors.New("publisher finished, stream incomplete")
						}
					}
					runtime.Gosched()
					return nil
				}
				got, _, err := Load(stream.NewImageSource(img), opts)
				res <- result{got, err}
			}()
			backPressured := 0
			p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error {
				backPressured++
				pub.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
				runtime.Gosched()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Take(e, testMarker)
			done.Store(true)
			r := <-res
			if err != nil {
				t.Fatal(err)
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if backPressured == 0 {
				t.Fatal("never back-pressured")
			}
			if pub.Position() < 3*int64(c.term) {
				t.Fatalf("position %d: the log did not rotate through its terms", pub.Position())
			}
			sameEngine(t, e, r.e)
			t.Logf("%d bytes through the log, %d back-pressured claims", pub.Position(), backPressured)
		})
	}
}

// TestIdleError checks that an idle function's error aborts a
// back-pressured take, and that a publication error fails it.
func TestIdleError(t *testing.T) {
	e := buildEngine(t, bookSpec{instruments: 2, sources: 1, orders: 5000})
	_, pub, _ := newLog(t, 64<<10, 1408)
	stop := errors.New("host shutting down")
	p, _ := NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error { return stop })
	if err := p.Take(e, testMarker); !errors.Is(err, stop) || !errors.Is(err, ErrPublish) {
		t.Fatalf("take: %v, want the idle error", err)
	}
	_, pub, _ = newLog(t, 64<<10, 1408)
	p, _ = NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
	pub.Close()
	if err := p.Take(e, testMarker); err == nil {
		t.Fatal("take on a closed publication succeeded")
	}
}
