package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/server"
)

// DefaultScrapeTimeout is Options.ScrapeTimeout's default.
const DefaultScrapeTimeout = 2 * time.Second

// Options configure Metrics.
type Options struct {
	// ScrapeTimeout bounds how long a scrape waits for the duty cycle to
	// read the node's statistics (a stop-the-world snapshot holds it);
	// past it the scrape goes on without them (matchlog_node_up 0).
	// Default DefaultScrapeTimeout.
	ScrapeTimeout time.Duration
	// Runtime also registers the Go runtime's and the process's
	// collectors (go_*, process_*).
	Runtime bool
}

// Buckets of the histograms, in seconds.
var (
	// DutyCycleBuckets: 2 µs to 65 ms, doubling.
	DutyCycleBuckets = prometheus.ExponentialBuckets(2e-6, 2, 16)
	// FileSyncBuckets: 10 µs to 164 ms, doubling.
	FileSyncBuckets = prometheus.ExponentialBuckets(10e-6, 2, 15)
)

// Metrics is one node's metrics: a registry of its own, the histograms
// its node observes into, and the collector that reads the server.
type Metrics struct {
	opts Options
	reg  *prometheus.Registry

	dutyCycle prometheus.Histogram
	syncData  prometheus.Observer
	syncAll   prometheus.Observer
	syncDir   prometheus.Observer

	archiveWritten atomic.Int64
	diskFull       atomic.Int64 // file operations of the node that failed with ENOSPC
	fs             *timedFS     // the node's instrumented FS (InstrumentNode)
	srv            atomic.Pointer[server.Server]
	hosted         atomic.Pointer[func(ctx context.Context) (HostedStats, error)]
}

