package recordinglog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/matchlog/matchlog/archive"
)

// Recordings finds archive recordings by id; *archive.Catalog implements it.
// Descriptor must fail for an unknown id, as Aeron's listRecording finds
// nothing.
type Recordings interface {
	Descriptor(id int64) (archive.RecordingDescriptor, error)
}

// Snapshot is one snapshot of a recovery plan (RecordingLog.Snapshot).
type Snapshot struct {
	RecordingID         int64 `json:"recordingId"`
	LeadershipTermID    int64 `json:"leadershipTermId"`
	TermBaseLogPosition int64 `json:"termBaseLogPosition"`
	LogPosition         int64 `json:"logPosition"`
	Timestamp           int64 `json:"timestamp"`
	ServiceID           int32 `json:"serviceId"`
}

// LogRecording is the log of a recovery plan (RecordingLog.Log): the last
// TERM entry and its recording's extent from the archive catalog.
type LogRecording struct {
	RecordingID         int64 `json:"recordingId"`
	LeadershipTermID    int64 `json:"leadershipTermId"`
	TermBaseLogPosition int64 `json:"termBaseLogPosition"`
	LogPosition         int64 `json:"logPosition"`
	// StartPosition is the snapshot's log position when there is a
	// snapshot, else the recording's start.
	StartPosition int64 `json:"startPosition"`
	StopPosition  int64 `json:"stopPosition"`
	// RecordingStartPosition is the recording's start in the catalog
	// (not part of Aeron's Log): the earliest position still on disk.
	RecordingStartPosition int64 `json:"recordingStartPosition"`
	InitialTermID          int32 `json:"initialTermId"`
	TermBufferLength       int32 `json:"termBufferLength"`
	MTULength              int32 `json:"mtuLength"`
	SessionID              int32 `json:"sessionId"`
}

// Problem is one reason the latest snapshot set cannot be used.
type Problem struct {
	// ServiceID is the service whose snapshot is at fault.
	ServiceID int32 `json:"serviceId"`
	// EntryIndex and Offset locate the entry involved, -1 if none.
	EntryIndex int    `json:"entryIndex"`
	Offset     int64  `json:"offset"`
	Reason     string `json:"reason"`
}

func (p Problem) String() string {
	if p.EntryIndex < 0 {
		return fmt.Sprintf("service %d: %s", p.ServiceID, p.Reason)
	}
	return fmt.Sprintf("service %d: entry #%d at offset %d: %s", p.ServiceID, p.EntryIndex, p.Offset, p.Reason)
}

// RecoveryPlan is what a node needs to recover (RecordingLog.RecoveryPlan),
// plus the checks Aeron leaves out.
type RecoveryPlan struct {
	LastLeadershipTermID    int64 `json:"lastLeadershipTermId"`
	LastTermBaseLogPosition int64 `json:"lastTermBaseLogPosition"`
	AppendedLogPosition     int64 `json:"appendedLogPosition"`
	CommittedLogPosition    int64 `json:"committedLogPosition"`
	// Snapshots holds the latest set: the consensus module's first, then
	// service 0, 1, ... . Empty when there is no valid consensus-module
	// snapshot; shorter than ServiceCount+1 when Problems is not empty.
	Snapshots []Snapshot `json:"snapshots"`
	// Log is nil when the recording log has no valid TERM entry.
	Log *LogRecording `json:"log"`
	// ReplayFrom and ReplayTo are the log range to replay after loading
	// the snapshots: [Log.StartPosition, Log.StopPosition), or both 0 when
	// there is no log.
	ReplayFrom int64 `json:"replayFrom"`
	ReplayTo   int64 `json:"replayTo"`

	ServiceCount int `json:"serviceCount"`
	// Problems lists why the latest snapshot set is incomplete or
	// unusable. A node must refuse to start while it is not empty. Which
	// fix applies depends on the problem (a wrong service count, a
	// damaged set with an earlier complete one to fall back to, ...):
	// package cluster's CheckPlan computes it.
	Problems []Problem `json:"problems"`
}

// UnknownRecordingError is PlanRecovery's error when the log's recording
// (the last TERM's) is not a VALID recording of the archive (Aeron's
// "unknown recording id").
type UnknownRecordingError struct {
	Entry Entry // the TERM entry
	Err   error // the archive's answer
}

func (e *UnknownRecordingError) Error() string {
	return fmt.Sprintf("recordinglog: unknown recording id: %d (%v): %v", e.Entry.RecordingID, e.Entry, e.Err)
}

func (e *UnknownRecordingError) Unwrap() error { return e.Err }

// ErrIncompleteSnapshot is what RecoveryPlan.Err wraps.
var ErrIncompleteSnapshot = errors.New("recordinglog: latest snapshot set is incomplete")

