package cluster

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/matchlog/matchlog/internal/stream"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Snapshot type ids (ConsensusModule and ClusteredServiceContainer
// Configuration.SNAPSHOT_TYPE_ID).
const (
	ConsensusModuleSnapshotTypeID int64 = 1
	ServiceSnapshotTypeID         int64 = 2
)

// Aeron's initial service session ids (ConsensusModuleAgent): the embedded
// node has no service-originated messages, so these never change.
const (
	initialNextServiceSessionID = math.MinInt64 + 1
	initialLogServiceSessionID  = math.MinInt64
)

// ErrSnapshot marks every error about a snapshot that cannot be loaded.
var ErrSnapshot = errors.New("cluster: snapshot")

// session is the consensus module's record of an open session.
type session struct {
	ClientSession
	CorrelationID     int64
	OpenedLogPosition int64
}

// cmState is the consensus module's state: what its snapshot holds. It is
// changed only by log entries as the log is read (live or replayed) and by
// the service's timer calls, so it is the same after a replay.
type cmState struct {
	nextSessionID int64
	sessions      map[int64]*session
	timers        map[int64]int64 // correlation id -> deadline
}

func newCMState() *cmState {
	return &cmState{nextSessionID: 1, sessions: map[int64]*session{}, timers: map[int64]int64{}}
}

