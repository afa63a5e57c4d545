package metrics

import (
	"context"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// HostedStats are the figures of a service hosted outside our node (the
// matching engine as the Go service of a real Aeron Cluster member, where
// the consensus module and archive are Aeron's): the subset of the node's
// metrics that such a host knows.
type HostedStats struct {
	// Up: the service answered (its container goroutine ran the read).
	Up bool
	// Role is the member's role as the container reports it.
	Role string
	// LogPosition is the log position of the last message applied;
	// SnapshotPosition that of the last snapshot taken, 0 if none.
	LogPosition, SnapshotPosition int64
	// Applied counts the log messages applied since the process started
	// (replayed ones included: the container does not tell them apart),
	// Snapshots the snapshots taken.
	Applied, Snapshots int64
	// LastSnapshotTake is how long the last snapshot held the service
	// (Aeron's snapshots stop the world).
	LastSnapshotTake time.Duration
	// StateHash is the engine's state hash.
	StateHash uint64
	// Engine: duplicates, undecodable messages and rejections by reason,
	// as the engine service counts them.
	Engine HostedEngine
	// EgressDropped counts egress messages not sent (the client's
	// response publication not connected, closed or back-pressured).
	EgressDropped int64
}

// HostedEngine are the engine service's counters.
type HostedEngine struct {
	Duplicates, Undecodable int64
	Rejected                map[int]int64 // by engine.Reason
}

// AttachHosted makes scrapes read f instead of a server: for a service
// hosted in another cluster's container. f runs at each scrape with the
// scrape timeout.
func (m *Metrics) AttachHosted(f func(ctx context.Context) (HostedStats, error)) { m.hosted.Store(&f) }

// collectHosted is Collect for a hosted service.
func (c *collector) collectHosted(f func(ctx context.Context) (HostedStats, error),
	counter func(d *prometheus.Desc, v int64, labels ...string), gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ScrapeTimeout)
	defer cancel()
	st, err := f(ctx)
	if err != nil || !st.Up {
		gauge(c.up, 0)
		counter(c.egressDropped, st.EgressDropped, "not_sent")
		return
	}
	gauge(c.up, 1)
	gauge(c.appendPos, float64(st.LogPosition))
	gauge(c.snapPos, float64(st.SnapshotPosition))
	counter(c.applied, st.Applied)
	counter(c.snapshots, st.Snapshots)
	gauge(c.snapLastPause, st.LastSnapshotTake.Seconds())
	gauge(c.snapLastDuration, st.LastSnapshotTake.Seconds())
	counter(c.cmdDuplicate, st.Engine.Duplicates)
	counter(c.errors, st.Engine.Undecodable, "undecodable_command")
	counter(c.egressDropped, st.EgressDropped, "not_sent")
	for r := engine.Reason(1); r <= engine.RejNoChange; r++ {
		counter(c.cmdRejected, st.Engine.Rejected[int(r)], reasonLabel(r))
	}
	for r, n := range st.Engine.Rejected {
		if engine.Reason(r) > engine.RejNoChange || r == int(engine.ReasonNone) {
			counter(c.cmdRejected, n, reasonLabel(engine.Reason(r)))
		}
	}
}
