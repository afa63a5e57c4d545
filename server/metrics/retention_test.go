package metrics_test

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/server/metrics"
)

// TestRetentionMetrics: a node with automatic retention on exports its
// counters: a budget of one byte with no snapshot is refused at every
// check (no_complete_snapshot), and the archive's size is a gauge.
func TestRetentionMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	opts := server.Options{Addr: "127.0.0.1:0", Node: cluster.Options{FS: vfs.NewMem(), Dir: "node", TermLength: 64 * 1024, SegmentLength: 64 * 1024,
		Retention: cluster.RetentionOptions{MaxBytes: 1, CheckInterval: time.Millisecond}}}
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
	const C, G = dto.MetricType_COUNTER, dto.MetricType_GAUGE
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		mfs := map[string]*dto.MetricFamily{}
		for _, mf := range list {
			mfs[mf.GetName()] = mf
		}
		checks := value(t, mfs, "matchlog_retention_checks_total", C)
		refused := value(t, mfs, "matchlog_retention_refusals_total", C, "reason", "no_complete_snapshot")
		proposed := value(t, mfs, "matchlog_retention_proposals_total", C, "rule", "size")
		size := value(t, mfs, "matchlog_retention_archive_bytes", G)
		if checks >= 2 && refused >= 1 && proposed >= 1 && size > 0 {
			if v := value(t, mfs, "matchlog_retention_approvals_total", C); v != 0 {
				t.Fatalf("approvals %v with no snapshot", v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checks %v, refused %v, proposed %v, archive bytes %v", checks, refused, proposed, size)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
