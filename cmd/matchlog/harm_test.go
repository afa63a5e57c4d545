package main

import (
	"os/exec"
	"testing"
)

// deadPID returns the id of a process that has exited and been reaped:
// what a node killed with SIGKILL leaves in its mark files.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	return c.Process.Pid
}
