package aeronhost

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/lirm/aeron-go/cluster/codecs"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// logMessage is one session message as the consensus module appends it.
type logMessage struct {
	session int64
	ts      int64
	payload []byte
}

// logImage lays session messages out as log frames (SBE header,
// SessionMessageHeader, payload) from term offset start.
func logImage(t testing.TB, start int, msgs []logMessage) *fakeImage {
	t.Helper()
	var frames [][]byte
	for _, m := range msgs {
		b := make([]byte, aeronclustersbe.MessageHeaderEncodedLength+aeronclustersbe.SessionMessageHeaderBlockLength+len(m.payload))
		var e aeronclustersbe.SessionMessageHeaderEncoder
		if err := e.WrapAndApplyHeader(b, 0); err != nil {
			t.Fatal(err)
		}
		e.LeadershipTermId(1).ClusterSessionId(m.session).Timestamp(m.ts)
		copy(b[aeronclustersbe.MessageHeaderEncodedLength+aeronclustersbe.SessionMessageHeaderBlockLength:], m.payload)
		frames = append(frames, b)
	}
	return newFakeImage(start, frames)
}

// deliver polls a log image and hands each session message to the adapter
// the way aeron-go's bounded log adapter does: the session looked up (nil
// if unknown), the offset past the two headers, the frame's header.
func deliver(a *Adapter, img *fakeImage, sessions map[int64]acluster.ClientSession) {
	for img.Poll(func(buf *atomic.Buffer, off, n int32, hdr *logbuffer.Header) {
		const skip = acluster.SBEHeaderLength + acluster.SessionMessageHeaderLength
		id := buf.GetInt64(off + acluster.SBEHeaderLength + 8)
		ts := buf.GetInt64(off + acluster.SBEHeaderLength + 16)
		a.OnSessionMessage(sessions[id], ts, buf, off+skip, n-skip, hdr)
	}, 10) > 0 {
	}
}

// recSvc is a cluster.Service recording its calls, failing on demand.
type recSvc struct {
	c        cluster.Cluster
	calls    []string
	msgs     []string
	failOn   string
	onMsg    func(s *cluster.ClientSession, msg []byte) error
	sessions []cluster.ClientSession
	reasons  []cluster.CloseReason
	roles    []cluster.Role
	snapInfo cluster.SnapshotInfo
	onStart  func(c cluster.Cluster)
}

func (r *recSvc) rec(name string) error {
	r.calls = append(r.calls, name)
	if r.failOn == name {
		return fmt.Errorf("%s failed", name)
	}
	return nil
}
func (r *recSvc) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	r.c = c
	if r.onStart != nil {
		r.onStart(c)
	}
	return r.rec("start")
}
func (r *recSvc) OnSessionOpen(s *cluster.ClientSession, ts int64) error {
	r.sessions = append(r.sessions, *s)
	return r.rec("open")
}
func (r *recSvc) OnSessionClose(s *cluster.ClientSession, ts int64, reason cluster.CloseReason) error {
	r.reasons = append(r.reasons, reason)
	return r.rec("close")
}
func (r *recSvc) OnSessionMessage(s *cluster.ClientSession, ts int64, msg []byte, pos int64) error {
	r.msgs = append(r.msgs, fmt.Sprintf("%d/%d/%s/%d/%d", s.ID, ts, msg, pos, r.c.LogPosition()))
	if r.onMsg != nil {
		if err := r.onMsg(s, msg); err != nil {
			return err
		}
	}
	return r.rec("msg")
}
func (r *recSvc) OnTimerEvent(id, ts int64) error {
	r.msgs = append(r.msgs, fmt.Sprintf("timer %d at %d", id, ts))
	return r.rec("timer")
}
func (r *recSvc) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	r.snapInfo = info
	return r.rec("snapshot")
}
func (r *recSvc) OnRoleChange(role cluster.Role) error {
	r.roles = append(r.roles, role)
	return r.rec("role")
}
func (r *recSvc) OnTerminate(cluster.Cluster) error { return r.rec("terminate") }

