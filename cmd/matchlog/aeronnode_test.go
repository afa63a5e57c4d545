package main

import (
	"strings"
	"testing"
)

func TestAeronNodeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--app-version", "1.0"}, "--app-version"},
		{[]string{"--app-version", "0.0.256"}, "--app-version"},
		{[]string{"--service-id", "128"}, "--service-id"},
		{[]string{"--idle", "sleep"}, "--idle"},
		{[]string{"--aeron-idle", "sleep:-1ms"}, "--aeron-idle"},
		{[]string{"--archive-idle", "spin"}, "--archive-idle"},
		{[]string{"--archive-control-channel", "aeron:udp?endpoint=127.0.0.1:8010"}, "IPC"},
		{[]string{"--media-driver-timeout", "0s"}, "--media-driver-timeout"},
		{[]string{"--metrics", "0.0.0.0:0"}, "loopback"},
		{[]string{"--cluster-dir", ""}, "--cluster-dir"},
		{[]string{"--stream-id", "1"}, "not defined"},
	} {
		code, _, errb := runCLI(t, append([]string{"aeron-node"}, c.args...)...)
		if code != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, firstLine(errb))
		}
	}
	cfg, err := parseAeronNodeFlags([]string{"--app-version", "1.2.3", "--cluster-id", "7", "--service-id", "2"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.host.AppVersion != 1<<16|2<<8|3 || cfg.svc.AppVersion != cfg.host.AppVersion ||
		cfg.host.Container.ClusterId != 7 || cfg.host.Container.ServiceId != 2 {
		t.Fatalf("parsed %+v", cfg.host)
	}
	if cfg, _ := parseAeronNodeFlags(nil, &strings.Builder{}); cfg.host.AppVersion != 1 {
		t.Fatalf("default app version %#x, want 0.0.1 (Java's consensus module's)", cfg.host.AppVersion)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Without a media driver the service waits for it up to the timeout, then
// exits 1 naming the file.
func TestAeronNodeNoDriver(t *testing.T) {
	dir := t.TempDir()
	code, _, errb := runCLI(t, "aeron-node", "--aeron-dir", dir, "--cluster-dir", t.TempDir(), "--media-driver-timeout", "300ms")
	if code != 1 || !strings.Contains(errb, dir+"/cnc.dat") || !strings.Contains(errb, "no media driver became ready") {
		t.Fatalf("exit %d, stderr:\n%s", code, errb)
	}
}

func TestAeronClientFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--ingress-endpoints is required"},
		{[]string{"--ingress-channel", "aeron:ipc", "--ingress-endpoints", "0=127.0.0.1:1"}, "must be empty"},
		{[]string{"--ingress-endpoints", "0=127.0.0.1:1", "--window", "0"}, "--window"},
		{[]string{"--ingress-endpoints", "0=127.0.0.1:1", "--timeout", "0s"}, "--timeout"},
	} {
		code, _, errb := runCLI(t, append([]string{"aeron-client"}, c.args...)...)
		if code != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, firstLine(errb))
		}
	}
	dir := t.TempDir()
	code, _, errb := runCLI(t, "aeron-client", "--aeron-dir", dir, "--ingress-endpoints", "0=127.0.0.1:1", "--media-driver-timeout", "200ms")
	if code != 1 || !strings.Contains(errb, dir+"/cnc.dat") {
		t.Fatalf("no driver: exit %d, stderr %s", code, errb)
	}
}