func (s *cmState) sessionIDs() []int64 {
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// frozenCM is a copy of cmState for a snapshot written in the background.
type frozenCM struct {
	nextSessionID int64
	sessions      []session
	timers        [][2]int64
}

func (s *cmState) freeze() *frozenCM {
	f := &frozenCM{nextSessionID: s.nextSessionID}
	for _, id := range s.sessionIDs() {
		f.sessions = append(f.sessions, *s.sessions[id])
	}
	for id, d := range s.timers {
		f.timers = append(f.timers, [2]int64{id, d})
	}
	sort.Slice(f.timers, func(i, j int) bool { return f.timers[i][0] < f.timers[j][0] })
	return f
}

// offerAll offers msg, calling idle while back-pressured.
func offerAll(pub Publication, msg []byte, idle func() error) error {
	for {
		pos, err := pub.Offer(msg)
		if err != nil {
			return err
		}
		if pos >= 0 {
			return nil
		}
		if pos != stream.BackPressured && pos != stream.AdminAction {
			return fmt.Errorf("cluster: offer failed: %d", pos)
		}
		if idle != nil {
			if err := idle(); err != nil {
				return err
			}
		}
	}
}

func encodeMarker(buf []byte, typeID int64, info SnapshotInfo, mark acs.SnapshotMark) []byte {
	var e acs.SnapshotMarkerEncoder
	buf = buf[:acs.MessageHeaderEncodedLength+acs.SnapshotMarkerBlockLength]
	_ = e.WrapAndApplyHeader(buf, 0)
	e.TypeId(typeID).LogPosition(info.LogPosition).LeadershipTermId(info.LeadershipTermID).Index(0).
		Mark(mark).TimeUnit(info.TimeUnit)
	if info.AppVersion != 0 {
		e.AppVersion(info.AppVersion)
	} else {
		e.AppVersionNull()
	}
	return buf
}

// writeCMSnapshot writes the consensus module's snapshot as Aeron's
// ConsensusModuleSnapshotTaker does.
func writeCMSnapshot(pub Publication, idle func() error, info SnapshotInfo, f *frozenCM) error {
	buf := make([]byte, 4096)
	if err := offerAll(pub, encodeMarker(buf, ConsensusModuleSnapshotTypeID, info, acs.SnapshotMarkBEGIN), idle); err != nil {
		return err
	}
	var cm acs.ConsensusModuleEncoder
	b := buf[:acs.MessageHeaderEncodedLength+acs.ConsensusModuleBlockLength]
	_ = cm.WrapAndApplyHeader(b, 0)
	cm.NextSessionId(f.nextSessionID).NextServiceSessionId(initialNextServiceSessionID).
		LogServiceSessionId(initialLogServiceSessionID).PendingMessageCapacity(0)
	if err := offerAll(pub, b, idle); err != nil {
		return err
	}
	for i := range f.sessions {
		s := &f.sessions[i]
		var e acs.ClusterSessionEncoder
		n := acs.MessageHeaderEncodedLength + acs.ClusterSessionBlockLength + 4 + len(s.ResponseChannel)
		if n > len(buf) {
			buf = make([]byte, n)
		}
		if err := e.WrapAndApplyHeader(buf, 0); err != nil {
			return err
		}
		e.ClusterSessionId(s.ID).CorrelationId(s.CorrelationID).OpenedLogPosition(s.OpenedLogPosition).
			TimeOfLastActivity(-1).CloseReason(acs.CloseReasonCLIENTACTION).ResponseStreamId(s.ResponseStreamID)
		if err := e.PutResponseChannelString(s.ResponseChannel); err != nil {
			return err
		}
		if err := offerAll(pub, buf[:acs.MessageHeaderEncodedLength+e.EncodedLength()], idle); err != nil {
			return err
		}
	}
	for _, t := range f.timers {
		var e acs.TimerEncoder
		b := buf[:acs.MessageHeaderEncodedLength+acs.TimerBlockLength]
		_ = e.WrapAndApplyHeader(b, 0)
		e.CorrelationId(t[0]).Deadline(t[1])
		if err := offerAll(pub, b, idle); err != nil {
			return err
		}
	}
	var pt acs.PendingMessageTrackerEncoder
	b = buf[:acs.MessageHeaderEncodedLength+acs.PendingMessageTrackerBlockLength]
	_ = pt.WrapAndApplyHeader(b, 0)
	pt.NextServiceSessionId(initialNextServiceSessionID).LogServiceSessionId(initialLogServiceSessionID).
		PendingMessageCapacity(0).ServiceId(0)
	if err := offerAll(pub, b, idle); err != nil {
		return err
	}
	return offerAll(pub, encodeMarker(buf, ConsensusModuleSnapshotTypeID, info, acs.SnapshotMarkEND), idle)
}

// writeServiceSessions writes the container's part of a service snapshot:
// BEGIN, one ClientSession per open session, END (ServiceSnapshotTaker).
func writeServiceSessions(pub Publication, idle func() error, info SnapshotInfo, sessions []session) error {
	buf := make([]byte, 4096)
	if err := offerAll(pub, encodeMarker(buf, ServiceSnapshotTypeID, info, acs.SnapshotMarkBEGIN), idle); err != nil {
		return err
	}
	for i := range sessions {
		s := &sessions[i]
		n := acs.MessageHeaderEncodedLength + acs.ClientSessionBlockLength + 8 + len(s.ResponseChannel) + len(s.EncodedPrincipal)
		if n > len(buf) {
			buf = make([]byte, n)
		}
		var e acs.ClientSessionEncoder
		if err := e.WrapAndApplyHeader(buf, 0); err != nil {
			return err
		}
		e.ClusterSessionId(s.ID).ResponseStreamId(s.ResponseStreamID)
		if err := e.PutResponseChannelString(s.ResponseChannel); err != nil {
			return err
		}
		if err := e.PutEncodedPrincipal(s.EncodedPrincipal); err != nil {
			return err
		}
		if err := offerAll(pub, buf[:acs.MessageHeaderEncodedLength+e.EncodedLength()], idle); err != nil {
			return err
		}
	}
	return offerAll(pub, encodeMarker(buf, ServiceSnapshotTypeID, info, acs.SnapshotMarkEND), idle)
}

// markerLoader applies Aeron's SnapshotMarker rules: BEGIN first (of the
// expected type), END last with the same fields.
type markerLoader struct {
	typeID  int64
	begun   bool
	ended   bool
	info    SnapshotInfo
	err     error
	index   int
	lastPos int64
}

func (m *markerLoader) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("%w: fragment %d at position %d: %s", ErrSnapshot, m.index, m.lastPos, fmt.Sprintf(format, args...))
	}
}

