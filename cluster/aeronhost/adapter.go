package aeronhost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/lirm/aeron-go/aeron"
	aatomic "github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/lirm/aeron-go/cluster/codecs"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Defaults of Options.
const (
	// DefaultMTU is Aeron's default MTU (aeron.mtu.length), which the
	// snapshot publication has unless its channel sets mtu.
	DefaultMTU = 1408
	// DataFrameHeaderLength is the Aeron data frame header every message
	// carries: the max payload is the MTU less this.
	DataFrameHeaderLength = 32
	// DefaultSnapshotImageTimeout is how long a snapshot replay may
	// deliver nothing before the restore fails.
	DefaultSnapshotImageTimeout = 10 * time.Second
	// DefaultSnapshotConnectTimeout is how long the snapshot publication
	// may stay unconnected to the archive.
	DefaultSnapshotConnectTimeout = 5 * time.Second
	// DefaultEgressTimeout is how long an egress offer is retried while
	// the client's response publication is back-pressured.
	DefaultEgressTimeout = 100 * time.Millisecond
)

// ErrStopped is returned by the Cluster handle's Idle (and so by a
// service's long work) once the host has been asked to stop.
var ErrStopped = errors.New("aeronhost: stopped")

// ErrFailed is returned by the Cluster handle's Idle once a callback of the
// service has failed; Adapter.Err has the failure.
var ErrFailed = errors.New("aeronhost: service failed")

// Adapter runs one of our cluster.Service inside aeron-go's clustered
// service container: it implements aeron-go's cluster.ClusteredService and
// hands our service a cluster.Cluster backed by the container.
//
// aeron-go's callbacks return nothing. The first error of our service (or
// of the mapping) is recorded (Err) and the adapter then refuses every
// further callback except OnTerminate, so the service's state never moves
// past the failure. Under Run the failing callback also never returns
// into aeron-go: the container's goroutine is ended (runtime.Goexit, not a
// panic) so that the container acknowledges nothing more to the consensus
// module — in particular not a snapshot our service failed to write, which
// aeron-go would otherwise acknowledge (its takeSnapshot acks whatever
// OnTakeSnapshot did). An Adapter driven by a caller's own agent loop
// cannot stop aeron-go that way: the caller must check Err after each
// DoWork and stop.
//
// All callbacks and the Cluster handle run on the container's goroutine;
// only Stop and Err may be called from others.
type Adapter struct {
	svc  cluster.Service
	opts Options

	c        acluster.Cluster
	h        handle
	termID   int64
	sessions map[int64]*session
	role     cluster.Role

	err        atomic.Pointer[error]
	stop       atomic.Bool
	inCallback int
	started    bool
	terminated bool
	exit       func() // set by Run: ends the container goroutine after a failure
	// startTermID, set by Run, reads the leadership term the consensus
	// module is recovering from (its recovery-state counter), so that
	// LeadershipTermID is right during OnStart.
	startTermID func() (int64, bool)

	egress  aatomic.Buffer
	dropped atomic.Int64
}

// session is a client session as the container and our service know it.
type session struct {
	a   acluster.ClientSession
	our cluster.ClientSession
}

var _ acluster.ClusteredService = (*Adapter)(nil)

// New returns an adapter for svc. Only the service-side fields of opts are
// used (AppVersion, SnapshotMaxPayloadLength, the timeouts).
func New(svc cluster.Service, opts Options) *Adapter {
	opts = opts.withDefaults()
	a := &Adapter{svc: svc, opts: opts, termID: -1, sessions: map[int64]*session{}}
	a.h.a = a
	return a
}

