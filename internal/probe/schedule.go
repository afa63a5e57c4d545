// Package probe drives a fixed-rate stream of probe requests and records
// their latency with coordinated-omission correction.
//
// Every probe i has an intended send time Start + i/Rate that depends only on
// i, never on when earlier probes were actually sent. Latency is measured from
// that intended time, so a stall in the system under test (or in the sender)
// is charged to every probe that should have been sent during the stall, not
// just to the one probe that observed it. This is the "coordinated omission"
// correction described by Gil Tene for HdrHistogram.
package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"time"
)

// DefaultSpin is the busy-wait window used when Schedule.Spin is zero.
const DefaultSpin = 50 * time.Microsecond

// SendFunc sends probe i whose intended send time is intended. It is called
// from the goroutine running Schedule.Run, one probe at a time, in index
// order. A non-nil error stops the run.
type SendFunc func(i int, intended time.Time) error

// Schedule describes a fixed-rate probe stream: probe i is intended to be
// sent at Start + i/Rate.
type Schedule struct {
	// Rate is the number of probes per second; it must be positive and finite.
	Rate float64
	// Start is the intended send time of probe 0. It should carry a monotonic
	// clock reading (i.e. come from time.Now) so that latencies are immune to
	// wall-clock steps.
	Start time.Time
	// Spin is how long before each intended time Run stops sleeping and
	// busy-waits (yielding the processor) for better send-time precision.
	// Zero means DefaultSpin; a negative value disables spinning. Spinning
	// occupies a core; on a machine with few cores shared with the system
	// under test, consider disabling it (late sends are still measured
	// correctly, from the intended time).
	Spin time.Duration
}

// Validate reports whether the schedule can be run.
func (s Schedule) Validate() error {
	if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
		return fmt.Errorf("probe: rate must be positive and finite, got %v", s.Rate)
	}
	if s.Start.IsZero() {
		return errors.New("probe: schedule start time is not set")
	}
	return nil
}

// Offset returns the intended send time of probe i relative to Start, i/Rate,
// rounded to the nanosecond (halves up). It is computed from i directly, so
// it does not accumulate rounding drift over long runs: for integer rates it
// is exact (128-bit integer arithmetic); for fractional rates it is computed
// in float64, within a nanosecond for offsets up to about 100 days.
func (s Schedule) Offset(i int) time.Duration {
	if i >= 0 && s.Rate >= 1 && s.Rate <= 1<<40 && s.Rate == math.Trunc(s.Rate) {
		// round(i*1e9/R) = floor((2*i*1e9 + R) / (2R))
		r := uint64(s.Rate)
		hi, lo := bits.Mul64(uint64(i), 2e9)
		lo, carry := bits.Add64(lo, r, 0)
		hi += carry
		if hi < 2*r { // quotient fits in 64 bits
			q, _ := bits.Div64(hi, lo, 2*r)
			if q <= math.MaxInt64 {
				return time.Duration(q)
			}
		}
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(float64(i) * 1e9 / s.Rate))
}

// Intended returns the intended send time of probe i: Start + i/Rate.
func (s Schedule) Intended(i int) time.Time {
	return s.Start.Add(s.Offset(i))
}

// Count returns the number of probes whose intended offset lies in [0, d),
// that is the number of probes a run of duration d sends.
func (s Schedule) Count(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	n := int(math.Ceil(float64(d) * s.Rate / 1e9))
	// Correct for floating-point rounding at the boundary.
	for n > 0 && s.Offset(n-1) >= d {
		n--
	}
	for s.Offset(n) < d {
		n++
	}
	return n
}

// firstAtOrAfter returns the smallest i >= 0 whose intended offset is >= d.
func (s Schedule) firstAtOrAfter(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return s.Count(d)
}

// Run sends probes 0..n-1 by calling send(i, Intended(i)) for each in order.
// It waits until each probe's intended time (sleeping, then busy-waiting for
// the last Spin) and, when it is behind schedule, sends immediately without
// skipping any probe, so latency measured from the intended time includes
// the time the probe spent waiting to be sent.
//
// Run returns the number of probes for which send returned nil, and the first
// error: from Validate, from send (the failing probe is not counted), or
// ctx.Err() if the context ends first.
func (s Schedule) Run(ctx context.Context, n int, send SendFunc) (sent int, err error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("probe: negative probe count %d", n)
	}
	spin := s.Spin
	if spin == 0 {
		spin = DefaultSpin
	} else if spin < 0 {
		spin = 0
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	done := ctx.Done()
	for i := 0; i < n; i++ {
		intended := s.Intended(i)
		if wait := time.Until(intended); wait > 0 {
			if sleep := wait - spin; sleep > 0 {
				if timer == nil {
					timer = time.NewTimer(sleep)
				} else {
					timer.Reset(sleep)
				}
				select {
				case <-timer.C:
				case <-done:
					return sent, ctx.Err()
				}
			}
			for time.Now().Before(intended) {
				runtime.Gosched()
			}
		}
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		if err := send(i, intended); err != nil {
			return sent, fmt.Errorf("probe %d: %w", i, err)
		}
		sent++
	}
	return sent, nil
}

// RunFor is Run for the probes whose intended offset lies in [0, d), i.e.
// Count(d) probes.
func (s Schedule) RunFor(ctx context.Context, d time.Duration, send SendFunc) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	return s.Run(ctx, s.Count(d), send)
}