// header checks the schema of a fragment and returns its template id.
func (m *markerLoader) header(buf []byte) (template uint16, ok bool) {
	h, err := acs.WrapMessageHeader(buf, 0)
	if err != nil {
		m.fail("short message")
		return 0, false
	}
	if h.SchemaId() != acs.SchemaID {
		m.fail("schema %d, want %d", h.SchemaId(), acs.SchemaID)
		return 0, false
	}
	return h.TemplateId(), true
}

// marker handles a SnapshotMarker; it returns true at END.
func (m *markerLoader) marker(buf []byte) bool {
	var d acs.SnapshotMarkerDecoder
	if err := d.WrapWithHeader(buf, 0); err != nil {
		m.fail("bad SnapshotMarker: %v", err)
		return false
	}
	if d.TypeId() != m.typeID {
		m.fail("unexpected snapshot type %d, want %d", d.TypeId(), m.typeID)
		return false
	}
	info := SnapshotInfo{LogPosition: d.LogPosition(), LeadershipTermID: d.LeadershipTermId(), TimeUnit: d.TimeUnit()}
	if d.HasAppVersion() {
		info.AppVersion = d.AppVersion()
	}
	switch d.Mark() {
	case acs.SnapshotMarkBEGIN:
		if m.begun {
			m.fail("already in snapshot")
			return false
		}
		m.begun, m.info = true, info
	case acs.SnapshotMarkEND:
		if !m.begun {
			m.fail("missing begin snapshot")
			return false
		}
		if info != m.info {
			m.fail("END %+v differs from BEGIN %+v", info, m.info)
			return false
		}
		m.ended = true
		return true
	}
	return false
}

// loadCMSnapshot reads a consensus-module snapshot strictly.
func loadCMSnapshot(src stream.FragmentSource, want SnapshotInfo) (*cmState, error) {
	st := newCMState()
	m := &markerLoader{typeID: ConsensusModuleSnapshotTypeID}
	sawCM := false
	handler := func(buf []byte, offset, length int, position int64) {
		m.index++
		m.lastPos = position
		if m.err != nil || m.ended {
			if m.err == nil {
				m.fail("data after END")
			}
			return
		}
		b := buf[offset : offset+length]
		tmpl, ok := m.header(b)
		if !ok {
			return
		}
		if !m.begun && tmpl != acs.SnapshotMarkerTemplateID {
			m.fail("template %d before BEGIN", tmpl)
			return
		}
		switch tmpl {
		case acs.SnapshotMarkerTemplateID:
			m.marker(b)
		case acs.ConsensusModuleTemplateID:
			var d acs.ConsensusModuleDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				m.fail("bad ConsensusModule: %v", err)
				return
			}
			st.nextSessionID = d.NextSessionId()
			sawCM = true
		case acs.ClusterSessionTemplateID:
			var d acs.ClusterSessionDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				m.fail("bad ClusterSession: %v", err)
				return
			}
			ch, err := d.ResponseChannel()
			if err != nil {
				m.fail("bad ClusterSession channel: %v", err)
				return
			}
			s := &session{ClientSession: ClientSession{ID: d.ClusterSessionId(), ResponseStreamID: d.ResponseStreamId(), ResponseChannel: string(ch)},
				CorrelationID: d.CorrelationId(), OpenedLogPosition: d.OpenedLogPosition()}
			st.sessions[s.ID] = s
		case acs.TimerTemplateID:
			var d acs.TimerDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				m.fail("bad Timer: %v", err)
				return
			}
			st.timers[d.CorrelationId()] = d.Deadline()
		case acs.PendingMessageTrackerTemplateID:
			var d acs.PendingMessageTrackerDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				m.fail("bad PendingMessageTracker: %v", err)
			}
		default:
			m.fail("unknown template %d", tmpl)
		}
	}
	for m.err == nil && !m.ended {
		if src.Poll(handler, 64) == 0 {
			break
		}
	}
	if err := sourceErr(src); err != nil && m.err == nil {
		m.err = fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if m.err != nil {
		return nil, m.err
	}
	if !m.ended {
		return nil, fmt.Errorf("%w: consensus-module snapshot ended before END", ErrSnapshot)
	}
	if !sawCM {
		return nil, fmt.Errorf("%w: consensus-module snapshot has no ConsensusModule record", ErrSnapshot)
	}
	if m.info.LogPosition != want.LogPosition || m.info.LeadershipTermID != want.LeadershipTermID {
		return nil, fmt.Errorf("%w: consensus-module snapshot is at position %d term %d, recording.log says %d term %d",
			ErrSnapshot, m.info.LogPosition, m.info.LeadershipTermID, want.LogPosition, want.LeadershipTermID)
	}
	// Data after END is refused.
	if src.Poll(func([]byte, int, int, int64) {}, 1) != 0 {
		return nil, fmt.Errorf("%w: consensus-module snapshot has data after END", ErrSnapshot)
	}
	return st, nil
}