// Err is the first error of the service or of the mapping, nil if none.
func (a *Adapter) Err() error {
	if p := a.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Stop asks the host to stop: the Cluster handle's Idle returns ErrStopped
// from then on, so the service's long work ends; a loop driving the
// container should then end too. It may be called from any goroutine.
func (a *Adapter) Stop() { a.stop.Store(true) }

// EgressDropped is how many egress messages were dropped because the
// client's response publication was not connected, closed or stayed
// back-pressured for EgressTimeout.
func (a *Adapter) EgressDropped() int64 { return a.dropped.Load() }

// Terminated reports whether OnTerminate has been called (on the
// container's goroutine, or once it has ended).
func (a *Adapter) Terminated() bool { return a.terminated }

// fail records err if it is the first and, under Run, ends the container
// goroutine.
func (a *Adapter) fail(err error) {
	a.err.CompareAndSwap(nil, &err)
	if a.exit != nil {
		a.exit()
	}
}

// call runs one callback of the service unless the adapter has failed.
func (a *Adapter) call(name string, fn func() error) {
	if a.Err() != nil {
		return
	}
	a.inCallback++
	err := fn()
	a.inCallback--
	if err != nil {
		a.fail(fmt.Errorf("aeronhost: %s: %w", name, err))
	}
}

// stopErr is why long work must end, nil if it may go on.
func (a *Adapter) stopErr() error {
	if a.Err() != nil {
		return ErrFailed
	}
	if a.stop.Load() {
		return ErrStopped
	}
	return nil
}

// idle idles once with the container's idle strategy (which keeps the
// container's mark file alive) and says whether to go on.
func (a *Adapter) idle() error {
	if err := a.stopErr(); err != nil {
		return err
	}
	if a.c != nil {
		if is := a.c.IdleStrategy(); is != nil {
			is.Idle(0)
		}
	}
	return a.stopErr()
}

// OnStart implements aeron-go's ClusteredService: img, when not nil, is the
// snapshot replay positioned after the container's own section.
func (a *Adapter) OnStart(c acluster.Cluster, img aeron.Image) {
	if a.started {
		a.fail(errors.New("aeronhost: OnStart called twice"))
		return
	}
	a.started = true
	a.c = c
	if c != nil {
		a.role = mapRole(c.Role())
	}
	if a.startTermID != nil && a.termID < 0 {
		if id, ok := a.startTermID(); ok {
			a.termID = id
		}
	}
	if img == nil {
		a.call("OnStart", func() error { return a.svc.OnStart(&a.h, nil) })
		return
	}
	src := newImageSource(img, a.idle, a.opts.SnapshotImageTimeout)
	a.call("OnStart", func() error {
		err := a.svc.OnStart(&a.h, src)
		if src.sawMark && a.termID < 0 {
			a.termID = src.termID
		}
		if src.err != nil {
			return src.err
		}
		return err
	})
}

// remember maps the container's session to ours, once per session.
func (a *Adapter) remember(s acluster.ClientSession) *session {
	id := s.Id()
	if ss, ok := a.sessions[id]; ok {
		ss.a = s
		return ss
	}
	ss := &session{a: s, our: cluster.ClientSession{
		ID:               id,
		ResponseStreamID: s.ResponseStreamId(),
		ResponseChannel:  s.ResponseChannel(),
		EncodedPrincipal: append([]byte(nil), s.EncodedPrincipal()...),
	}}
	a.sessions[id] = ss
	return ss
}

// OnSessionOpen implements aeron-go's ClusteredService.
func (a *Adapter) OnSessionOpen(s acluster.ClientSession, timestamp int64) {
	if s == nil {
		a.call("OnSessionOpen", func() error { return errors.New("session open without a session") })
		return
	}
	a.call("OnSessionOpen", func() error {
		ss := a.remember(s)
		return a.svc.OnSessionOpen(&ss.our, a.toNanos(timestamp))
	})
}

// OnSessionClose implements aeron-go's ClusteredService.
func (a *Adapter) OnSessionClose(s acluster.ClientSession, timestamp int64, reason codecs.CloseReasonEnum) {
	if s == nil {
		a.call("OnSessionClose", func() error { return errors.New("session close without a session") })
		return
	}
	a.call("OnSessionClose", func() error {
		ss := a.remember(s)
		delete(a.sessions, ss.our.ID)
		return a.svc.OnSessionClose(&ss.our, a.toNanos(timestamp), mapCloseReason(reason))
	})
}

// OnSessionMessage implements aeron-go's ClusteredService: the message is
// buffer[offset:offset+length] (valid during the call only), at the log
// position after its frame (the header's position).
//
// Timestamps passed to our service, here and in every callback, are
// converted from the cluster's time unit to nanoseconds.
func (a *Adapter) OnSessionMessage(s acluster.ClientSession, timestamp int64, buffer *aatomic.Buffer, offset, length int32, header *logbuffer.Header) {
	a.call("OnSessionMessage", func() error {
		msg, ok := bytesOf(buffer, offset, length)
		if !ok {
			return fmt.Errorf("message at offset %d length %d is outside its buffer", offset, length)
		}
		pos := int64(-1)
		if header != nil {
			pos = header.Position()
		} else if a.c != nil {
			pos = a.c.LogPosition()
		}
		var our *cluster.ClientSession
		if s != nil {
			our = &a.remember(s).our
		} else {
			// aeron-go hands a nil session for an id it does not know;
			// the id is in the SessionMessageHeader before the message.
			id, ok := sessionIDBefore(buffer, offset)
			if !ok {
				return errors.New("message of an unknown session without a SessionMessageHeader")
			}
			our = &cluster.ClientSession{ID: id}
		}
		return a.svc.OnSessionMessage(our, a.toNanos(timestamp), msg, pos)
	})
}

// sessionIDBefore reads the cluster session id of the SessionMessageHeader
// (Aeron cluster schema) that precedes a session message in the log.
func sessionIDBefore(buf *aatomic.Buffer, off int32) (int64, bool) {
	const hdr = aeronclustersbe.MessageHeaderEncodedLength + aeronclustersbe.SessionMessageHeaderBlockLength
	b, ok := bytesOf(buf, off-hdr, hdr)
	if off < hdr || !ok {
		return 0, false
	}
	h, err := aeronclustersbe.WrapMessageHeader(b, 0)
	if err != nil || int(h.SchemaId()) != aeronclustersbe.SchemaID ||
		int(h.TemplateId()) != aeronclustersbe.SessionMessageHeaderTemplateID {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[aeronclustersbe.MessageHeaderEncodedLength+8:])), true
}

