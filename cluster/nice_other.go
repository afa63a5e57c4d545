//go:build !linux

package cluster

// setThreadNice does nothing where thread priorities are not per thread.
func setThreadNice(int) error { return nil }
