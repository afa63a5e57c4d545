//go:build !amd64

package bench

import "time"

var epoch = time.Now()

// Ticks reads the cheap clock: the monotonic clock in nanoseconds on this
// architecture. Convert differences with [TicksPerNs].
func Ticks() uint64 { return uint64(time.Since(epoch)) }

const tickClock = "monotonic"