func TestSessionMessagesPositionAndTimestamp(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{})
	fc := newFakeCluster()
	a.OnStart(fc, nil)
	s7 := &fakeSession{id: 7, stream: 102, channel: "aeron:udp?endpoint=client:9000", principal: []byte("alice")}
	a.OnSessionOpen(s7, 1000)
	if len(svc.sessions) != 1 {
		t.Fatalf("sessions %v", svc.sessions)
	}
	got := svc.sessions[0]
	if got.ID != 7 || got.ResponseStreamID != 102 || got.ResponseChannel != s7.channel || string(got.EncodedPrincipal) != "alice" {
		t.Fatalf("session mapped to %+v", got)
	}
	start := 4096
	msgs := []logMessage{{7, 1001, []byte("a")}, {7, 1002, []byte("bcdefghijklmnopqrstuvwxyz0123456789")}, {9, 1003, []byte("from a session restored from a snapshot")}}
	img := logImage(t, start, msgs)
	fc.pos = 77 // what aeron-go's LogPosition says (it equals the header's position there)
	deliver(a, img, map[int64]acluster.ClientSession{7: s7})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	var want []string
	pos := start
	for _, m := range msgs {
		pos += align32(hdrLen + 32 + len(m.payload))
		want = append(want, fmt.Sprintf("%d/%d/%s/%d/%d", m.session, m.ts, m.payload, pos, 77))
	}
	if fmt.Sprint(svc.msgs) != fmt.Sprint(want) {
		t.Fatalf("messages\n got %v\nwant %v", svc.msgs, want)
	}
}

func TestSessionCloseAndRoles(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{})
	fc := newFakeCluster()
	a.OnStart(fc, nil)
	for i, r := range []codecs.CloseReasonEnum{codecs.CloseReason.CLIENT_ACTION, codecs.CloseReason.SERVICE_ACTION, codecs.CloseReason.TIMEOUT, 99} {
		s := &fakeSession{id: int64(i)}
		a.OnSessionOpen(s, 1)
		a.OnSessionClose(s, 2, r)
	}
	wantReasons := []cluster.CloseReason{aeronclustersbe.CloseReasonCLIENTACTION, aeronclustersbe.CloseReasonSERVICEACTION, aeronclustersbe.CloseReasonTIMEOUT, aeronclustersbe.CloseReasonNullValue}
	if fmt.Sprint(svc.reasons) != fmt.Sprint(wantReasons) {
		t.Fatalf("reasons %v, want %v", svc.reasons, wantReasons)
	}
	if len(a.sessions) != 0 {
		t.Fatalf("%d sessions left after closing all", len(a.sessions))
	}
	if svc.c.Offer(0, []byte("x")) {
		t.Fatal("offer to a closed session accepted")
	}
	for _, r := range []acluster.Role{acluster.Leader, acluster.Candidate, acluster.Follower} {
		a.OnRoleChange(r)
	}
	wantRoles := []cluster.Role{cluster.RoleLeader, cluster.RoleCandidate, cluster.RoleFollower}
	if fmt.Sprint(svc.roles) != fmt.Sprint(wantRoles) {
		t.Fatalf("roles %v, want %v", svc.roles, wantRoles)
	}
	fc.role = acluster.Leader
	if svc.c.Role() != cluster.RoleLeader {
		t.Fatalf("Role() = %v", svc.c.Role())
	}
	a.OnNewLeadershipTermEvent(5, 0, 0, 0, 0, 0, codecs.ClusterTimeUnit.NANOS, 0)
	if svc.c.LeadershipTermID() != 5 {
		t.Fatalf("LeadershipTermID() = %d", svc.c.LeadershipTermID())
	}
	fc.time = 123
	if svc.c.Time() != 123 {
		t.Fatalf("Time() = %d", svc.c.Time())
	}
}

