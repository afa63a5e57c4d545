// Package metrics exposes a node's counters, positions and timings as
// Prometheus metrics (github.com/prometheus/client_golang).
//
// # Design
//
// Nearly everything is read at scrape time: a custom prometheus.Collector
// takes the server's counters (server.Server.Stats, atomics), and the
// node's and the engine service's (server.Server.NodeStats and
// EngineStats, read on the duty cycle), and turns them into metrics. The
// duty cycle does no work for metrics it did not already do for its
// statistics. Two histograms need observations as they happen, and those
// are taken where the node already measures or performs the work, without
// allocating:
//
//   - the duty cycle: cluster.Options.DutyCycle observes the duration of
//     each DoWork that did work (one time.Now on entry);
//   - file syncs: the node's file system is wrapped (Metrics.InstrumentNode)
//     by one that times every Sync, SyncAll and SyncDir and counts the
//     bytes written under the node's archive directory.
//
// prometheus.Histogram.Observe does not allocate; cluster's
// TestSteadyStateAllocs runs the node instrumented and checks it still
// allocates nothing per message.
//
// Each Metrics has its own prometheus.Registry (never the global default
// registry), so one process, or one test, may run several nodes, each with
// its own /metrics.
//
// # Use
//
//	m := metrics.New(metrics.Options{})
//	m.Instrument(&opts)          // before server.New: hooks in opts.Node
//	srv, err := server.New(opts)
//	m.Attach(srv)                // scrapes now read srv
//	http.Handle("/metrics", m.Handler())
//
// A scrape before Attach, or once the server has stopped serving, has
// matchlog_node_up 0 and none of the node's metrics; the server's counters
// and the instrumented histograms are still there.
//
// # Metrics
//
// Units are base units: positions and sizes in bytes, durations in
// seconds. Positions are log positions, as Aeron counts them. Counters
// count since the process started the node (the commands replayed at start
// are not counted); gauges are the value at the scrape.
//
//	matchlog_node_up                           gauge    1 if the node's duty cycle answered this scrape
//	matchlog_log_append_position_bytes         gauge    appended log position P
//	matchlog_log_durable_position_bytes        gauge    log position durable at the file sync level
//	matchlog_log_commit_position_bytes         gauge    commit position; a node of one member commits
//	                                                    what is durable, so it equals the durable position
//	matchlog_snapshot_position_bytes           gauge    log position S of the latest snapshot set, -1 if none
//	matchlog_archive_start_position_bytes      gauge    start A of the log recording: the earliest log byte on disk
//	matchlog_log_entries_sequenced_total       counter  log entries appended
//	matchlog_log_entries_applied_total         counter  log entries delivered to the service live
//	matchlog_log_entries_replayed_total        counter  log entries replayed at start
//	matchlog_log_writes_total                  counter  archive block writes of the log (group commits)
//	matchlog_log_syncs_total                   counter  archive syncs of the log (file sync level >= 1)
//	matchlog_snapshots_total                   counter  snapshot sets completed
//	matchlog_snapshot_written_bytes_total      counter  bytes of the snapshot recordings completed
//	matchlog_snapshot_in_progress              gauge    1 while a snapshot is being written
//	matchlog_snapshot_last_bytes               gauge    length of the last snapshot set's recordings
//	matchlog_snapshot_last_duration_seconds    gauge    how long the last snapshot set took to write
//	matchlog_snapshot_last_pause_seconds       gauge    how long the last snapshot held the duty cycle (the frozen
//	                                                    copy when pauseless, the whole write when stopping the world)
//	matchlog_connections_accepted_total        counter  TCP connections accepted
//	matchlog_connections_refused_total         counter  connections closed before a session opened, for malformed or
//	                                                    out-of-place input or a refused Connect
//	matchlog_sessions_open                     gauge    sessions open now
//	matchlog_sessions_opened_total             counter  sessions opened by a Connect
//	matchlog_sessions_closed_total{code}       counter  sessions closed, by the SessionClosed code (ClientAction,
//	                                                    Timeout, Malformed, ProtocolError, SlowConsumer, Shutdown,
//	                                                    Replaced, Refused)
//	matchlog_commands_received_total           counter  commands (and depth subscriptions) received and offered to the log
//	matchlog_commands_rejected_total{reason}   counter  commands the engine rejected, by reason (bad_price,
//	                                                    unknown_order, ... as engine.Reason names them)
//	matchlog_commands_duplicate_total          counter  commands answered Duplicate (already applied)
//	matchlog_egress_messages_total             counter  messages queued to clients
//	matchlog_egress_dropped_total{reason}      counter  messages released by the node and not queued to a client:
//	                                                    no_connection, closing, slow_consumer (the overflowing
//	                                                    message and the queue discarded with it), filtered
//	matchlog_errors_total{kind}                counter  malformed_input (connections closed for malformed or
//	                                                    out-of-place input), slow_consumer (connections closed
//	                                                    for not reading), write (failed writes to a client),
//	                                                    undecodable_command (log messages the engine could not decode)
//	matchlog_archive_written_bytes_total       counter  bytes written to the archive's files (segments, index, catalog)
//	matchlog_retention_checks_total            counter  automatic retention checks (cluster.Options.Retention)
//	matchlog_retention_proposals_total{rule}   counter  cutoffs proposed, by rule: age, size, free_disk
//	matchlog_retention_approvals_total         counter  proposals the positional rules approved and the node executed
//	matchlog_retention_limited_total           counter  approved cutoffs lowered to C or to the active segment
//	matchlog_retention_refusals_total{reason}  counter  proposals refused: no_complete_snapshot, past_snapshot,
//	                                                    active_segment, validation, archive
//	matchlog_retention_detached_segments_total counter  log segments detached (and their bytes:
//	                                                    matchlog_retention_detached_bytes_total)
//	matchlog_retention_snapshot_generations_deleted_total counter  snapshot generations deleted whole
//	matchlog_retention_recordings_deleted_total counter snapshot recordings deleted (of those generations, or orphaned)
//	matchlog_retention_unlinked_files_total    counter  files renamed *.deleted, then unlinked
//	matchlog_retention_pending_unlinks         gauge    renamed files waiting to be unlinked
//	matchlog_retention_archive_bytes           gauge    the archive directory's size at the last check
//	matchlog_retention_errors_total            counter  retention steps that failed (logged, retried)
//	matchlog_archive_free_bytes                gauge    free bytes of the file system holding the archive directory,
//	                                                    read at the scrape (absent where the file system cannot tell)
//	matchlog_archive_disk_full_errors_total    counter  file operations of the node that failed with ENOSPC (each
//	                                                    stops the node; counted even once it has stopped)
//	matchlog_archive_storage_full              gauge    1 while the node refuses commands because the archive volume's
//	                                                    free space is below its reserve (cluster.Options.StorageReserve);
//	                                                    the refused commands count in
//	                                                    matchlog_commands_rejected_total{reason="storage_full"}
//	matchlog_archive_storage_full_events_total counter  times the node became storage-full
//	matchlog_duty_cycle_seconds                histogram duration of each duty cycle that did work
//	matchlog_file_sync_seconds{op}             histogram latency of each file sync of the node directory:
//	                                                    op data (fdatasync), all (fsync), dir (directory)
//
// # A hosted service
//
// AttachHosted serves, in place of a server's, the figures of the engine
// hosted as the Go service of a real Aeron Cluster member (`matchlog
// aeron-node`): matchlog_node_up, matchlog_log_append_position_bytes (the
// position of the last message applied), matchlog_snapshot_position_bytes,
// matchlog_log_entries_applied_total (replayed messages included),
// matchlog_snapshots_total, matchlog_snapshot_last_pause_seconds and
// matchlog_snapshot_last_duration_seconds (both the service's take:
// Aeron's snapshots stop the world), matchlog_commands_duplicate_total,
// matchlog_commands_rejected_total, matchlog_errors_total{kind=
// "undecodable_command"} and matchlog_egress_dropped_total{reason=
// "not_sent"} (no response publication, closed, or back-pressured past
// the egress timeout). The others belong to our node's consensus and
// archive, which Aeron's Java components replace.
//
// The Go runtime's and the process's standard collectors are registered
// too when Options.Runtime is set (go_*, process_*).
package metrics
