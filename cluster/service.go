package cluster

import (
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Role is the node's role in the cluster (Aeron's Cluster.Role). The
// embedded node is always the leader of a cluster of one.
type Role int

// Roles.
const (
	RoleFollower  Role = 0
	RoleCandidate Role = 1
	RoleLeader    Role = 2
)

func (r Role) String() string {
	switch r {
	case RoleFollower:
		return "FOLLOWER"
	case RoleCandidate:
		return "CANDIDATE"
	case RoleLeader:
		return "LEADER"
	}
	return "UNKNOWN"
}

// CloseReason says why a session closed (Aeron's CloseReason).
type CloseReason = aeronclustersbe.CloseReason

// ClientSession is a client's session as a service sees it.
type ClientSession struct {
	ID               int64
	ResponseStreamID int32
	ResponseChannel  string
	EncodedPrincipal []byte
}

// SnapshotImage is where a service reads the data it wrote in its last
// snapshot: the snapshot recording positioned after the node's ClientSession
// section (after SnapshotMarker END, as Aeron hands the image to onStart).
type SnapshotImage = stream.FragmentSource

// Publication is what a service writes its snapshot data into: claims of
// at most MaxPayloadLength bytes, or whole messages offered. It satisfies
// stream.Claimer. A negative position with a nil error means
// back-pressure: call the idle function and retry.
type Publication interface {
	stream.Claimer
	Offer(msg []byte) (int64, error)
}

// AheadPublication is a Publication that can also hold several claims at
// once (stream.AheadClaimer), for a snapshot encoded in parallel: the
// node's snapshot publications are. A claim made ahead that finds the
// publication back-pressured records what is committed, making room, and
// tries once more before it reports the back-pressure.
//
// A claim's payload reads as zeros. The node's snapshot publications also
// claim without zeroing (stream.Overwriter, stream.AheadOverwriter) for a
// writer that covers every byte of its claims, as snapshot's Publisher does.
type AheadPublication interface {
	Publication
	stream.AheadClaimer
}

// SnapshotInfo is what a snapshot is of: the fields of Aeron's
// SnapshotMarker.
type SnapshotInfo struct {
	LogPosition      int64
	LeadershipTermID int64
	TimeUnit         aeronclustersbe.ClusterTimeUnit
	AppVersion       int32
}

// Service is a clustered service, in the shape of Aeron's
// ClusteredService. The node calls it from one goroutine (its duty cycle);
// every method must be deterministic given the log: time comes from the
// timestamp argument or Cluster.Time, never a clock. Byte slices passed to
// it are valid only during the call. A returned error stops the node.
type Service interface {
	// OnStart is called once before anything else. img is nil for a
	// start without snapshot; otherwise the service must restore its state
	// from it (strictly: an incomplete image is an error).
	OnStart(c Cluster, img SnapshotImage) error
	// OnSessionOpen and OnSessionClose report sessions opening and closing
	// through the log.
	OnSessionOpen(s *ClientSession, timestamp int64) error
	OnSessionClose(s *ClientSession, timestamp int64, reason CloseReason) error
	// OnSessionMessage delivers one message of a session, at the log
	// position just after its frame.
	OnSessionMessage(s *ClientSession, timestamp int64, msg []byte, logPosition int64) error
	// OnTimerEvent reports a timer scheduled with Cluster.ScheduleTimer
	// firing (through the log).
	OnTimerEvent(correlationID, timestamp int64) error
	// OnTakeSnapshot writes the service's state into pub, stopping the
	// world: the node sequences nothing until it returns. Call idle while
	// pub is back-pressured.
	OnTakeSnapshot(info SnapshotInfo, pub Publication, idle func() error) error
	// OnRoleChange reports a change of role.
	OnRoleChange(r Role) error
	// OnTerminate is called once when the node closes.
	OnTerminate(c Cluster) error
}

// PauselessService is a Service that can snapshot without stopping the
// world. PrepareSnapshot is called on the service goroutine at the
// snapshot's log position and must return quickly (an O(1) or
// O(instruments) frozen copy of the state); the node then runs the task's
// Write on another goroutine while it goes on sequencing. The task must
// write exactly the state as of the PrepareSnapshot call.
type PauselessService interface {
	Service
	PrepareSnapshot(info SnapshotInfo) (SnapshotTask, error)
}

// SnapshotTask writes a frozen copy of a service's state. Write runs on a
// goroutine of the node's; it must not touch the live service.
type SnapshotTask interface {
	Write(pub Publication, idle func() error) error
}

// Cluster is the service's handle on the node. Its methods may be called
// only from the service's callbacks (the node's goroutine).
type Cluster interface {
	// LogPosition is the position of the message being processed.
	LogPosition() int64
	// Time is the timestamp of the message being processed (cluster time,
	// nanoseconds).
	Time() int64
	// LeadershipTermID is the current leadership term.
	LeadershipTermID() int64
	// Role is the node's role.
	Role() Role
	// ScheduleTimer schedules (or reschedules) a timer; it fires through
	// the log as a TimerEvent once the cluster time reaches deadline.
	ScheduleTimer(correlationID, deadline int64) error
	// CancelTimer cancels a timer; false if none was scheduled.
	CancelTimer(correlationID int64) bool
	// Offer sends msg to a session's egress. The node copies it and
	// delivers it once the position of the message being processed is
	// durable. It returns false for an unknown session. During replay
	// egress is dropped.
	Offer(sessionID int64, msg []byte) bool
	// Idle lets the node keep its duty cycle during long work.
	Idle() error
}