// OnTimerEvent implements aeron-go's ClusteredService.
func (a *Adapter) OnTimerEvent(correlationID, timestamp int64) {
	a.call("OnTimerEvent", func() error { return a.svc.OnTimerEvent(correlationID, a.toNanos(timestamp)) })
}

// OnTakeSnapshot implements aeron-go's ClusteredService: our service's
// OnTakeSnapshot writes its section into pub after the container's, the
// world stopped (PauselessService's PrepareSnapshot is not used: aeron-go
// acknowledges the snapshot as soon as this returns).
func (a *Adapter) OnTakeSnapshot(pub *aeron.Publication) {
	if pub == nil {
		a.call("OnTakeSnapshot", func() error { return errors.New("no snapshot publication") })
		return
	}
	a.takeSnapshot(pub)
}

// takeSnapshot is OnTakeSnapshot over any claimPublication.
func (a *Adapter) takeSnapshot(pub claimPublication) {
	a.call("OnTakeSnapshot", func() error {
		if a.c == nil {
			return errors.New("snapshot before OnStart")
		}
		info := cluster.SnapshotInfo{
			LogPosition:      a.c.LogPosition(),
			LeadershipTermID: a.termID,
			TimeUnit:         mapTimeUnit(a.c.TimeUnit()),
			AppVersion:       a.opts.AppVersion,
		}
		p := newSnapshotPublication(pub, a.opts.SnapshotMaxPayloadLength, a.opts.SnapshotConnectTimeout)
		err := a.svc.OnTakeSnapshot(info, p, a.idle)
		if p.claimed {
			p.Abort()
			if err == nil {
				err = errors.New("service returned with a claim outstanding")
			}
		}
		return err
	})
}

// OnRoleChange implements aeron-go's ClusteredService.
func (a *Adapter) OnRoleChange(role acluster.Role) {
	a.role = mapRole(role)
	a.call("OnRoleChange", func() error { return a.svc.OnRoleChange(a.role) })
}

// OnTerminate implements aeron-go's ClusteredService. It is called once
// even after a failure, so the service can release what it holds.
func (a *Adapter) OnTerminate(acluster.Cluster) {
	if a.terminated {
		return
	}
	a.terminated = true
	a.inCallback++
	err := a.svc.OnTerminate(&a.h)
	a.inCallback--
	if err != nil {
		a.fail(fmt.Errorf("aeronhost: OnTerminate: %w", err))
	}
}

// OnNewLeadershipTermEvent implements aeron-go's ClusteredService: it
// tracks the leadership term for the Cluster handle and SnapshotInfo.
func (a *Adapter) OnNewLeadershipTermEvent(leadershipTermID, logPosition, timestamp, termBaseLogPosition int64,
	leaderMemberID, logSessionID int32, timeUnit codecs.ClusterTimeUnitEnum, appVersion int32) {
	a.termID = leadershipTermID
}

func mapRole(r acluster.Role) cluster.Role {
	switch r {
	case acluster.Follower:
		return cluster.RoleFollower
	case acluster.Role(acluster.Candidate):
		return cluster.RoleCandidate
	case acluster.Role(acluster.Leader):
		return cluster.RoleLeader
	}
	return cluster.Role(r)
}

func mapCloseReason(r codecs.CloseReasonEnum) cluster.CloseReason {
	switch r {
	case codecs.CloseReason.CLIENT_ACTION:
		return aeronclustersbe.CloseReasonCLIENTACTION
	case codecs.CloseReason.SERVICE_ACTION:
		return aeronclustersbe.CloseReasonSERVICEACTION
	case codecs.CloseReason.TIMEOUT:
		return aeronclustersbe.CloseReasonTIMEOUT
	}
	return aeronclustersbe.CloseReasonNullValue
}

// nanosPerUnit is how many nanoseconds one unit of the cluster's time is.
func (a *Adapter) nanosPerUnit() int64 {
	if a.c == nil {
		return 1
	}
	switch a.c.TimeUnit() {
	case codecs.ClusterTimeUnit.MILLIS:
		return 1_000_000
	case codecs.ClusterTimeUnit.MICROS:
		return 1_000
	}
	return 1
}

