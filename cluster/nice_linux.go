//go:build linux

package cluster

import "golang.org/x/sys/unix"

// setThreadNice sets the nice value of the calling OS thread (the caller
// has locked its goroutine to it).
func setThreadNice(nice int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), min(nice, 19))
}
