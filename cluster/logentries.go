package cluster

import (
	"fmt"

	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Log entries, as Aeron's consensus module writes them (LogPublisher): each
// is one unfragmented frame holding one message of cluster schema 111.
//
//	SessionMessageHeader (1)     leadershipTermId, clusterSessionId, timestamp, then the payload
//	TimerEvent (20)              leadershipTermId, correlationId, timestamp
//	SessionOpenEvent (21)        leadershipTermId, correlationId, clusterSessionId, timestamp,
//	                             responseStreamId, responseChannel, encodedPrincipal
//	SessionCloseEvent (22)       leadershipTermId, clusterSessionId, timestamp, closeReason
//	ClusterActionRequest (23)    leadershipTermId, logPosition, timestamp, action, flags
//	NewLeadershipTermEvent (24)  leadershipTermId, logPosition, timestamp, termBaseLogPosition,
//	                             leaderMemberId, logSessionId, timeUnit, appVersion

const sessionHeaderLength = acs.MessageHeaderEncodedLength + acs.SessionMessageHeaderBlockLength

func (n *Node) encodeMessage(sessionID, ts int64, payload []byte) []byte {
	b := n.scratch[:sessionHeaderLength+len(payload)]
	var e acs.SessionMessageHeaderEncoder
	_ = e.WrapAndApplyHeader(b, 0)
	e.LeadershipTermId(n.termID).ClusterSessionId(sessionID).Timestamp(ts)
	copy(b[sessionHeaderLength:], payload)
	return b
}

func (n *Node) encodeOpen(it *ingress, ts int64) []byte {
	var e acs.SessionOpenEventEncoder
	_ = e.WrapAndApplyHeader(n.scratch, 0)
	e.LeadershipTermId(n.termID).CorrelationId(it.session).ClusterSessionId(it.session).Timestamp(ts).
		ResponseStreamId(it.stream)
	_ = e.PutResponseChannelString(it.channel)
	_ = e.PutEncodedPrincipal(nil)
	return n.scratch[:acs.MessageHeaderEncodedLength+e.EncodedLength()]
}

func (n *Node) encodeClose(sessionID, ts int64, reason CloseReason) []byte {
	var e acs.SessionCloseEventEncoder
	b := n.scratch[:acs.MessageHeaderEncodedLength+acs.SessionCloseEventBlockLength]
	_ = e.WrapAndApplyHeader(b, 0)
	e.LeadershipTermId(n.termID).ClusterSessionId(sessionID).Timestamp(ts).CloseReason(reason)
	return b
}

func (n *Node) encodeTimer(id, ts int64) []byte {
	var e acs.TimerEventEncoder
	b := n.scratch[:acs.MessageHeaderEncodedLength+acs.TimerEventBlockLength]
	_ = e.WrapAndApplyHeader(b, 0)
	e.LeadershipTermId(n.termID).CorrelationId(id).Timestamp(ts)
	return b
}

func (n *Node) encodeAction(ts int64) []byte {
	var e acs.ClusterActionRequestEncoder
	b := n.scratch[:acs.MessageHeaderEncodedLength+acs.ClusterActionRequestBlockLength]
	_ = e.WrapAndApplyHeader(b, 0)
	e.LeadershipTermId(n.termID).LogPosition(n.pub.Position()).Timestamp(ts).Action(acs.ClusterActionSNAPSHOT).Flags(0)
	return b
}

func (n *Node) appendNewTerm(termBase, ts int64) error {
	var e acs.NewLeadershipTermEventEncoder
	b := n.scratch[:acs.MessageHeaderEncodedLength+acs.NewLeadershipTermEventBlockLength]
	_ = e.WrapAndApplyHeader(b, 0)
	e.LeadershipTermId(n.termID).LogPosition(termBase).Timestamp(ts).TermBaseLogPosition(termBase).
		LeaderMemberId(0).LogSessionId(n.log.SessionID()).TimeUnit(acs.ClusterTimeUnitNANOS)
	if n.opts.AppVersion != 0 {
		e.AppVersion(n.opts.AppVersion)
	} else {
		e.AppVersionNull()
	}
	ok, err := n.offerLog(b)
	if err == nil && !ok {
		err = fmt.Errorf("cluster: log back-pressured at the start of a term")
	}
	return err
}

// dispatch applies one log entry at position pos (after its frame) to the
// consensus-module state and the service, live or in replay.
func (n *Node) dispatch(b []byte, pos int64) error {
	h, err := acs.WrapMessageHeader(b, 0)
	if err != nil || h.SchemaId() != acs.SchemaID {
		return fmt.Errorf("cluster: log entry at %d is not of cluster schema %d", pos, acs.SchemaID)
	}
	n.curPos = pos
	switch h.TemplateId() {
	case acs.SessionMessageHeaderTemplateID:
		var d acs.SessionMessageHeaderDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		s := n.cm.sessions[d.ClusterSessionId()]
		if s == nil {
			// Sequenced after its session's close in the same batch:
			// skipped, live and in every replay.
			n.stats.Skipped++
			return nil
		}
		off := acs.MessageHeaderEncodedLength + d.ActingBlockLength()
		return n.svc.OnSessionMessage(&s.ClientSession, n.curTime, b[off:], pos)
	case acs.SessionOpenEventTemplateID:
		var d acs.SessionOpenEventDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		ch, err := d.ResponseChannel()
		if err != nil {
			return err
		}
		p, err := d.EncodedPrincipal()
		if err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		s := &session{ClientSession: ClientSession{ID: d.ClusterSessionId(), ResponseStreamID: d.ResponseStreamId(),
			ResponseChannel: string(ch), EncodedPrincipal: append([]byte(nil), p...)},
			CorrelationID: d.CorrelationId(), OpenedLogPosition: pos}
		n.cm.sessions[s.ID] = s
		if s.ID >= n.cm.nextSessionID {
			n.cm.nextSessionID = s.ID + 1
		}
		return n.svc.OnSessionOpen(&s.ClientSession, n.curTime)
	case acs.SessionCloseEventTemplateID:
		var d acs.SessionCloseEventDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		s := n.cm.sessions[d.ClusterSessionId()]
		if s == nil {
			return nil
		}
		delete(n.cm.sessions, s.ID)
		return n.svc.OnSessionClose(&s.ClientSession, n.curTime, d.CloseReason())
	case acs.TimerEventTemplateID:
		var d acs.TimerEventDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		id := d.CorrelationId()
		delete(n.firing, id)
		if _, ok := n.cm.timers[id]; !ok {
			return nil // cancelled after it was sequenced
		}
		delete(n.cm.timers, id)
		return n.svc.OnTimerEvent(id, n.curTime)
	case acs.ClusterActionRequestTemplateID:
		var d acs.ClusterActionRequestDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		if n.replaying || d.Action() != acs.ClusterActionSNAPSHOT {
			return nil
		}
		return n.startSnapshot(pos, n.curTime)
	case acs.NewLeadershipTermEventTemplateID:
		var d acs.NewLeadershipTermEventDecoder
		if err := d.WrapWithHeader(b, 0); err != nil {
			return err
		}
		n.curTime = d.Timestamp()
		return nil
	}
	return fmt.Errorf("cluster: log entry at %d has unknown template %d", pos, h.TemplateId())
}