// Err returns nil when the plan can be followed, else an error wrapping
// ErrIncompleteSnapshot that lists the problems.
func (p *RecoveryPlan) Err() error {
	if len(p.Problems) == 0 {
		return nil
	}
	var b strings.Builder
	for i, pr := range p.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(pr.String())
	}
	s := p.Snapshots[0]
	return fmt.Errorf("%w (consensus-module snapshot recording %d, term %d, logPosition %d): %s",
		ErrIncompleteSnapshot, s.RecordingID, s.LeadershipTermID, s.LogPosition, b.String())
}

// String renders the plan as one line, in the form the fixture README gives
// for ClusterTool recovery-plan:
//
//	lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264, committedLogPosition=115744, snapshots=[rec2 svc-1 @115744, rec1 svc0 @115744], log=(recordingId 0, startPosition 115744, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)
//
// with log=null when there is no log.
func (p *RecoveryPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "lastLeadershipTermId=%d, lastTermBaseLogPosition=%d, appendedLogPosition=%d, committedLogPosition=%d, snapshots=[",
		p.LastLeadershipTermID, p.LastTermBaseLogPosition, p.AppendedLogPosition, p.CommittedLogPosition)
	for i, s := range p.Snapshots {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "rec%d svc%d @%d", s.RecordingID, s.ServiceID, s.LogPosition)
	}
	b.WriteString("], log=")
	if l := p.Log; l == nil {
		b.WriteString("null")
	} else {
		fmt.Fprintf(&b, "(recordingId %d, startPosition %d, stopPosition %d, initialTermId %d, termBufferLength %d, mtuLength %d)",
			l.RecordingID, l.StartPosition, l.StopPosition, l.InitialTermID, l.TermBufferLength, l.MTULength)
	}
	return b.String()
}

// CreateRecoveryPlan plans recovery from the log's entries (see PlanRecovery).
func (l *Log) CreateRecoveryPlan(recs Recordings, serviceCount int) (*RecoveryPlan, error) {
	return PlanRecovery(l.entries, recs, serviceCount)
}

