package main

import (
	"github.com/matchlog/matchlog/cluster/recordinglog"
)

// The JSON documents of `matchlog cluster ... --json`. Field names are
// snake_case; positions are log positions in bytes; a timestamp's unit is in
// its name, except the cluster time of recording.log entries, whose unit
// depends on who wrote them (timestamp_unit beside it). The help of each
// command lists its fields (jsonDoc).

// entryJSON is one recording.log entry.
type entryJSON struct {
	Index               int    `json:"index" doc:"the entry's index in the file"`
	Offset              int64  `json:"offset" doc:"byte offset in recording.log"`
	Type                string `json:"type" doc:"TERM, SNAPSHOT or STANDBY_SNAPSHOT"`
	Valid               bool   `json:"valid"`
	RecordingID         int64  `json:"recording_id"`
	LeadershipTermID    int64  `json:"leadership_term_id"`
	TermBaseLogPosition int64  `json:"term_base_log_position"`
	LogPosition         int64  `json:"log_position" doc:"-1 for an open TERM"`
	Timestamp           int64  `json:"timestamp" doc:"cluster time, in timestamp_unit"`
	TimestampUnit       string `json:"timestamp_unit" doc:"ns in a matchlog node directory, ms (Aeron's default cluster time unit) otherwise"`
	ServiceID           int32  `json:"service_id" doc:"-1: the consensus module"`
	ArchiveEndpoint     string `json:"archive_endpoint,omitempty" doc:"STANDBY_SNAPSHOT only"`
}

// entriesJSON is `cluster recording-log --json`.
type entriesJSON struct {
	Entries []entryJSON `json:"entries" doc:"sorted as Aeron's RecordingLog sorts them"`
}

func toEntriesJSON(entries []recordinglog.Entry, unit string) []entryJSON {
	out := make([]entryJSON, 0, len(entries))
	for _, e := range entries {
		out = append(out, entryJSON{Index: e.Index, Offset: e.Offset, Type: e.Type.String(), Valid: e.Valid,
			RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID, TermBaseLogPosition: e.TermBaseLogPosition,
			LogPosition: e.LogPosition, Timestamp: e.Timestamp, TimestampUnit: unit, ServiceID: e.ServiceID,
			ArchiveEndpoint: e.ArchiveEndpoint})
	}
	return out
}

// invalidateJSON is `cluster invalidate-latest-snapshot --json`.
type invalidateJSON struct {
	Invalidated bool        `json:"invalidated" doc:"false: there was no valid snapshot set (exit 1)"`
	Entries     []entryJSON `json:"entries" doc:"the recording log afterwards"`
}

// planSnapshotJSON is one snapshot of a recovery plan.
type planSnapshotJSON struct {
	RecordingID         int64  `json:"recording_id"`
	LeadershipTermID    int64  `json:"leadership_term_id"`
	TermBaseLogPosition int64  `json:"term_base_log_position"`
	LogPosition         int64  `json:"log_position"`
	Timestamp           int64  `json:"timestamp" doc:"cluster time, in timestamp_unit"`
	TimestampUnit       string `json:"timestamp_unit" doc:"ns (matchlog) or ms (Aeron's default)"`
	ServiceID           int32  `json:"service_id" doc:"-1: the consensus module"`
}

// planLogJSON is the log of a recovery plan.
type planLogJSON struct {
	RecordingID            int64 `json:"recording_id"`
	LeadershipTermID       int64 `json:"leadership_term_id"`
	TermBaseLogPosition    int64 `json:"term_base_log_position"`
	LogPosition            int64 `json:"log_position"`
	StartPosition          int64 `json:"start_position" doc:"the snapshot's log position, else the recording's start"`
	StopPosition           int64 `json:"stop_position"`
	RecordingStartPosition int64 `json:"recording_start_position" doc:"the earliest position still on disk"`
	InitialTermID          int32 `json:"initial_term_id"`
	TermBufferLength       int32 `json:"term_buffer_length"`
	MTULength              int32 `json:"mtu_length"`
	SessionID              int32 `json:"session_id"`
}

