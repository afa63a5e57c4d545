package bench

import (
	"slices"
	"sync"
	"time"
)

var calib struct {
	once     sync.Once
	perNs    float64
	overhead float64
}

func calibrate() {
	// Ticks against the monotonic clock over 50 ms of spinning.
	t0, c0 := time.Now(), Ticks()
	for time.Since(t0) < 50*time.Millisecond {
	}
	c1, el := Ticks(), time.Since(t0)
	calib.perNs = float64(c1-c0) / float64(el.Nanoseconds())
	// Overhead: the median of back-to-back reads.
	d := make([]uint64, 10_001)
	for i := range d {
		a := Ticks()
		d[i] = Ticks() - a
	}
	slices.Sort(d)
	calib.overhead = float64(d[len(d)/2]) / calib.perNs
}

// TicksPerNs returns the rate of [Ticks], measured once per process.
func TicksPerNs() float64 {
	calib.once.Do(calibrate)
	return calib.perNs
}

// ClockOverheadNs is the median time between two back-to-back reads of
// [Ticks]: what each per-command latency figure includes on top of the
// command.
func ClockOverheadNs() float64 {
	calib.once.Do(calibrate)
	return calib.overhead
}

// ClockName names the clock behind [Ticks].
func ClockName() string { return tickClock }
