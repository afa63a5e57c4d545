//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/engine"
)

// TestNodeMetricsAndLog runs `matchlog node --metrics 127.0.0.1:0
// --log-format json` as a child process, sends commands, scrapes
// /metrics, stops the node with SIGTERM and reads its JSON log.
func TestNodeMetricsAndLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	child := startNodeChild(t, dir, "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--log-format", "json", "--sync", "1")
	stopped := false
	defer func() {
		if !stopped {
			child.kill()
		}
	}()
	addr, maddr := child.addr, child.metrics
	if !strings.HasPrefix(maddr, "http://127.0.0.1:") || !strings.HasSuffix(maddr, "/metrics") {
		t.Fatalf("metrics address %q", maddr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, client.Options{Addr: addr, ClientID: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*engine.Command{
		{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10, Qty: 1},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10, Qty: 1},
	} {
		if _, err := cl.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(maddr)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string, typ dto.MetricType) *dto.Metric {
		t.Helper()
		mf := mfs[name]
		if mf == nil || mf.GetType() != typ || len(mf.GetMetric()) == 0 {
			t.Fatalf("metric %s: %v, want type %v", name, mf, typ)
		}
		return mf.GetMetric()[0]
	}
	if v := get("matchlog_commands_received_total", dto.MetricType_COUNTER).GetCounter().GetValue(); v != 3 {
		t.Errorf("commands received %v, want 3", v)
	}
	if v := get("matchlog_log_append_position_bytes", dto.MetricType_GAUGE).GetGauge().GetValue(); v <= 0 {
		t.Errorf("log append position %v", v)
	}
	if v := get("matchlog_duty_cycle_seconds", dto.MetricType_HISTOGRAM).GetHistogram().GetSampleCount(); v == 0 {
		t.Error("no duty cycle observed")
	}
	get("go_goroutines", dto.MetricType_GAUGE)
	for _, m := range mfs["matchlog_commands_rejected_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "duplicate_order_id" && m.GetCounter().GetValue() != 1 {
			t.Errorf("rejected duplicate_order_id %v, want 1", m.GetCounter().GetValue())
		}
	}
	cl.Close()

	child.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-child.exited:
		stopped = true
		if err != nil {
			t.Fatalf("node: %v: %s", err, child.stderrText())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop on SIGTERM")
	}
	log := child.stderrText()
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("stderr line %q is not JSON (%v)", line, err)
		}
		msgs = append(msgs, r["msg"].(string))
		if r["msg"] == "metrics" && "http://"+r["addr"].(string)+"/metrics" != maddr {
			t.Errorf("metrics record %v, printed %s", r, maddr)
		}
	}
	want := []string{"recovery plan", "open", "metrics", "serving", "session open", "session close", "shutdown", "close", "stopped"}
	i := 0
	for _, m := range msgs {
		if i < len(want) && m == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("log records %q, want %q in that order", msgs, want)
	}
}

// TestNodeMetricsAddressInUse: an unusable --metrics address fails before
// the node directory is created.
func TestNodeMetricsAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "node")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"node", "--dir", dir, "--listen", "127.0.0.1:0", "--metrics", ln.Addr().String()}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit status %d, want 1 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "--metrics "+ln.Addr().String()) || !strings.Contains(stderr.String(), "address already in use") {
		t.Fatalf("stderr %q", stderr.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("node directory after the failure: %v", err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q", stdout.String())
	}
}