// planProblemJSON is one reason the latest snapshot set cannot be used.
type planProblemJSON struct {
	ServiceID  int32  `json:"service_id"`
	EntryIndex int    `json:"entry_index" doc:"-1: no entry"`
	Offset     int64  `json:"offset" doc:"byte offset of the entry in recording.log, -1: none"`
	Reason     string `json:"reason"`
}

// planJSON is `cluster recovery-plan --json`.
type planJSON struct {
	Complete                bool               `json:"complete" doc:"the plan can be followed (else exit 1)"`
	LastLeadershipTermID    int64              `json:"last_leadership_term_id"`
	LastTermBaseLogPosition int64              `json:"last_term_base_log_position"`
	AppendedLogPosition     int64              `json:"appended_log_position"`
	CommittedLogPosition    int64              `json:"committed_log_position"`
	Snapshots               []planSnapshotJSON `json:"snapshots" doc:"the latest set: the consensus module's first, then service 0, 1, ..."`
	Log                     *planLogJSON       `json:"log" doc:"null when the recording log has no valid TERM"`
	ReplayFrom              int64              `json:"replay_from" doc:"the log range to replay after loading the snapshots"`
	ReplayTo                int64              `json:"replay_to"`
	ServiceCount            int                `json:"service_count"`
	Problems                []planProblemJSON  `json:"problems"`
}

func toPlanJSON(p *recordinglog.RecoveryPlan, unit string) planJSON {
	out := planJSON{Complete: p.Err() == nil, LastLeadershipTermID: p.LastLeadershipTermID,
		LastTermBaseLogPosition: p.LastTermBaseLogPosition, AppendedLogPosition: p.AppendedLogPosition,
		CommittedLogPosition: p.CommittedLogPosition, ReplayFrom: p.ReplayFrom, ReplayTo: p.ReplayTo,
		ServiceCount: p.ServiceCount, Snapshots: []planSnapshotJSON{}, Problems: []planProblemJSON{}}
	for _, s := range p.Snapshots {
		out.Snapshots = append(out.Snapshots, planSnapshotJSON{s.RecordingID, s.LeadershipTermID, s.TermBaseLogPosition,
			s.LogPosition, s.Timestamp, unit, s.ServiceID})
	}
	if l := p.Log; l != nil {
		out.Log = &planLogJSON{l.RecordingID, l.LeadershipTermID, l.TermBaseLogPosition, l.LogPosition, l.StartPosition,
			l.StopPosition, l.RecordingStartPosition, l.InitialTermID, l.TermBufferLength, l.MTULength, l.SessionID}
	}
	for _, pr := range p.Problems {
		out.Problems = append(out.Problems, planProblemJSON{pr.ServiceID, pr.EntryIndex, pr.Offset, pr.Reason})
	}
	return out
}

// recordingLogJSON is the recording log as describe shows it.
type recordingLogJSON struct {
	Path      string      `json:"path"`
	SizeBytes int64       `json:"size_bytes"`
	Entries   []entryJSON `json:"entries"`
}

// describeDoc is `cluster describe --json`.
type describeDoc struct {
	RecordingLog recordingLogJSON      `json:"recording_log"`
	Recordings   []*describedRecording `json:"recordings" doc:"the archive recordings the recording log references, in order of first reference"`
	Node         *nodeDescription      `json:"node,omitempty" doc:"a matchlog node directory only"`
}

// clusterTimeUnit is the unit of the cluster time in recording.log of the
// node directory d: ns in a matchlog node's (its sequencer's clock, and the
// time unit of its log's NewLeadershipTermEvent), ms in Aeron's (the
// consensus module's default clusterTimeUnit).
func clusterTimeUnit(d string) string {
	if m, err := readClusterMark(d); err == nil && m.isMatchlog() {
		return "ns"
	}
	return "ms"
}
