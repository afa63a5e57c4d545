package metrics_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/server/metrics"
)

// A hosted service's figures are served under the node's metric names.
func TestHostedMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	fail := true
	m.AttachHosted(func(ctx context.Context) (metrics.HostedStats, error) {
		if fail {
			return metrics.HostedStats{EgressDropped: 2}, errors.New("container busy")
		}
		return metrics.HostedStats{Up: true, LogPosition: 4096, SnapshotPosition: 2048, Applied: 10, Snapshots: 1,
			LastSnapshotTake: 250 * time.Millisecond, EgressDropped: 3,
			Engine: metrics.HostedEngine{Duplicates: 4, Undecodable: 5, Rejected: map[int]int64{int(engine.RejUnknownOrder): 6}}}, nil
	})
	mfs := scrape(t, ln.Addr().String())
	if v := value(t, mfs, "matchlog_node_up", dto.MetricType_GAUGE); v != 0 {
		t.Fatalf("up %v while the service does not answer", v)
	}
	fail = false
	mfs = scrape(t, ln.Addr().String())
	for _, c := range []struct {
		name   string
		typ    dto.MetricType
		want   float64
		labels []string
	}{
		{"matchlog_node_up", dto.MetricType_GAUGE, 1, nil},
		{"matchlog_log_append_position_bytes", dto.MetricType_GAUGE, 4096, nil},
		{"matchlog_snapshot_position_bytes", dto.MetricType_GAUGE, 2048, nil},
		{"matchlog_log_entries_applied_total", dto.MetricType_COUNTER, 10, nil},
		{"matchlog_snapshots_total", dto.MetricType_COUNTER, 1, nil},
		{"matchlog_snapshot_last_pause_seconds", dto.MetricType_GAUGE, 0.25, nil},
		{"matchlog_commands_duplicate_total", dto.MetricType_COUNTER, 4, nil},
		{"matchlog_errors_total", dto.MetricType_COUNTER, 5, []string{"kind", "undecodable_command"}},
		{"matchlog_commands_rejected_total", dto.MetricType_COUNTER, 6, []string{"reason", engine.RejUnknownOrder.String()}},
		{"matchlog_egress_dropped_total", dto.MetricType_COUNTER, 3, []string{"reason", "not_sent"}},
	} {
		if v := value(t, mfs, c.name, c.typ, c.labels...); v != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if mfs["matchlog_connections_accepted_total"] != nil {
		t.Errorf("a hosted service serves the node's TCP metrics")
	}
}
