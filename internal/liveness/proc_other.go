//go:build !unix

package liveness

// ProcessRunning cannot ask here: every pid counts as running, so a recent
// activity timestamp alone makes a mark file live until the timeout.
func ProcessRunning(pid int) bool { return pid > 0 }
