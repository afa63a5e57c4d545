package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
)

func TestNodeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--dir is required"},
		{[]string{"--dir", "d", "--listen", "nohost"}, "--listen"},
		{[]string{"--dir", "d", "--listen", "10.1.2.3:7717"}, "loopback"},
		{[]string{"--dir", "d", "--sync", "3"}, "--sync 3"},
		{[]string{"--dir", "d", "--snapshot-mode", "fast"}, "-snapshot-mode: \"fast\": want pauseless or stw"},
		{[]string{"--dir", "d", "--snapshot-mode", "stw,pauseless"}, "--snapshot-mode stw,pauseless: this verb takes one snapshot mode"},
		{[]string{"--dir", "d", "--sync", "0,2"}, "--sync 0,2: this verb runs one configuration"},
		{[]string{"--dir", "d", "--snapshot-every-bytes", "-1"}, "negative"},
		{[]string{"--dir", "d", "--session-timeout", "0s"}, "positive"},
		{[]string{"--dir", "d", "--bogus"}, "bogus"},
		{[]string{"--dir", "d", "extra"}, "unexpected argument"},
	} {
		var stderr bytes.Buffer
		_, err := parseNodeFlags(c.args, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want errUsage", c.args, err)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
		if code := run(append([]string{"node"}, c.args...), &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%q: exit status %d, want 2", c.args, code)
		}
	}
	var stderr bytes.Buffer
	if _, err := parseNodeFlags([]string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	o, err := parseNodeFlags([]string{"--dir", "d", "--listen", "127.0.0.1:0", "--sync", "2", "--snapshot-mode", "stw",
		"--snapshot-every-bytes", "4096", "--snapshot-on-exit", "--session-timeout", "3s"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.Addr != "127.0.0.1:0" || o.Node.Dir != "d" || o.Node.FileSyncLevel != 2 || o.Node.SnapshotMode != cluster.StopTheWorld ||
		o.Node.SnapshotEveryBytes != 4096 || !o.SnapshotOnShutdown || o.SessionTimeout != 3*time.Second {
		t.Fatalf("options %+v", o)
	}
}
