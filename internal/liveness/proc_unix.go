//go:build unix

package liveness

import (
	"errors"
	"syscall"
)

// ProcessRunning reports whether a process with this id exists on this
// host: signal 0 answers ESRCH for none; a process of another user (EPERM)
// exists.
func ProcessRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