// PlanRecovery builds the recovery plan from entries in Aeron's sorted order
// (Log.Entries), as RecordingLog.createRecoveryPlan does:
//
//   - scanning backwards, the last valid SNAPSHOT of serviceId -1 is the
//     consensus module's snapshot, and the last valid TERM is the log;
//   - the services' snapshots are the serviceCount entries just before the
//     consensus module's (service 0 immediately before it, then 1, ...),
//     each a SNAPSHOT of the same term and log position;
//   - the log's recording must be in recs (else an error, as Aeron's
//     "unknown recording id"); replay starts at the snapshot's position, or
//     at the recording's start when there is no snapshot, and ends at the
//     recording's stop position;
//   - the recording's stop is what recs says: Aeron's createRecoveryPlan
//     asks the running archive, which has settled an active recording
//     (stop -1) to its last whole frame when it opened the catalog; pass
//     an archive.SettledCatalog to see the same on a stopped directory;
//   - lastLeadershipTermId and lastTermBaseLogPosition come from the TERM
//     (else the snapshot, else -1 and 0); appendedLogPosition is the
//     recording's stop (else the snapshot's position); committedLogPosition
//     is the TERM's logPosition if it is committed, else the snapshot's
//     position (else 0).
//
// Aeron takes an entry that does not fit the set silently: it skips it, and
// the consensus module then hands that service recording id 0 through the
// RecoveryState counter (or fails on an index out of range), so the service
// tries to load the wrong recording as its snapshot; an invalid service entry
// with the right term and position is even used. Here the set must be
// complete and valid: every service in [0, serviceCount) needs a valid
// SNAPSHOT entry at the consensus module's term and log position in its
// place, and the snapshot position must lie inside the log recording. Each
// gap is listed in RecoveryPlan.Problems, naming the entry; Snapshots then
// holds only the usable entries. Like Aeron, the plan never falls back to an
// older set by itself: an operator does that with InvalidateLatestSnapshot
// (ClusterTool invalidate-latest-snapshot), after which the previous set,
// or none, is the latest.
func PlanRecovery(entries []Entry, recs Recordings, serviceCount int) (*RecoveryPlan, error) {
	if serviceCount < 0 {
		return nil, fmt.Errorf("recordinglog: negative service count %d", serviceCount)
	}
	p := &RecoveryPlan{LastLeadershipTermID: NullValue, ServiceCount: serviceCount, Snapshots: []Snapshot{}, Problems: []Problem{}}
	snapshotIndex, logIndex := -1, -1
	for i := len(entries) - 1; i >= 0 && (snapshotIndex < 0 || logIndex < 0); i-- {
		e := &entries[i]
		switch {
		case snapshotIndex < 0 && isValidSnapshot(e) && e.ServiceID == ConsensusModuleServiceID:
			snapshotIndex = i
		case logIndex < 0 && isValidTerm(e) && e.RecordingID != NullValue:
			logIndex = i
		}
	}
	if snapshotIndex >= 0 {
		p.addSnapshots(entries, snapshotIndex)
		s := p.Snapshots[0]
		p.LastLeadershipTermID = s.LeadershipTermID
		p.LastTermBaseLogPosition = s.TermBaseLogPosition
		p.AppendedLogPosition = s.LogPosition
		p.CommittedLogPosition = s.LogPosition
	}
	if logIndex >= 0 {
		e := &entries[logIndex]
		d, err := recs.Descriptor(e.RecordingID)
		if errors.Is(err, archive.ErrUnsettled) {
			// Known, but active and not settleable without a repair
			// (see archive.SettledCatalog): not an unknown recording.
			return nil, fmt.Errorf("recordinglog: log recording %d (TERM of leadership term %d): %w", e.RecordingID, e.LeadershipTermID, err)
		}
		if err != nil {
			return nil, &UnknownRecordingError{Entry: *e, Err: err}
		}
		start := d.StartPosition
		if snapshotIndex >= 0 {
			start = p.Snapshots[0].LogPosition
			cm := &entries[snapshotIndex]
			if start < d.StartPosition || (d.StopPosition != archive.NullPosition && start > d.StopPosition) {
				p.Problems = append(p.Problems, Problem{ServiceID: ConsensusModuleServiceID, EntryIndex: cm.Index, Offset: cm.Offset,
					Reason: fmt.Sprintf("snapshot position %d is outside log recording %d [%d, %d]",
						start, d.RecordingID, d.StartPosition, d.StopPosition)})
			}
		}
		p.Log = &LogRecording{
			RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition,
			StartPosition: start, StopPosition: d.StopPosition, RecordingStartPosition: d.StartPosition,
			InitialTermID: d.InitialTermID, TermBufferLength: d.TermBufferLength,
			MTULength: d.MTULength, SessionID: d.SessionID,
		}
		p.LastLeadershipTermID = e.LeadershipTermID
		p.LastTermBaseLogPosition = e.TermBaseLogPosition
		p.AppendedLogPosition = d.StopPosition
		if e.LogPosition != NullValue {
			p.CommittedLogPosition = e.LogPosition
		}
		p.ReplayFrom, p.ReplayTo = start, d.StopPosition
	}
	return p, nil
}

// addSnapshots is Aeron's addSnapshots with the completeness checks.
func (p *RecoveryPlan) addSnapshots(entries []Entry, snapshotIndex int) {
	cm := &entries[snapshotIndex]
	p.Snapshots = append(p.Snapshots, snapshotOf(cm))
	for k := 1; k <= p.ServiceCount; k++ {
		want := int32(k - 1)
		i := snapshotIndex - k
		if i < 0 {
			p.Problems = append(p.Problems, Problem{ServiceID: want, EntryIndex: -1, Offset: -1,
				Reason: fmt.Sprintf("no entry before the consensus-module snapshot (entry #%d) for it "+
					"(Aeron: snapshot missing for service at index %d)", cm.Index, k)})
			continue
		}
		e := &entries[i]
		var why string
		switch {
		case e.Type != TypeSnapshot:
			why = fmt.Sprintf("expected this service's SNAPSHOT here, found %s", e.Type)
		case e.LeadershipTermID != cm.LeadershipTermID || e.LogPosition != cm.LogPosition:
			why = fmt.Sprintf("expected this service's SNAPSHOT at term %d logPosition %d, found one of service %d at term %d logPosition %d",
				cm.LeadershipTermID, cm.LogPosition, e.ServiceID, e.LeadershipTermID, e.LogPosition)
		case e.ServiceID != want:
			why = fmt.Sprintf("expected this service's SNAPSHOT, found one of service %d", e.ServiceID)
		case !e.Valid:
			why = fmt.Sprintf("the snapshot (recording %d) is marked invalid", e.RecordingID)
		}
		if why != "" {
			p.Problems = append(p.Problems, Problem{ServiceID: want, EntryIndex: e.Index, Offset: e.Offset, Reason: why})
			continue
		}
		p.Snapshots = append(p.Snapshots, snapshotOf(e))
	}
}

func snapshotOf(e *Entry) Snapshot {
	return Snapshot{
		RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
		TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition,
		Timestamp: e.Timestamp, ServiceID: e.ServiceID,
	}
}
