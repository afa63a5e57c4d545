package cluster

import (
	"context"
	"log/slog"

	"github.com/matchlog/matchlog/cluster/recordinglog"
)

// Lifecycle log
//
// The node writes one record to Options.Logger per lifecycle event, never
// per message. Messages and attributes (positions are log positions in
// bytes, durations in seconds as floats, recordings by archive recording
// id; -1 where there is none):
//
//	"recovery plan"    Info   snapshot_position (S), snapshot_term, cm_snapshot_recording,
//	                          service_snapshot_recording, log_recording, replay_from, replay_to,
//	                          last_term
//	"open"             Info   dir, term, log_recording, log_position, durable_position,
//	                          snapshot_position, archive_start, replayed_entries,
//	                          replayed_bytes, snapshot_load_s, replay_s, open_s, file_sync_level
//	"open failed"      Error  dir, error
//	"snapshot start"   Info   position, term, mode (pauseless or stop_the_world)
//	"snapshot end"     Info   position, term, mode, bytes, duration_s (the whole write),
//	                          pause_s (the node's goroutine held), archive_s, log_sync_s,
//	                          service_recording, cm_recording
//	"snapshot failed"  Error  position, term, mode, error
//	"node failed"      Error  log_position, durable_position, error (the node stops:
//	                          every later DoWork returns it)
//	"close"            Info   log_position, durable_position, snapshot_position,
//	                          snapshots, error (only if closing failed)
//
// Automatic retention (autoretention.go; Options.Retention) adds, once per
// check and decision:
//
//	"retention proposed"  Info   rule (age, size, free-disk), recording, cutoff, start, and the
//	                             rule's numbers (max_age_s, before_ms; archive_bytes,
//	                             budget_bytes, freeing_bytes; free_bytes, min_free_bytes)
//	"retention approved"  Info   rules, recording, proposed, A, P, S, C, active_segment, cutoff,
//	                             limited_by ("", snapshot, active-segment), segments, kept_sets
//	"retention refused"   Warn   the same numbers, reason (no-complete-snapshot, past-snapshot,
//	                             active-segment, validation, archive), detail
//	"retention deleted snapshot"   Info  snapshot_position, term, entries_invalidated, recordings, why
//	"retention deleted recording"  Info  recording, snapshot_position (-1 orphan), files, oldest_kept, why
//	"retention check failed", "retention delete failed", "retention unlink failed"
//	                      Warn   error (retried by a later check; retention never stops the node)
//	"retention validation failed after detach"  Error  recording, start, previous_start, error, fix
//
// The storage gate (storage.go) adds:
//
//	"storage full"      Warn   path (the archive directory), free_bytes, reserve_bytes,
//	                           needed_bytes, effect: the node refuses commands
//	                    Error  path (the file whose operation failed with ENOSPC),
//	                           free_bytes, reserve_bytes, needed_bytes (where the file
//	                           system tells its free space), effect, error: the node stops
//	"storage available" Info   path, free_bytes, reserve_bytes, refused: commands taken again
//
// Records are built only at these events; the duty cycle's steady state
// logs nothing and allocates nothing for logging.

func (n *Node) logPlan(p *recordinglog.RecoveryPlan) {
	snapPos, snapTerm, cmRec, svcRec := int64(-1), int64(-1), int64(-1), int64(-1)
	if len(p.Snapshots) > 0 {
		snapPos, snapTerm, cmRec = p.Snapshots[0].LogPosition, p.Snapshots[0].LeadershipTermID, p.Snapshots[0].RecordingID
	}
	if len(p.Snapshots) > 1 {
		svcRec = p.Snapshots[1].RecordingID
	}
	logRec := int64(-1)
	if p.Log != nil {
		logRec = p.Log.RecordingID
	}
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "recovery plan",
		slog.Int64("snapshot_position", snapPos), slog.Int64("snapshot_term", snapTerm),
		slog.Int64("cm_snapshot_recording", cmRec), slog.Int64("service_snapshot_recording", svcRec),
		slog.Int64("log_recording", logRec), slog.Int64("replay_from", p.ReplayFrom), slog.Int64("replay_to", p.ReplayTo),
		slog.Int64("last_term", p.LastLeadershipTermID))
}

func (n *Node) logOpen() {
	st := n.Stats()
	r := n.recovery
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "open",
		slog.String("dir", n.opts.Dir), slog.Int64("term", n.termID), slog.Int64("log_recording", n.recID),
		slog.Int64("log_position", st.LogPosition), slog.Int64("durable_position", st.DurableLog),
		slog.Int64("snapshot_position", st.SnapshotPosition), slog.Int64("archive_start", st.ArchiveStart),
		slog.Int64("replayed_entries", r.ReplayedEntries), slog.Int64("replayed_bytes", r.ReplayedBytes),
		slog.Float64("snapshot_load_s", r.SnapshotLoad.Seconds()), slog.Float64("replay_s", r.Replay.Seconds()),
		slog.Float64("capture_s", r.Capture.Seconds()), slog.Float64("open_s", r.Total.Seconds()), slog.Int("file_sync_level", int(n.opts.FileSyncLevel)))
}

func (n *Node) logOpenFailed(err error) {
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "open failed",
		slog.String("dir", n.opts.Dir), slog.String("error", err.Error()))
}

func snapshotModeName(pauseless bool) string {
	if pauseless {
		return "pauseless"
	}
	return "stop_the_world"
}

func (n *Node) logSnapshotStart(job *snapshotJob) {
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "snapshot start",
		slog.Int64("position", job.info.LogPosition), slog.Int64("term", job.info.LeadershipTermID),
		slog.String("mode", snapshotModeName(job.pauseless)))
}

func (n *Node) logSnapshotEnd(job *snapshotJob) {
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "snapshot end",
		slog.Int64("position", job.info.LogPosition), slog.Int64("term", job.info.LeadershipTermID),
		slog.String("mode", snapshotModeName(job.pauseless)), slog.Int64("bytes", job.bytes),
		slog.Float64("duration_s", job.duration.Seconds()), slog.Float64("pause_s", job.prepare.Seconds()),
		slog.Float64("archive_s", job.archive.Seconds()), slog.Float64("log_sync_s", job.logSync.Seconds()),
		slog.Int64("service_recording", job.svcRec), slog.Int64("cm_recording", job.cmRec))
}

func (n *Node) logSnapshotFailed(job *snapshotJob, err error) {
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "snapshot failed",
		slog.Int64("position", job.info.LogPosition), slog.Int64("term", job.info.LeadershipTermID),
		slog.String("mode", snapshotModeName(job.pauseless)), slog.String("error", err.Error()))
}

func (n *Node) logFailed(err error) {
	var pos, durable int64
	if n.pub != nil {
		pos = n.pub.Position()
	}
	if n.rec != nil {
		durable = n.rec.Position()
	}
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "node failed",
		slog.Int64("log_position", pos), slog.Int64("durable_position", durable), slog.String("error", err.Error()))
}

func (n *Node) logClose(err error) {
	st := n.Stats()
	attrs := []slog.Attr{slog.Int64("log_position", st.LogPosition), slog.Int64("durable_position", st.DurableLog),
		slog.Int64("snapshot_position", st.SnapshotPosition), slog.Int64("snapshots", st.Snapshots)}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	n.opts.Logger.LogAttrs(context.Background(), level, "close", attrs...)
}