func TestTimeUnits(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{})
	fc := newFakeCluster()
	fc.unit = codecs.ClusterTimeUnit.MILLIS
	a.OnStart(fc, nil)
	fc.time = 1_700_000_000_123
	if got := svc.c.Time(); got != 1_700_000_000_123_000_000 {
		t.Fatalf("Time() = %d", got)
	}
	a.OnTimerEvent(1, 5)
	if last := svc.msgs[len(svc.msgs)-1]; last != "timer 1 at 5000000" {
		t.Fatal(last)
	}
	for deadline, want := range map[int64]int64{5_000_000: 5, 5_000_001: 6, 0: 0, -1: 0} {
		if err := svc.c.ScheduleTimer(deadline, deadline); err != nil || fc.scheduled[deadline] != want {
			t.Fatalf("deadline %d ns scheduled at %d ms (want %d): %v", deadline, fc.scheduled[deadline], want, err)
		}
	}
	fc.unit = codecs.ClusterTimeUnit.MICROS
	if got := svc.c.Time(); got != 1_700_000_000_123_000 {
		t.Fatalf("Time() in micros = %d", got)
	}
	fc.time = 1 << 62
	if got := svc.c.Time(); got != math.MaxInt64 {
		t.Fatalf("overflowing Time() = %d", got)
	}
}

func TestTimers(t *testing.T) {
	fc := newFakeCluster()
	fc.timerRefusals = 2
	svc := &recSvc{}
	svc.onMsg = func(s *cluster.ClientSession, msg []byte) error {
		switch string(msg) {
		case "schedule":
			return svc.c.ScheduleTimer(42, 5000)
		case "cancel":
			if !svc.c.CancelTimer(43) {
				return errors.New("cancel not sent")
			}
		}
		return nil
	}
	a := New(svc, Options{})
	a.OnStart(fc, nil)
	s := &fakeSession{id: 1}
	a.OnSessionOpen(s, 0)
	deliver(a, logImage(t, 0, []logMessage{{1, 10, []byte("schedule")}}), map[int64]acluster.ClientSession{1: s})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if fc.scheduled[42] != 5000 || fc.idler.n != 2 {
		t.Fatalf("scheduled %v after %d idles (want 42 at 5000 after 2)", fc.scheduled, fc.idler.n)
	}
	fc.timerRefusals = 1
	deliver(a, logImage(t, 0, []logMessage{{1, 11, []byte("cancel")}}), map[int64]acluster.ClientSession{1: s})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(fc.cancelled) != "[43]" || fc.idler.n != 3 {
		t.Fatalf("cancelled %v after %d idles", fc.cancelled, fc.idler.n)
	}
	a.OnTimerEvent(42, 5001)
	if last := svc.msgs[len(svc.msgs)-1]; last != "timer 42 at 5001" {
		t.Fatalf("last event %q", last)
	}
	// A stopping host ends the retries.
	fc.timerRefusals = 1 << 30
	a.Stop()
	if err := svc.c.ScheduleTimer(1, 1); !errors.Is(err, ErrStopped) {
		t.Fatalf("ScheduleTimer while stopping: %v", err)
	}
	if svc.c.CancelTimer(1) {
		t.Fatal("CancelTimer while stopping reported sent")
	}
}

func TestEgress(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{EgressTimeout: 5 * time.Millisecond})
	fc := newFakeCluster()
	a.OnStart(fc, nil)
	s := &fakeSession{id: 3, results: []int64{aeron.BackPressured, aeron.AdminAction}}
	a.OnSessionOpen(s, 0)
	if svc.c.Offer(4, []byte("nobody")) {
		t.Fatal("offer to an unknown session accepted")
	}
	if !svc.c.Offer(3, []byte("hello")) || len(s.egress) != 1 || string(s.egress[0]) != "hello" || s.offers != 3 {
		t.Fatalf("egress %q after %d offers", s.egress, s.offers)
	}
	if fc.idler.n != 2 {
		t.Fatalf("%d idles for 2 back-pressured offers", fc.idler.n)
	}
	if !svc.c.Offer(3, nil) || len(s.egress) != 2 || len(s.egress[1]) != 0 {
		t.Fatalf("empty egress: %q", s.egress)
	}
	// Not connected and closed are dropped at once, and counted.
	s.results = []int64{aeron.NotConnected, aeron.PublicationClosed}
	svc.c.Offer(3, []byte("x"))
	svc.c.Offer(3, []byte("y"))
	if a.EgressDropped() != 2 || len(s.egress) != 2 {
		t.Fatalf("dropped %d, egress %q", a.EgressDropped(), s.egress)
	}
	// Back-pressure that lasts is dropped after EgressTimeout.
	s.stuck = true
	if !svc.c.Offer(3, []byte("z")) || a.EgressDropped() != 3 {
		t.Fatalf("dropped %d", a.EgressDropped())
	}
	s.stuck = false
	// aeron-go's answer on a follower (a mocked offer) is success.
	s.results = []int64{acluster.ClientSessionMockedOffer}
	if !svc.c.Offer(3, []byte("f")) {
		t.Fatal("follower offer refused")
	}
}