// New returns Metrics with their registry.
func New(opts Options) *Metrics {
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = DefaultScrapeTimeout
	}
	m := &Metrics{opts: opts, reg: prometheus.NewRegistry()}
	m.dutyCycle = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "matchlog_duty_cycle_seconds",
		Help:    "Duration of each duty cycle of the node that did work.",
		Buckets: DutyCycleBuckets,
	})
	syncs := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "matchlog_file_sync_seconds",
		Help:    "Latency of each file sync of the node directory: op data (fdatasync), all (fsync), dir (directory).",
		Buckets: FileSyncBuckets,
	}, []string{"op"})
	m.syncData = syncs.WithLabelValues("data")
	m.syncAll = syncs.WithLabelValues("all")
	m.syncDir = syncs.WithLabelValues("dir")
	m.reg.MustRegister(m.dutyCycle, syncs, newCollector(m))
	if opts.Runtime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry is the registry of the metrics (to add collectors to, or to
// gather from).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Instrument sets the node's hooks in o (see InstrumentNode). Call it
// before server.New.
func (m *Metrics) Instrument(o *server.Options) { m.InstrumentNode(&o.Node) }

// InstrumentNode sets o.DutyCycle to the duty-cycle histogram and wraps
// o.FS (vfs.Default if nil) in a file system that times its syncs and
// counts the bytes written under o.Dir's archive directory. Call it
// before cluster.Open, after o.Dir is set.
func (m *Metrics) InstrumentNode(o *cluster.Options) {
	o.DutyCycle = m.dutyCycle
	base := o.FS
	if base == nil {
		base = vfs.Default
	}
	m.fs = newTimedFS(base, base.Join(o.Dir, cluster.ArchiveDirName), m)
	o.FS = m.fs
}

// Attach makes scrapes read s. Call it once server.New has returned.
func (m *Metrics) Attach(s *server.Server) { m.srv.Store(s) }

// collector reads the server at scrape time.
type collector struct {
	m *Metrics

	up, appendPos, durablePos, commitPos, snapPos, archiveStart    *prometheus.Desc
	sequenced, applied, replayed, logWrites, logSyncs              *prometheus.Desc
	snapshots, snapBytes, snapInProgress, snapLastBytes            *prometheus.Desc
	snapLastDuration, snapLastPause                                *prometheus.Desc
	connAccepted, connRefused                                      *prometheus.Desc
	sessOpen, sessOpened, sessClosed                               *prometheus.Desc
	cmdReceived, cmdRejected, cmdDuplicate                         *prometheus.Desc
	egressMsgs, egressDropped, errors, archiveWritten              *prometheus.Desc
	retChecks, retProposals, retApprovals, retLimited, retRefusals *prometheus.Desc
	retDetachedSegs, retDetachedBytes, retSnapshots, retRecordings *prometheus.Desc
	retUnlinked, retPending, retArchiveBytes, retErrors            *prometheus.Desc
	compactions, compactDropped, metaEntries                       *prometheus.Desc
	freeBytes, diskFullErrs, storageFull, storageFullEvents        *prometheus.Desc
}

func newCollector(m *Metrics) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{m: m,
		up:               d("matchlog_node_up", "1 if the node's duty cycle answered this scrape, else 0 (its metrics are then missing)."),
		appendPos:        d("matchlog_log_append_position_bytes", "Appended log position."),
		durablePos:       d("matchlog_log_durable_position_bytes", "Log position durable at the file sync level."),
		commitPos:        d("matchlog_log_commit_position_bytes", "Commit position: a node of one member commits what is durable."),
		snapPos:          d("matchlog_snapshot_position_bytes", "Log position of the latest snapshot set, -1 if there is none."),
		archiveStart:     d("matchlog_archive_start_position_bytes", "Start position of the log recording: the earliest log byte on disk."),
		sequenced:        d("matchlog_log_entries_sequenced_total", "Log entries appended."),
		applied:          d("matchlog_log_entries_applied_total", "Log entries delivered to the service live."),
		replayed:         d("matchlog_log_entries_replayed_total", "Log entries replayed at start."),
		logWrites:        d("matchlog_log_writes_total", "Archive block writes of the log (group commits)."),
		logSyncs:         d("matchlog_log_syncs_total", "Archive syncs of the log (file sync level 1 or 2)."),
		snapshots:        d("matchlog_snapshots_total", "Snapshot sets completed."),
		snapBytes:        d("matchlog_snapshot_written_bytes_total", "Bytes of the snapshot recordings completed."),
		snapInProgress:   d("matchlog_snapshot_in_progress", "1 while a snapshot is being written."),
		snapLastBytes:    d("matchlog_snapshot_last_bytes", "Length of the last snapshot set's recordings."),
		snapLastDuration: d("matchlog_snapshot_last_duration_seconds", "How long the last snapshot set took to write."),
		snapLastPause:    d("matchlog_snapshot_last_pause_seconds", "How long the last snapshot held the duty cycle."),
		connAccepted:     d("matchlog_connections_accepted_total", "TCP connections accepted."),
		connRefused:      d("matchlog_connections_refused_total", "Connections closed before a session opened, for malformed or out-of-place input or a refused Connect."),
		sessOpen:         d("matchlog_sessions_open", "Sessions open."),
		sessOpened:       d("matchlog_sessions_opened_total", "Sessions opened by a Connect."),
		sessClosed:       d("matchlog_sessions_closed_total", "Sessions closed, by the code of their SessionClosed.", "code"),
		cmdReceived:      d("matchlog_commands_received_total", "Commands (and depth subscriptions) received and offered to the log."),
		cmdRejected:      d("matchlog_commands_rejected_total", "Commands the engine rejected, by reason.", "reason"),
		cmdDuplicate:     d("matchlog_commands_duplicate_total", "Commands answered Duplicate (applied before)."),
		egressMsgs:       d("matchlog_egress_messages_total", "Messages queued to clients."),
		egressDropped:    d("matchlog_egress_dropped_total", "Messages released by the node and not queued to a client, by reason.", "reason"),
		errors:           d("matchlog_errors_total", "Errors, by kind.", "kind"),
		archiveWritten:   d("matchlog_archive_written_bytes_total", "Bytes written to the archive's files (segments, index, catalog)."),

		retChecks:        d("matchlog_retention_checks_total", "Automatic retention checks run."),
		retProposals:     d("matchlog_retention_proposals_total", "Cutoffs proposed by automatic retention, by rule.", "rule"),
		retApprovals:     d("matchlog_retention_approvals_total", "Proposed cutoffs the positional rules approved and the node executed."),
		retLimited:       d("matchlog_retention_limited_total", "Approved cutoffs a positional rule lowered (to C or the active segment)."),
		retRefusals:      d("matchlog_retention_refusals_total", "Proposed cutoffs refused, by reason.", "reason"),
		retDetachedSegs:  d("matchlog_retention_detached_segments_total", "Log segments detached by automatic retention."),
		retDetachedBytes: d("matchlog_retention_detached_bytes_total", "Bytes of the log segments detached by automatic retention."),
		retSnapshots:     d("matchlog_retention_snapshot_generations_deleted_total", "Snapshot generations deleted whole by automatic retention."),
		retRecordings:    d("matchlog_retention_recordings_deleted_total", "Snapshot recordings deleted (of deleted generations, or orphaned)."),
		retUnlinked:      d("matchlog_retention_unlinked_files_total", "Files renamed *.deleted and then unlinked by automatic retention."),
		retPending:       d("matchlog_retention_pending_unlinks", "Files renamed *.deleted waiting to be unlinked."),
		retArchiveBytes:  d("matchlog_retention_archive_bytes", "Size of the archive directory (every file at its length) at the last retention check."),
		retErrors:        d("matchlog_retention_errors_total", "Automatic retention steps that failed (logged; retried by a later check)."),
		compactions:      d("matchlog_compactions_total", "Compactions of the catalog or recording.log by automatic retention.", "file"),
		compactDropped:   d("matchlog_compaction_dropped_entries_total", "Entries the compactions dropped (DELETED catalog entries; recording.log entries nothing can use).", "file"),
		metaEntries:      d("matchlog_metadata_entries", "Entries of the catalog (any state) and of recording.log at the last retention check.", "file"),

		freeBytes:         d("matchlog_archive_free_bytes", "Free bytes of the file system holding the archive directory, read at the scrape."),
		diskFullErrs:      d("matchlog_archive_disk_full_errors_total", "File operations of the node that failed with ENOSPC (each stops the node)."),
		storageFull:       d("matchlog_archive_storage_full", "1 while the node refuses commands because the archive volume's free space is below its reserve."),
		storageFullEvents: d("matchlog_archive_storage_full_events_total", "Times the node became storage-full (free space below the reserve)."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.appendPos, c.durablePos, c.commitPos, c.snapPos, c.archiveStart,
		c.sequenced, c.applied, c.replayed, c.logWrites, c.logSyncs,
		c.snapshots, c.snapBytes, c.snapInProgress, c.snapLastBytes, c.snapLastDuration, c.snapLastPause,
		c.connAccepted, c.connRefused, c.sessOpen, c.sessOpened, c.sessClosed,
		c.cmdReceived, c.cmdRejected, c.cmdDuplicate, c.egressMsgs, c.egressDropped, c.errors, c.archiveWritten,
		c.retChecks, c.retProposals, c.retApprovals, c.retLimited, c.retRefusals, c.retDetachedSegs, c.retDetachedBytes,
		c.retSnapshots, c.retRecordings, c.retUnlinked, c.retPending, c.retArchiveBytes, c.retErrors,
		c.compactions, c.compactDropped, c.metaEntries,
		c.freeBytes, c.diskFullErrs, c.storageFull, c.storageFullEvents} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if f := c.m.hosted.Load(); f != nil {
		c.collectHosted(*f, counter, gauge)
		return
	}
	counter(c.archiveWritten, c.m.archiveWritten.Load())
	counter(c.diskFullErrs, c.m.diskFull.Load())
	if fs := c.m.fs; fs != nil {
		if free, err := fs.FreeBytes(strings.TrimSuffix(fs.archivePrefix, "/")); err == nil {
			gauge(c.freeBytes, float64(free))
		}
	}
	s := c.m.srv.Load()
	if s == nil {
		gauge(c.up, 0)
		return
	}
	st := s.Stats()
	counter(c.connAccepted, st.Connections)
	counter(c.connRefused, st.Refused)
	gauge(c.sessOpen, float64(st.ActiveSessions))
	counter(c.sessOpened, st.Sessions)
	for code, n := range st.SessionsClosedBy {
		counter(c.sessClosed, n, wiresbe.CloseCode(code).String())
	}
	counter(c.cmdReceived, st.Offered)
	counter(c.egressMsgs, st.FramesOut)
	counter(c.egressDropped, st.DroppedNoConnection, "no_connection")
	counter(c.egressDropped, st.DroppedClosing, "closing")
	counter(c.egressDropped, st.DroppedSlowConsumer, "slow_consumer")
	counter(c.egressDropped, st.DroppedFiltered, "filtered")
	counter(c.errors, st.Malformed, "malformed_input")
	counter(c.errors, st.SlowConsumers, "slow_consumer")
	counter(c.errors, st.WriteErrors, "write")

	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ScrapeTimeout)
	defer cancel()
	ns, err := s.NodeStats(ctx)
	var es server.EngineStats
	if err == nil {
		es, err = s.EngineStats(ctx)
	}
	if err != nil {
		gauge(c.up, 0)
		return
	}
	gauge(c.up, 1)
	counter(c.errors, es.Undecodable, "undecodable_command")
	gauge(c.appendPos, float64(ns.LogPosition))
	gauge(c.durablePos, float64(ns.DurableLog))
	gauge(c.commitPos, float64(ns.DurableLog))
	gauge(c.snapPos, float64(ns.SnapshotPosition))
	gauge(c.archiveStart, float64(ns.ArchiveStart))
	counter(c.sequenced, ns.Sequenced)
	counter(c.applied, ns.Applied)
	counter(c.replayed, ns.Replayed)
	counter(c.logWrites, ns.LogBlocks)
	counter(c.logSyncs, ns.LogSyncs)
	counter(c.snapshots, ns.Snapshots)
	counter(c.snapBytes, ns.SnapshotBytes)
	inProgress := 0.0
	if ns.SnapshotInProgress {
		inProgress = 1
	}
	gauge(c.snapInProgress, inProgress)
	gauge(c.snapLastBytes, float64(ns.LastSnapshotBytes))
	gauge(c.snapLastDuration, ns.LastSnapshotWrite.Seconds())
	gauge(c.snapLastPause, ns.LastSnapshotPrepare.Seconds())
	counter(c.cmdDuplicate, es.Duplicates)
	counter(c.retChecks, ns.RetentionChecks)
	for r := cluster.RetentionRule(0); r < cluster.NumRetentionRules; r++ {
		counter(c.retProposals, ns.RetentionProposed[r], labelName(r.String()))
	}
	counter(c.retApprovals, ns.RetentionApproved)
	counter(c.retLimited, ns.RetentionLimited)
	for r := cluster.RefusedNone + 1; r < cluster.NumRetentionRefusals; r++ {
		counter(c.retRefusals, ns.RetentionRefused[r], labelName(r.String()))
	}
	counter(c.retDetachedSegs, ns.RetentionDetachedSegments)
	counter(c.retDetachedBytes, ns.RetentionDetachedBytes)
	counter(c.retSnapshots, ns.RetentionSnapshotsDeleted)
	counter(c.retRecordings, ns.RetentionRecordingsDeleted)
	counter(c.retUnlinked, ns.RetentionUnlinked)
	gauge(c.retPending, float64(ns.RetentionPendingUnlinks))
	gauge(c.retArchiveBytes, float64(ns.RetentionArchiveBytes))
	counter(c.retErrors, ns.RetentionErrors)
	counter(c.compactions, ns.CatalogCompactions, "catalog")
	counter(c.compactions, ns.RecordingLogCompactions, "recording_log")
	counter(c.compactDropped, ns.CatalogEntriesDropped, "catalog")
	counter(c.compactDropped, ns.RecordingLogEntriesDropped, "recording_log")
	gauge(c.metaEntries, float64(ns.CatalogEntries), "catalog")
	gauge(c.metaEntries, float64(ns.RecordingLogEntries), "recording_log")
	full := 0.0
	if ns.StorageFull {
		full = 1
	}
	gauge(c.storageFull, full)
	counter(c.storageFullEvents, ns.StorageFullEvents)
	for r := engine.Reason(1); r <= engine.RejStorageFull; r++ {
		counter(c.cmdRejected, es.Rejected[r], reasonLabel(r))
	}
	for r, n := range es.Rejected {
		if r > engine.RejStorageFull || r == engine.ReasonNone {
			counter(c.cmdRejected, n, reasonLabel(r))
		}
	}
}

// labelName is a label value in the style of the others: "-" becomes "_".
func labelName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// reasonLabel is a reject reason's label value: its name, or reason_N for
// a code the engine has no name for.
func reasonLabel(r engine.Reason) string {
	if s := r.String(); s != "reason?" {
		return s
	}
	return "reason_" + strconv.Itoa(int(r))
}
