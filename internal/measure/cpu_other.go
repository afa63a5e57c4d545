//go:build !linux

package measure

import "time"

// ProcessCPU returns the CPU time the process has used so far; ok is false
// here: only Linux's process CPU clock is read.
func ProcessCPU() (d time.Duration, ok bool) { return 0, false }