// loadServiceSessions reads the container's part of a service snapshot,
// leaving src positioned after END.
func loadServiceSessions(src stream.FragmentSource, want SnapshotInfo) ([]ClientSession, SnapshotInfo, error) {
	var out []ClientSession
	m := &markerLoader{typeID: ServiceSnapshotTypeID}
	handler := func(buf []byte, offset, length int, position int64) {
		m.index++
		m.lastPos = position
		if m.err != nil {
			return
		}
		b := buf[offset : offset+length]
		tmpl, ok := m.header(b)
		if !ok {
			return
		}
		if !m.begun && tmpl != acs.SnapshotMarkerTemplateID {
			m.fail("template %d before BEGIN", tmpl)
			return
		}
		switch tmpl {
		case acs.SnapshotMarkerTemplateID:
			m.marker(b)
		case acs.ClientSessionTemplateID:
			var d acs.ClientSessionDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				m.fail("bad ClientSession: %v", err)
				return
			}
			cs := ClientSession{ID: d.ClusterSessionId(), ResponseStreamID: d.ResponseStreamId()}
			ch, err := d.ResponseChannel()
			if err == nil {
				cs.ResponseChannel = string(ch)
				var p []byte
				p, err = d.EncodedPrincipal()
				cs.EncodedPrincipal = append([]byte(nil), p...)
			}
			if err != nil {
				m.fail("bad ClientSession: %v", err)
				return
			}
			out = append(out, cs)
		default:
			// Aeron ignores other templates of its schema.
		}
	}
	// Poll one fragment at a time so the source stops right after END.
	for m.err == nil && !m.ended {
		if src.Poll(handler, 1) == 0 {
			break
		}
	}
	if err := sourceErr(src); err != nil && m.err == nil {
		m.err = fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if m.err != nil {
		return nil, m.info, m.err
	}
	if !m.ended {
		return nil, m.info, fmt.Errorf("%w: service snapshot ended before END", ErrSnapshot)
	}
	if m.info.LogPosition != want.LogPosition || m.info.LeadershipTermID != want.LeadershipTermID {
		return nil, m.info, fmt.Errorf("%w: service snapshot is at position %d term %d, recording.log says %d term %d",
			ErrSnapshot, m.info.LogPosition, m.info.LeadershipTermID, want.LogPosition, want.LeadershipTermID)
	}
	return out, m.info, nil
}

// sourceErr returns the error of a source that has one.
func sourceErr(src stream.FragmentSource) error {
	if e, ok := src.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}
