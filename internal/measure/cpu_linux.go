package measure

import (
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPU returns the CPU time the process has used so far, all its
// threads, user and system (CLOCK_PROCESS_CPUTIME_ID, to the nanosecond);
// ok is false where the clock cannot be read.
func ProcessCPU() (d time.Duration, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