// toNanos converts a cluster timestamp to nanoseconds, our services' unit.
func (a *Adapter) toNanos(t int64) int64 {
	m := a.nanosPerUnit()
	if m == 1 {
		return t
	}
	if t > math.MaxInt64/m {
		return math.MaxInt64
	}
	if t < math.MinInt64/m {
		return math.MinInt64
	}
	return t * m
}

// fromNanos converts a deadline in nanoseconds to the cluster's unit,
// rounding up so that a timer never fires before its deadline.
func (a *Adapter) fromNanos(d int64) int64 {
	m := a.nanosPerUnit()
	q := d / m
	if d%m > 0 {
		q++
	}
	return q
}

func mapTimeUnit(u codecs.ClusterTimeUnitEnum) aeronclustersbe.ClusterTimeUnit {
	switch u {
	case codecs.ClusterTimeUnit.MILLIS:
		return aeronclustersbe.ClusterTimeUnitMILLIS
	case codecs.ClusterTimeUnit.MICROS:
		return aeronclustersbe.ClusterTimeUnitMICROS
	case codecs.ClusterTimeUnit.NANOS:
		return aeronclustersbe.ClusterTimeUnitNANOS
	}
	return aeronclustersbe.ClusterTimeUnitNullValue
}

// handle is our cluster.Cluster backed by the container.
type handle struct{ a *Adapter }

var _ cluster.Cluster = (*handle)(nil)

// LogPosition implements cluster.Cluster.
func (h *handle) LogPosition() int64 {
	if h.a.c == nil {
		return -1
	}
	return h.a.c.LogPosition()
}

// Time implements cluster.Cluster: the cluster time converted to
// nanoseconds.
func (h *handle) Time() int64 {
	if h.a.c == nil {
		return 0
	}
	return h.a.toNanos(h.a.c.Time())
}

// LeadershipTermID implements cluster.Cluster: the term of the last
// NewLeadershipTermEvent, or of the snapshot restored, -1 before either.
func (h *handle) LeadershipTermID() int64 { return h.a.termID }

// Role implements cluster.Cluster.
func (h *handle) Role() cluster.Role {
	if h.a.c == nil {
		return h.a.role
	}
	return mapRole(h.a.c.Role())
}

// ScheduleTimer implements cluster.Cluster: the request is sent to the
// consensus module, retried (idling) while it is back-pressured. deadline
// is in nanoseconds; it is converted to the cluster's time unit, rounded
// up.
func (h *handle) ScheduleTimer(correlationID, deadline int64) error {
	if h.a.c == nil {
		return errors.New("aeronhost: ScheduleTimer before OnStart")
	}
	d := h.a.fromNanos(deadline)
	for !h.a.c.ScheduleTimer(correlationID, d) {
		if err := h.a.idle(); err != nil {
			return err
		}
	}
	return nil
}

// CancelTimer implements cluster.Cluster. The consensus module owns the
// timers, so the container cannot tell whether one was scheduled: true
// means the cancel request was sent, false that it could not be (the host
// is stopping).
func (h *handle) CancelTimer(correlationID int64) bool {
	if h.a.c == nil {
		return false
	}
	for !h.a.c.CancelTimer(correlationID) {
		if h.a.idle() != nil {
			return false
		}
	}
	return true
}

// Offer implements cluster.Cluster: msg goes to the session's response
// publication (aeron-go sends it only on the leader; elsewhere it is
// dropped, as egress is during replay). It is retried while
// back-pressured, for at most EgressTimeout, then dropped and counted.
func (h *handle) Offer(sessionID int64, msg []byte) bool {
	ss, ok := h.a.sessions[sessionID]
	if !ok || ss.a == nil {
		return false
	}
	if len(msg) > math.MaxInt32 {
		h.a.dropped.Add(1)
		return true
	}
	a := h.a
	wrapBytes(&a.egress, msg)
	defer a.egress.Wrap(nil, 0)
	var start time.Time
	for {
		r := ss.a.Offer(&a.egress, 0, int32(len(msg)), nil)
		if r >= 0 {
			return true
		}
		if r != aeron.BackPressured && r != aeron.AdminAction {
			a.dropped.Add(1)
			return true
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) >= a.opts.EgressTimeout {
			a.dropped.Add(1)
			return true
		}
		if a.idle() != nil {
			a.dropped.Add(1)
			return true
		}
	}
}

// Idle implements cluster.Cluster with the container's idle strategy. It
// returns ErrStopped once the host is stopping and ErrFailed once a
// callback has failed.
func (h *handle) Idle() error { return h.a.idle() }
