package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
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
		{[]string{"--dir", "d", "--metrics", "nohost"}, "--metrics"},
		{[]string{"--dir", "d", "--metrics", "10.1.2.3:9090"}, "loopback"},
		{[]string{"--dir", "d", "--metrics", ":9090"}, "loopback"},
		{[]string{"--dir", "d", "--log-format", "xml"}, "--log-format"},
		{[]string{"--dir", "d", "--log-level", "loud"}, "--log-level"},
		{[]string{"--dir", "d", "--workers", "-1"}, "--workers -1: must not be negative"},
		{[]string{"--dir", "d", "--segment-length", "100000"}, "--segment-length 100000: want a power of two"},
		{[]string{"--dir", "d", "--segment-length", "32768"}, "--segment-length 32768"},
		{[]string{"--dir", "d", "--retention-max-bytes", "-1"}, "must not be negative"},
		{[]string{"--dir", "d", "--keep", "-1"}, "must not be negative"},
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
	if o.Node.Retention.Enabled() || o.Node.SegmentLength != 0 || o.Node.TermLength != 0 {
		t.Fatalf("defaults: retention %+v, segment length %d, term length %d", o.Node.Retention, o.Node.SegmentLength, o.Node.TermLength)
	}
	r, err := parseNodeFlags([]string{"--dir", "d", "--segment-length", "65536", "--retention-max-bytes", "1048576", "--retention-max-age", "1h",
		"--retention-min-free-bytes", "4096", "--retention-interval", "10s", "--keep", "3", "--delay", "0"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cluster.RetentionOptions{CheckInterval: 10 * time.Second, MaxAge: time.Hour, MaxBytes: 1 << 20, MinFreeBytes: 4096, Keep: 3, DeleteDelay: -1}); r.Node.Retention != want ||
		r.Node.SegmentLength != 65536 || r.Node.TermLength != 65536 {
		t.Fatalf("retention flags: %+v, segment %d, term %d", r.Node.Retention, r.Node.SegmentLength, r.Node.TermLength)
	}
	if o.Node.StorageReserve != 0 {
		t.Fatalf("default --storage-reserve: %d", o.Node.StorageReserve)
	}
	if sr, err := parseNodeFlags([]string{"--dir", "d", "--storage-reserve", "1048576"}, &stderr); err != nil || sr.Node.StorageReserve != 1<<20 {
		t.Fatalf("--storage-reserve 1048576: %d, %v", sr.Node.StorageReserve, err)
	}
	if _, err := parseNodeFlags([]string{"--dir", "d", "--storage-reserve", "-2"}, &stderr); !errors.Is(err, errUsage) {
		t.Fatalf("--storage-reserve -2: %v", err)
	}
	if o.Service.Workers != 0 {
		t.Fatalf("default --workers: %d, want 0 (linear)", o.Service.Workers)
	}
	if o, err = parseNodeFlags([]string{"--dir", "d", "--workers", "3"}, &stderr); err != nil || o.Service.Workers != 3 {
		t.Fatalf("--workers 3: service options %+v, %v", o.Service, err)
	}
	if o.metricsAddr != "" || o.Logger == nil || o.Logger.Enabled(context.Background(), slog.LevelDebug) ||
		!o.Logger.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatalf("defaults: metrics %q, logger %v", o.metricsAddr, o.Logger)
	}
	stderr.Reset()
	o, err = parseNodeFlags([]string{"--dir", "d", "--metrics", "127.0.0.1:0", "--log-format", "json", "--log-level", "warn"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.metricsAddr != "127.0.0.1:0" || o.Logger.Enabled(context.Background(), slog.LevelInfo) ||
		!o.Logger.Enabled(context.Background(), slog.LevelWarn) {
		t.Fatalf("metrics %q, logger at warn %v", o.metricsAddr, o.Logger)
	}
	o.Logger.Warn("probe", "n", 1)
	var rec map[string]any
	if err := json.Unmarshal(stderr.Bytes(), &rec); err != nil || rec["msg"] != "probe" || rec["n"] != 1.0 {
		t.Fatalf("--log-format json wrote %q (%v)", stderr.String(), err)
	}
}
