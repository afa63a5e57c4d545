//go:build !unix

package cluster

// processGone cannot tell here: a recent activity timestamp is taken as a
// live node until the timeout.
func processGone(int) bool { return false }
