//go:build unix

package cluster

import (
	"errors"
	"syscall"
)

// processGone reports whether no process with this id exists (signal 0
// answers ESRCH). A process of another user (EPERM) exists.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
