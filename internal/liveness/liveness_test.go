package liveness

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	dead := int64(c.Process.Pid)
	const now = 1_800_000_000_000
	kind := errors.New("kind")
	for _, tc := range []struct {
		name string
		m    Mark
		live bool
	}{
		{"this process, fresh", Mark{Ready: true, ActivityMs: now - 9_000, PID: int64(os.Getpid())}, true},
		{"another running process, fresh", Mark{Ready: true, ActivityMs: now - 1, PID: int64(os.Getppid())}, true},
		{"fresh, slightly ahead of now", Mark{Ready: true, ActivityMs: now + 5_000, PID: int64(os.Getpid())}, true},
		{"killed process, fresh", Mark{Ready: true, ActivityMs: now, PID: dead}, false},
		{"running process, stale", Mark{Ready: true, ActivityMs: now - 10_001, PID: int64(os.Getppid())}, false},
		{"clean stop", Mark{Ready: true, ActivityMs: -1, PID: int64(os.Getpid())}, false},
		{"not ready", Mark{ActivityMs: now, PID: int64(os.Getpid())}, false},
	} {
		err := Check(tc.m, now, DefaultTimeout, kind)
		if (err != nil) != tc.live || IsLive(err) != tc.live {
			t.Errorf("%s: %v, want live %v", tc.name, err, tc.live)
		}
		if err != nil && !errors.Is(err, kind) {
			t.Errorf("%s: %v does not wrap its kind", tc.name, err)
		}
	}
	err := Check(Mark{File: "/x/cluster-mark.dat", Ready: true, ActivityMs: now - 2500, PID: int64(os.Getpid())}, now, 10*time.Second, nil)
	var le *Error
	if !errors.As(err, &le) || le.AgeMs != 2500 || le.Reason() != "cluster-mark.dat activity timestamp 2027-01-15T07:59:57.5Z is 2500 ms old (within 10s) and its process "+strconv.Itoa(os.Getpid())+" is running" ||
		!strings.Contains(err.Error(), "(/x/cluster-mark.dat); stop that process first") {
		t.Errorf("error %v", err)
	}
}