func TestErrorsRecordedNotPanicked(t *testing.T) {
	for _, name := range []string{"start", "open", "msg", "timer", "role", "snapshot", "close"} {
		t.Run(name, func(t *testing.T) {
			svc := &recSvc{failOn: name}
			a := New(svc, Options{})
			fc := newFakeCluster()
			a.OnStart(fc, nil)
			s := &fakeSession{id: 1}
			a.OnSessionOpen(s, 0)
			deliver(a, logImage(t, 0, []logMessage{{1, 1, []byte("m")}}), map[int64]acluster.ClientSession{1: s})
			a.OnTimerEvent(1, 2)
			a.OnRoleChange(acluster.Leader)
			a.takeSnapshot(newFakePub())
			a.OnSessionClose(s, 3, codecs.CloseReason.CLIENT_ACTION)
			a.OnTimerEvent(2, 3) // refused after any failure
			a.OnTerminate(fc)
			a.OnTerminate(fc) // once only
			err := a.Err()
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(name+" failed")) {
				t.Fatalf("Err() = %v", err)
			}
			if last := svc.calls[len(svc.calls)-2]; last != name {
				t.Fatalf("calls %v: work went on after %s failed", svc.calls, name)
			}
			if svc.calls[len(svc.calls)-1] != "terminate" || len(svc.calls) != 1+indexOf(svc.calls, name)+1 {
				t.Fatalf("calls %v", svc.calls)
			}
			if err := svc.c.Idle(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Idle after failure: %v", err)
			}
		})
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestBadInputRecorded(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{})
	a.OnStart(newFakeCluster(), nil)
	a.OnSessionMessage(&fakeSession{id: 1}, 0, atomic.MakeBuffer(make([]byte, 8)), 4, 8, nil)
	if a.Err() == nil {
		t.Fatal("out of range message accepted")
	}
	a = New(svc, Options{})
	a.OnStart(newFakeCluster(), nil)
	a.OnSessionMessage(nil, 0, atomic.MakeBuffer(make([]byte, 64)), 40, 8, nil)
	if a.Err() == nil {
		t.Fatal("message of an unknown session without a header accepted")
	}
	for _, f := range []func(a *Adapter){
		func(a *Adapter) { a.OnSessionOpen(nil, 0) },
		func(a *Adapter) { a.OnSessionClose(nil, 0, 0) },
		func(a *Adapter) { a.OnTakeSnapshot(nil) },
		func(a *Adapter) { a.OnStart(newFakeCluster(), nil) },
	} {
		a := New(&recSvc{}, Options{})
		a.OnStart(newFakeCluster(), nil)
		f(a)
		if a.Err() == nil {
			t.Fatal("bad callback accepted")
		}
	}
}

func TestSnapshotInfo(t *testing.T) {
	svc := &recSvc{}
	a := New(svc, Options{AppVersion: 3 << 16})
	fc := newFakeCluster()
	fc.unit = codecs.ClusterTimeUnit.MICROS
	a.OnStart(fc, nil)
	a.OnNewLeadershipTermEvent(4, 0, 0, 0, 0, 0, fc.unit, 0)
	fc.pos = 9000
	a.takeSnapshot(newFakePub())
	want := cluster.SnapshotInfo{LogPosition: 9000, LeadershipTermID: 4, TimeUnit: aeronclustersbe.ClusterTimeUnitMICROS, AppVersion: 3 << 16}
	if svc.snapInfo != want || a.Err() != nil {
		t.Fatalf("info %+v (want %+v), err %v", svc.snapInfo, want, a.Err())
	}
}
