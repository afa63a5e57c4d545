package metrics_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/server/metrics"
)

// scrape GETs /metrics and parses the text exposition format.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// value is the value of the named metric with the given label pairs
// (name, value, ...), or of its only sample; the metric must exist with
// type typ.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, typ dto.MetricType, labels ...string) float64 {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("metric %s missing", name)
	}
	if mf.GetType() != typ {
		t.Fatalf("metric %s has type %v, want %v", name, mf.GetType(), typ)
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch typ {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
		t.Fatalf("metric %s: unexpected type %v", name, typ)
	}
	t.Fatalf("metric %s has no sample with labels %v", name, labels)
	return 0
}

// TestScrape runs a node with its metrics served over HTTP on 127.0.0.1,
// sends commands, takes a snapshot, and checks what each scrape says.
func TestScrape(t *testing.T) {
	m := metrics.New(metrics.Options{Runtime: true})
	opts := server.Options{Addr: "127.0.0.1:0",
		Node: cluster.Options{FS: vfs.Default, Dir: t.TempDir(), TermLength: 64 * 1024, SegmentLength: 256 * 1024, FileSyncLevel: 1}}
	m.Instrument(&opts)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(srv)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	maddr := ln.Addr().String()

	const (
		C = dto.MetricType_COUNTER
		G = dto.MetricType_GAUGE
		H = dto.MetricType_HISTOGRAM
	)
	before := scrape(t, maddr)
	if v := value(t, before, "matchlog_node_up", G); v != 1 {
		t.Fatalf("matchlog_node_up %v before any command", v)
	}
	if v := value(t, before, "matchlog_commands_received_total", C); v != 0 {
		t.Fatalf("commands received %v before any command", v)
	}
	if v := value(t, before, "matchlog_snapshot_position_bytes", G); v != -1 {
		t.Fatalf("snapshot position %v with no snapshot", v)
	}
	if value(t, before, "go_goroutines", G) <= 0 {
		t.Fatal("go_goroutines not positive with Options.Runtime")
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	cl, err := client.Dial(cctx, client.Options{Addr: srv.Addr().String(), ClientID: 7})
	if err != nil {
		t.Fatal(err)
	}
	cmds := []*engine.Command{
		{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5},
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 2, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 2},
		// Rejected: outside the price band.
		{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 3, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 5000, Qty: 1},
		// Rejected: unknown instrument.
		{Kind: engine.CmdNewOrder, Instrument: 9, OrderID: 4, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10, Qty: 1},
	}
	for _, c := range cmds {
		if _, err := cl.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.Wait(cctx); err != nil {
		t.Fatal(err)
	}

	after := scrape(t, maddr)
	if v := value(t, after, "matchlog_commands_received_total", C); v != float64(len(cmds)) {
		t.Errorf("commands received %v, want %d", v, len(cmds))
	}
	appendPos := value(t, after, "matchlog_log_append_position_bytes", G)
	if appendPos <= 0 {
		t.Errorf("log append position %v", appendPos)
	}
	if d := value(t, after, "matchlog_log_durable_position_bytes", G); d <= 0 || d > appendPos {
		t.Errorf("durable position %v, append %v", d, appendPos)
	}
	if c := value(t, after, "matchlog_log_commit_position_bytes", G); c <= 0 || c > appendPos {
		t.Errorf("commit position %v, append %v", c, appendPos)
	}
	if a := value(t, after, "matchlog_archive_start_position_bytes", G); a != 0 {
		t.Errorf("archive start %v of a new log", a)
	}
	for _, c := range []struct {
		reason string
		want   float64
	}{{"price_out_of_band", 1}, {"unknown_instrument", 1}, {"bad_price", 0}} {
		if v := value(t, after, "matchlog_commands_rejected_total", C, "reason", c.reason); v != c.want {
			t.Errorf("rejected{reason=%q} %v, want %v", c.reason, v, c.want)
		}
	}
	if v := value(t, after, "matchlog_sessions_open", G); v != 1 {
		t.Errorf("sessions open %v", v)
	}
	if v := value(t, after, "matchlog_sessions_opened_total", C); v != 1 {
		t.Errorf("sessions opened %v", v)
	}
	if v := value(t, after, "matchlog_connections_accepted_total", C); v != 1 {
		t.Errorf("connections accepted %v", v)
	}
	if v := value(t, after, "matchlog_egress_messages_total", C); v < float64(2*len(cmds)) {
		t.Errorf("egress messages %v for %d commands", v, len(cmds))
	}
	if v := value(t, after, "matchlog_log_entries_sequenced_total", C); v < float64(len(cmds)) {
		t.Errorf("log entries sequenced %v", v)
	}
	if v := value(t, after, "matchlog_log_syncs_total", C); v <= 0 {
		t.Errorf("log syncs %v at file sync level 1", v)
	}
	if v := value(t, after, "matchlog_duty_cycle_seconds", H); v <= value(t, before, "matchlog_duty_cycle_seconds", H) {
		t.Errorf("duty cycle histogram count %v did not grow", v)
	}
	if v := value(t, after, "matchlog_file_sync_seconds", H, "op", "data"); v <= value(t, before, "matchlog_file_sync_seconds", H, "op", "data") {
		t.Errorf("file sync histogram count %v did not grow at file sync level 1", v)
	}
	if v := value(t, after, "matchlog_archive_written_bytes_total", C); v < appendPos {
		t.Errorf("archive bytes written %v, log position %v", v, appendPos)
	}
	for _, kind := range []string{"malformed_input", "slow_consumer", "write", "undecodable_command"} {
		if v := value(t, after, "matchlog_errors_total", C, "kind", kind); v != 0 {
			t.Errorf("errors{kind=%q} %v", kind, v)
		}
	}
	if v := value(t, after, "matchlog_egress_dropped_total", C, "reason", "no_connection"); v != 0 {
		t.Errorf("egress dropped %v", v)
	}
	for _, name := range []string{"matchlog_log_entries_applied_total", "matchlog_log_entries_replayed_total",
		"matchlog_log_writes_total", "matchlog_snapshot_written_bytes_total", "matchlog_commands_duplicate_total",
		"matchlog_connections_refused_total"} {
		value(t, after, name, C)
	}
	for _, name := range []string{"matchlog_snapshot_in_progress", "matchlog_snapshot_last_bytes",
		"matchlog_snapshot_last_duration_seconds", "matchlog_snapshot_last_pause_seconds"} {
		value(t, after, name, G)
	}
	value(t, after, "matchlog_file_sync_seconds", H, "op", "dir")
	if v := value(t, after, "matchlog_snapshots_total", C); v != 0 {
		t.Fatalf("snapshots %v before a request", v)
	}

	srv.RequestSnapshot()
	deadline := time.Now().Add(20 * time.Second)
	var snap map[string]*dto.MetricFamily
	for {
		snap = scrape(t, maddr)
		if value(t, snap, "matchlog_snapshots_total", C) >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v := value(t, snap, "matchlog_snapshots_total", C); v != 1 {
		t.Fatalf("snapshots %v after one request", v)
	}
	if s := value(t, snap, "matchlog_snapshot_position_bytes", G); s <= appendPos || s > value(t, snap, "matchlog_log_append_position_bytes", G) {
		t.Errorf("snapshot position %v, append position before the request %v", s, appendPos)
	}
	if v := value(t, snap, "matchlog_snapshot_last_bytes", G); v <= 0 {
		t.Errorf("last snapshot bytes %v", v)
	}
	if v := value(t, snap, "matchlog_snapshot_written_bytes_total", C); v != value(t, snap, "matchlog_snapshot_last_bytes", G) {
		t.Errorf("snapshot bytes total %v after one snapshot of %v", v, value(t, snap, "matchlog_snapshot_last_bytes", G))
	}
	if v := value(t, snap, "matchlog_snapshot_last_duration_seconds", G); v <= 0 {
		t.Errorf("last snapshot duration %v", v)
	}

	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		closed := scrape(t, maddr)
		v := value(t, closed, "matchlog_sessions_closed_total", C, "code", "ClientAction")
		if v == 1 && value(t, closed, "matchlog_sessions_open", G) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions closed{code=ClientAction} %v after the client closed", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRegistriesPerNode: two nodes in one process each have their own
// registry and counts.
func TestRegistriesPerNode(t *testing.T) {
	var ms [2]*metrics.Metrics
	for i := range ms {
		ms[i] = metrics.New(metrics.Options{Runtime: true})
		opts := server.Options{Addr: "127.0.0.1:0", Node: cluster.Options{FS: vfs.NewMem(), Dir: fmt.Sprintf("node%d", i),
			TermLength: 64 * 1024, SegmentLength: 256 * 1024}}
		ms[i].Instrument(&opts)
		srv, err := server.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ms[i].Attach(srv)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		defer func() { cancel(); <-done }()
		if i == 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer ccancel()
			cl, err := client.Dial(cctx, client.Options{Addr: srv.Addr().String(), ClientID: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.Send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 10}); err != nil {
				t.Fatal(err)
			}
			if err := cl.Wait(cctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, want := range []float64{1, 0} {
		mfs, err := ms[i].Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "matchlog_commands_received_total" {
				got = mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		if got != want {
			t.Errorf("node %d: commands received %v, want %v", i, got, want)
		}
	}
}

// TestNotAttached: before Attach a scrape says the node is not up and
// still serves the histograms.
func TestNotAttached(t *testing.T) {
	m := metrics.New(metrics.Options{})
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		names[mf.GetName()] = mf
	}
	if v := value(t, names, "matchlog_node_up", dto.MetricType_GAUGE); v != 0 {
		t.Fatalf("matchlog_node_up %v before Attach", v)
	}
	if _, ok := names["matchlog_log_append_position_bytes"]; ok {
		t.Fatal("node metrics before Attach")
	}
	if _, ok := names["go_goroutines"]; ok {
		t.Fatal("runtime metrics without Options.Runtime")
	}
}

// TestNamesLint: every metric passes promlint, the client library's check
// of the naming conventions (units, _total on counters, base units).
func TestNamesLint(t *testing.T) {
	m := metrics.New(metrics.Options{})
	opts := server.Options{Addr: "127.0.0.1:0", Node: cluster.Options{FS: vfs.NewMem(), Dir: "node", TermLength: 64 * 1024, SegmentLength: 256 * 1024}}
	m.Instrument(&opts)
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.Attach(srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 30 {
		t.Fatalf("%d metric families", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
