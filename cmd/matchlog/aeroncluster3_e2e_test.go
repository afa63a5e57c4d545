package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron"
	aatomic "github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/idlestrategy"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	aclient "github.com/lirm/aeron-go/cluster/client"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/aerontest"
	"github.com/matchlog/matchlog/wire"
)

// threeNodeRate is the fixed send rate of TestAeronClusterThreeNodes.
var threeNodeRate = flag.Int("aeron-3.rate", 500, "commands per second TestAeronClusterThreeNodes sends")

// threeNodeSync is the archive's and consensus module's file sync level
// in TestAeronClusterThreeNodes.
var threeNodeSync = flag.Int("aeron-3.sync", 0, "file sync level (0, 1, 2) of the archives and consensus modules of TestAeronClusterThreeNodes")

// threeNodeProps are the system properties a member of the three-member
// test cluster adds to aeronMember.props (a later -D of a name wins): a
// leader is declared lost after 3 s without its heartbeat (Aeron's default
// is 10 s), heartbeats every 100 ms; the settings docs/aeron-cluster.md
// recommends: the archive writes and syncs in blocks of up to 16 MiB, the
// consensus module's snapshot channel has the largest IPC MTU (with a term
// that can carry it); the file sync level of -aeron-3.sync.
func threeNodeProps() []string {
	sync := strconv.Itoa(*threeNodeSync)
	return []string{
		"aeron.cluster.leader.heartbeat.timeout=3s",
		"aeron.cluster.leader.heartbeat.interval=100ms",
		"aeron.archive.file.io.max.length=16777216",
		"aeron.cluster.snapshot.channel=" + threeNodeSnapshotChannel,
		"aeron.archive.file.sync.level=" + sync,
		"aeron.archive.catalog.file.sync.level=" + sync,
		"aeron.cluster.file.sync.level=" + sync,
	}
}

// threeNodeSnapshotChannel is the snapshot channel of the consensus
// modules and services of TestAeronClusterThreeNodes.
const threeNodeSnapshotChannel = "aeron:ipc?alias=snapshot|mtu=65504|term-length=1m"

// markFileWait is how long a killed member must stay down before it can
// start again: Aeron counts a mark file updated in the last 10 s as a live
// program's.
const markFileWait = 11 * time.Second

// sentCmd is a command sent and not yet answered in full.
type sentCmd struct {
	c       engine.Command
	due     time.Time // when the fixed rate scheduled it
	resent  bool      // sent again after a failover
	applied bool      // the reference applied it (its answer began)
}

// sample is one command's round trip, from its scheduled send.
type sample struct {
	due time.Time
	d   time.Duration
}

// rateClient sends commands at a fixed rate through aeron-go's cluster
// client and checks every egress message against a reference engine fed
// the same commands in the same order. After a leader's loss it opens a
// new session and sends every unanswered command again with its source and
// seq: the engine answers a command it applied before (whose answer the
// lost leader never sent) with a duplicate notice, and applies the others.
type rateClient struct {
	t         *testing.T
	gen       *enginetest.Gen
	ref       *engine.Engine
	aeronDir  string
	endpoints string

	ac         *aclient.AeronCluster
	sending    bool
	period     time.Duration
	next       time.Time
	maxPending int
	unsent     *engine.Command
	body       []byte

	pending []sentCmd
	want    [][]byte
	lat     []sample
	failure error
	// tolerate is set while sessions are being opened after a leader's
	// loss: refusals then are expected.
	tolerate bool
	// answeredAt is the time of the last answer completed.
	answeredAt time.Time

	sent, answered, msgs, resent, lostAnswers, full int
}

func (r *rateClient) OnConnect(*aclient.AeronCluster)                 {}
func (r *rateClient) OnNewLeader(*aclient.AeronCluster, int64, int32) {}
func (r *rateClient) OnDisconnect(_ *aclient.AeronCluster, d string) {
	if !r.tolerate {
		r.fail("disconnected: %s", d)
	}
}
func (r *rateClient) OnError(_ *aclient.AeronCluster, details string) {
	if r.tolerate {
		r.t.Logf("while reconnecting: %s", details)
		return
	}
	r.fail("egress error: %s", details)
}
func (r *rateClient) fail(format string, a ...any) {
	if r.failure == nil {
		r.failure = fmt.Errorf(format, a...)
	}
}

func (r *rateClient) OnMessage(_ *aclient.AeronCluster, ts int64, buf *aatomic.Buffer, off, n int32, _ *logbuffer.Header) {
	got := buf.GetBytesArray(off, n)
	if len(r.pending) == 0 {
		r.fail("egress message with no command outstanding: %x", got)
		return
	}
	p := &r.pending[0]
	if r.want == nil {
		dup := wire.AppendDuplicate(nil, p.c.Source, p.c.Seq)
		switch {
		case p.applied:
			// Its answer began before the leader was lost: the resend
			// must be refused as a duplicate.
			r.want = [][]byte{dup}
		default:
			p.c.Time = ts
			evs := r.ref.Apply(&p.c)
			r.gen.Observe(evs)
			p.applied = true
			switch {
			case len(evs) == 0:
				r.want = [][]byte{dup}
			case p.resent && bytes.Equal(got, dup):
				// Applied by the lost leader's term, answer never sent.
				r.lostAnswers++
				r.want = [][]byte{dup}
			default:
				for i := range evs {
					r.want = append(r.want, wire.AppendEvent(nil, &evs[i]))
				}
			}
		}
	}
	if !bytes.Equal(got, r.want[0]) {
		r.fail("egress message %d (command %s, resent %v): got %x, want %x", r.msgs, enginetest.FormatCommand(&p.c), p.resent, got, r.want[0])
	}
	r.msgs++
	r.want = r.want[1:]
	if len(r.want) == 0 {
		r.want = nil
		now := time.Now()
		r.lat = append(r.lat, sample{due: p.due, d: now.Sub(p.due)})
		r.answeredAt = now
		r.pending = r.pending[1:]
		r.answered++
	}
}

// connect opens a session (at most within timeout), true when it did.
func (r *rateClient) connect(timeout time.Duration) bool {
	r.t.Helper()
	ctx := aeron.NewContext().AeronDir(r.aeronDir).MediaDriverTimeout(10 * time.Second).
		IdleStrategy(idlestrategy.Sleeping{SleepFor: time.Millisecond})
	opts := aclient.NewOptions()
	opts.IngressChannel = "aeron:udp"
	opts.IngressEndpoints = r.endpoints
	opts.EgressChannel = "aeron:udp?endpoint=127.0.0.1:0"
	opts.IdleStrategy = idlestrategy.Sleeping{SleepFor: 100 * time.Microsecond}
	ac, err := aclient.NewAeronCluster(ctx, opts, r)
	if err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for !ac.IsConnected() {
		if ac.Poll() == 0 {
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) {
			ac.Close()
			return false
		}
	}
	r.ac = ac
	return true
}

func (r *rateClient) close() {
	if r.ac != nil {
		r.ac.Close()
		r.ac = nil
	}
}

// step sends the next command if it is due (and fewer than maxPending
// are outstanding), else polls the egress.
func (r *rateClient) step() {
	if r.failure != nil {
		r.t.Fatal(r.failure)
	}
	now := time.Now()
	if r.sending && !now.Before(r.next) {
		if len(r.pending) >= r.maxPending {
			r.full++
		} else if r.offerNext() {
			return
		}
	}
	if r.ac.Poll() == 0 {
		time.Sleep(100 * time.Microsecond)
	}
}

// offerNext offers the next command; false when the ingress refused it
// (it is offered again on the next step).
func (r *rateClient) offerNext() bool {
	if r.unsent == nil {
		c := new(engine.Command)
		for {
			r.gen.Next(c)
			var err error
			if r.body, err = wire.AppendCommand(r.body[:0], c); err == nil {
				break // else a deliberately invalid command the wire cannot carry
			}
		}
		r.unsent = c
	}
	res := r.ac.Offer(aatomic.MakeBuffer(r.body), 0, int32(len(r.body)))
	if res < 0 {
		if res == aeron.PublicationClosed || res == aeron.MaxPositionExceeded {
			r.t.Fatalf("ingress offer: %d", res)
		}
		return false
	}
	r.pending = append(r.pending, sentCmd{c: *r.unsent, due: r.next})
	r.unsent = nil
	r.next = r.next.Add(r.period)
	r.sent++
	return true
}

// run steps until d has passed or until (if set) returns true, bounded
// by limit; it fails the test at the limit.
func (r *rateClient) run(d time.Duration, until func() bool, limit time.Duration, what string) {
	r.t.Helper()
	start := time.Now()
	check := time.Now()
	for {
		el := time.Since(start)
		if until == nil && el >= d {
			return
		}
		if until != nil && time.Since(check) >= 20*time.Millisecond {
			check = time.Now()
			if until() {
				return
			}
		}
		if until != nil && el > limit {
			r.t.Fatalf("%s: not done within %v (%d sent, %d answered, %d outstanding)", what, limit, r.sent, r.answered, len(r.pending))
		}
		r.step()
	}
}

// failover opens a new session after the leader's loss (retrying within
// limit) and sends every unanswered command again. It returns when the
// new session is open.
func (r *rateClient) failover(limit time.Duration) {
	r.t.Helper()
	r.close()
	r.want = nil // a head answered in part was applied: its resend is a duplicate
	r.tolerate = true
	deadline := time.Now().Add(limit)
	for try := 1; !r.connect(4 * time.Second); try++ {
		if time.Now().After(deadline) {
			r.t.Fatalf("no session within %v of the leader's loss (%d tries)", limit, try)
		}
	}
	r.tolerate = false
	for i := range r.pending {
		p := &r.pending[i]
		body, err := wire.AppendCommand(nil, &p.c)
		if err != nil {
			r.t.Fatal(err)
		}
		for {
			res := r.ac.Offer(aatomic.MakeBuffer(body), 0, int32(len(body)))
			if res >= 0 {
				break
			}
			if res == aeron.PublicationClosed || res == aeron.MaxPositionExceeded || time.Now().After(deadline) {
				r.t.Fatalf("resend: offer %d", res)
			}
			r.ac.Poll()
		}
		p.resent = true
		r.resent++
	}
	if r.unsent != nil {
		// Never sent: it goes out as the next command of the new session.
		r.body, _ = wire.AppendCommand(r.body[:0], r.unsent)
	}
	if now := time.Now(); r.next.Before(now) {
		r.next = now // the fixed rate resumes from here, with no burst
	}
}

// worst is the worst round trip of the commands due in [from, to).
func (r *rateClient) worst(from, to time.Time) (time.Duration, int) {
	var m time.Duration
	n := 0
	for _, s := range r.lat {
		if !s.due.Before(from) && s.due.Before(to) {
			m = max(m, s.d)
			n++
		}
	}
	return m, n
}

func (r *rateClient) hash() string { return fmt.Sprintf("%016x", r.ref.StateHash()) }

// lastStatus is a member's latest status record (zero before the first).
func (m *aeronMember) lastStatus() logRecord {
	var last logRecord
	for _, r := range m.svc.records() {
		if r.Msg == "status" {
			last = r
		}
	}
	return last
}

// leaderOf waits (at most limit) until one of the live members reports
// LEADER and the others FOLLOWER in their latest status, and returns the
// leader's index.
func leaderOf(t *testing.T, ms []*aeronMember, live []int, limit time.Duration, step func()) int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		leader, followers := -1, 0
		var roles []string
		for _, i := range live {
			switch st := ms[i].lastStatus(); st.Role {
			case "LEADER":
				leader = i
			case "FOLLOWER":
				followers++
			default:
				roles = append(roles, fmt.Sprintf("%d:%q", i, st.Role))
			}
			select {
			case <-ms[i].svc.exited:
				t.Fatalf("member %d's aeron-node exited (%v):\n%s\nJVM:\n%s", i, ms[i].svc.err, ms[i].svc.stderr.String(), ms[i].jvm.Output())
			default:
			}
		}
		if leader >= 0 && followers == len(live)-1 {
			return leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader among members %v within %v (others %v)", live, limit, roles)
		}
		if step != nil {
			step()
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// startAll starts the members' JVMs, then each member's service once its
// JVM has created the cluster directory. A service started with its JVM
// waits for the driver and then for the cluster directory, each up to its
// media driver timeout (5 s here), and three JVMs starting at once on a
// loaded two-core machine took longer than that to create it. A longer
// timeout is no cure: the service counts a driver as live while its
// heartbeat is younger than the timeout, so on a restart 11 s after a
// kill -9 a timeout above 11 s takes the dead driver's cnc.dat, not yet
// replaced by the new JVM, for a live one.
func startAll(t *testing.T, ms []*aeronMember) {
	t.Helper()
	for _, m := range ms {
		m.launchJVM()
	}
	deadline := time.Now().Add(90 * time.Second)
	for i, m := range ms {
		for {
			if _, err := os.Stat(m.clusterDir()); err == nil {
				break
			}
			if done, err := m.jvm.Exited(); done {
				t.Fatalf("member %d's JVM exited (%v) before creating %s:\n%s", i, err, m.clusterDir(), m.jvm.Output())
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d's JVM created no %s within 90 s:\n%s", i, m.clusterDir(), m.jvm.Output())
			}
			time.Sleep(20 * time.Millisecond)
		}
		m.launchService()
	}
}

// TestAeronClusterThreeNodes runs `matchlog aeron-node` as the service of
// each member of a three-member real Aeron Cluster on loopback
// (ClusteredMediaDriver JVMs), with a client sending at a fixed rate
// throughout: a snapshot under load (ClusterTool snapshot on the leader)
// is taken by all three services at the reference's hash; a follower is
// killed (kill -9, JVM and service as one unit), restarted once its mark
// files have expired, and catches up with the leader; then the leader is
// killed, the two others elect a new leader, the client sends every
// unanswered command again on a new session (the engine refuses the ones
// applied before as duplicates) and the old leader is restarted as a
// follower. Every command is answered as the reference engine answers it,
// and all three members end at the reference's state hash. The worst
// client delay at the snapshot, the follower's rejoin time and the
// failover time are logged.
func TestAeronClusterThreeNodes(t *testing.T) {
	j := aerontest.Require(t)
	t0 := time.Now()
	ms := make([]*aeronMember, 3)
	used := map[int]bool{}
	var eps, ingress []string
	for i := range ms {
		m := &aeronMember{t: t, j: j, dir: t.TempDir(), id: i, extra: threeNodeProps(),
			svcArgs: []string{"--snapshot-channel", threeNodeSnapshotChannel}}
		for k := range m.ports {
			for m.ports[k] == 0 || used[m.ports[k]] {
				m.ports[k] = aerontest.FreeUDPPort(t)
			}
			used[m.ports[k]] = true
		}
		ms[i] = m
		eps = append(eps, memberEndpoints(i, m.ports))
		ingress = append(ingress, fmt.Sprintf("%d=127.0.0.1:%d", i, m.ports[0]))
	}
	for _, m := range ms {
		m.members = strings.Join(eps, "|")
	}
	all := []int{0, 1, 2}
	startAll(t, ms)
	L := leaderOf(t, ms, all, 90*time.Second, nil)
	var F, C int // the follower killed, the one the client's driver belongs to
	for _, i := range all {
		if i != L {
			F, C = i, i
			break
		}
	}
	for _, i := range all {
		if i != L && i != F {
			C = i
		}
	}
	t.Logf("cluster up after %v: leader %d; member %d is the follower to kill, the client uses member %d's driver", time.Since(t0), L, F, C)

	c := &rateClient{t: t, gen: enginetest.NewGen(33, enginetest.GenConfig{}), ref: engine.New(),
		aeronDir: ms[C].aeronDir(), endpoints: strings.Join(ingress, ","),
		period: time.Second / time.Duration(*threeNodeRate), maxPending: 4 * *threeNodeRate}
	if !c.connect(30 * time.Second) {
		t.Fatal("cluster client not connected within 30 s")
	}
	defer c.close()
	c.sending, c.next = true, time.Now()
	c.run(time.Second, nil, 0, "")

	// A snapshot under load.
	done := make(chan error, 1)
	snapReq := time.Now()
	go func() {
		r, err := j.Run(t, 0, nil, aerontest.ClusterTool, ms[L].clusterDir(), "snapshot")
		if err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("ClusterTool snapshot: exit %d: %s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
		done <- err
	}()
	var snapDone time.Time
	snapped := func() bool {
		if snapDone.IsZero() {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				snapDone = time.Now()
			default:
				return false
			}
		}
		for _, m := range ms {
			if !strings.Contains(m.svc.stderr.String(), `"msg":"snapshot"`) {
				return false
			}
		}
		return time.Since(snapDone) > time.Second
	}
	c.run(0, snapped, 60*time.Second, "snapshot under load")
	before, nBefore := c.worst(t0, snapReq)
	at, nAt := c.worst(snapReq, snapDone.Add(time.Second))
	var takes []string
	snapPos := int64(-1)
	for i, m := range ms {
		for _, r := range m.svc.records() {
			if r.Msg == "snapshot" {
				takes = append(takes, fmt.Sprintf("member %d at %d: take %s (%s since the callback before)", i, r.LogPosition, r.Take, r.GapBefore))
				if snapPos >= 0 && r.LogPosition != snapPos {
					t.Fatalf("snapshots at different positions: %v", takes)
				}
				snapPos = r.LogPosition
			}
		}
	}
	t.Logf("snapshot under load (%d/s): ClusterTool returned after %v; %v; client's worst round trip %v around it (%d commands), %v before it (%d commands)",
		*threeNodeRate, snapDone.Sub(snapReq), takes, at, nAt, before, nBefore)

	// kill -9 a follower, JVM and service; restart it after the mark
	// file rule; it catches up with the leader.
	killF := time.Now()
	ms[F].crash()
	c.run(markFileWait, nil, 0, "")
	restartF := time.Now()
	leaderPos := ms[L].lastStatus().LogPosition
	ms[F].launch()
	var rejoined time.Time
	c.run(0, func() bool {
		st := ms[F].lastStatus()
		if st.Role == "FOLLOWER" && st.LogPosition >= leaderPos {
			rejoined = st.Time
			return true
		}
		select {
		case <-ms[F].svc.exited:
			t.Fatalf("restarted member %d's aeron-node exited (%v):\n%s\nJVM:\n%s", F, ms[F].svc.err, ms[F].svc.stderr.String(), ms[F].jvm.Output())
		default:
		}
		return false
	}, 60*time.Second, "follower rejoin")
	st := ms[F].svc.waitLog(t, "started", time.Second, nil)
	t.Logf("follower %d killed with the client sending; restarted %v later; restored a snapshot %v (hash %s), at the leader's position at its restart (%d) %v after the restart",
		F, restartF.Sub(killF), st.Restored, st.StateHash, leaderPos, rejoined.Sub(restartF))

	// kill -9 the leader; a new leader is elected by the two others; the
	// client resends what is unanswered on a new session.
	c.run(time.Second, nil, 0, "")
	answeredBefore := c.answered
	killL := time.Now()
	ms[L].crash()
	c.failover(60 * time.Second)
	connected := time.Now()
	newL := leaderOf(t, ms, []int{F, C}, 30*time.Second, c.step)
	var elected time.Time
	for _, r := range ms[newL].svc.records() {
		if r.Msg == "role" && r.Role == "LEADER" {
			elected = r.Time
		}
	}
	c.run(0, func() bool { return c.answered > answeredBefore && c.answeredAt.After(killL) }, 30*time.Second, "first answer after failover")
	firstAnswer := c.answeredAt
	t.Logf("leader %d killed: member %d leader %v later, the client's new session open after %v, first answer after %v; %d commands resent",
		L, newL, elected.Sub(killL), connected.Sub(killL), firstAnswer.Sub(killL), c.resent)
	c.run(markFileWait-time.Since(killL), nil, 0, "")
	restartL := time.Now()
	leaderPos = ms[newL].lastStatus().LogPosition
	ms[L].launch()
	var rejoinedL time.Time
	c.run(0, func() bool {
		st := ms[L].lastStatus()
		if st.Role == "FOLLOWER" && st.LogPosition >= leaderPos {
			rejoinedL = st.Time
			return true
		}
		return false
	}, 60*time.Second, "old leader rejoin")
	t.Logf("old leader %d restarted %v after its kill, caught up %v after the restart", L, restartL.Sub(killL), rejoinedL.Sub(restartL))
	failWorst, nFail := c.worst(killL.Add(-time.Second), firstAnswer)

	// Stop sending; every command is answered; all three members reach
	// the reference's hash at the same position.
	c.sending = false
	c.run(0, func() bool { return len(c.pending) == 0 && c.unsent == nil }, 30*time.Second, "last answers")
	if c.answered != c.sent {
		t.Fatalf("%d commands sent, %d answered", c.sent, c.answered)
	}
	c.close()

	// matchlog aeron-client, given the three members' ingress endpoints:
	// JSON lines in, the reference's events out.
	in, wantOut := aeronClientLines(c.gen, c.ref, 200)
	clientStdin = bytes.NewReader(in)
	code, out, errb := runCLI(t, "aeron-client", "--aeron-dir", ms[C].aeronDir(), "--window", "16",
		"--ingress-endpoints", c.endpoints)
	clientStdin = os.Stdin
	if code != 0 || out != string(wantOut) {
		t.Fatalf("aeron-client: exit %d, stderr %s\n%s", code, errb, enginetest.DiffLines(strings.Split(out, "\n"), strings.Split(string(wantOut), "\n"), "aeron-client", "reference"))
	}
	t.Logf("aeron-client on the three endpoints, as the reference: %s", lastLine(string(wantOut)))

	want := c.hash()
	var final []string
	finalDeadline := time.Now().Add(30 * time.Second)
	for !func() bool {
		final = final[:0]
		pos := int64(-1)
		ok := true
		for i, m := range ms {
			st := m.lastStatus()
			final = append(final, fmt.Sprintf("%d: %s at %d (%s)", i, st.StateHash, st.LogPosition, st.Role))
			if st.StateHash != want || (pos >= 0 && st.LogPosition != pos) {
				ok = false
			}
			pos = st.LogPosition
		}
		return ok
	}() {
		if time.Now().After(finalDeadline) {
			t.Fatalf("members not all at the reference's hash %s within 30 s: %v", want, final)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d commands at %d/s, every one answered as the reference (%d egress messages; %d resent after the failover, %d of them refused as duplicates, applied before the leader's loss; %d times the window of %d was full; worst round trip across the failover %v over %d commands); members %v, reference %s; %v in all",
		c.sent, *threeNodeRate, c.msgs, c.resent, c.lostAnswers, c.full, c.maxPending, failWorst, nFail, final, want, time.Since(t0))

	// An orderly stop of the cluster (ClusterTool shutdown on the leader:
	// a snapshot on every member, then termination): every service exits
	// 0 at the reference's hash; then the JVMs.
	for try := 1; ; try++ {
		r, err := j.Run(t, 0, nil, aerontest.ClusterTool, ms[newL].clusterDir(), "shutdown")
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode == 0 {
			break
		}
		if try == 5 {
			t.Fatalf("ClusterTool shutdown: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
		t.Logf("ClusterTool shutdown, try %d: exit %d: %s", try, r.ExitCode, strings.TrimSpace(r.Stdout+r.Stderr))
		time.Sleep(200 * time.Millisecond)
	}
	lastSnap := make([]int64, len(ms))
	for i, m := range ms {
		term := m.svc.waitLog(t, "terminated", 60*time.Second, nil)
		if err := m.svc.wait(30 * time.Second); err != nil {
			t.Fatalf("member %d's aeron-node after ClusterTool shutdown: %v\n%s", i, err, m.svc.stderr.String())
		}
		if term.StateHash != want {
			t.Fatalf("member %d terminated at hash %s, reference %s", i, term.StateHash, want)
		}
		for _, r := range m.svc.records() {
			if r.Msg == "snapshot" {
				lastSnap[i] = r.LogPosition
			}
		}
		if err := m.jvm.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	// Every snapshot recording (the consensus module's and the service's,
	// on the snapshot channel) was written at the snapshot channel's MTU.
	for i, m := range ms {
		var d struct {
			Recordings []struct {
				ID      int64  `json:"recording_id"`
				MTU     int32  `json:"mtu_length"`
				Channel string `json:"original_channel"`
			} `json:"recordings"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, "archive", "describe", "--dir", m.dir, "--json")), &d); err != nil {
			t.Fatal(err)
		}
		snaps := 0
		for _, r := range d.Recordings {
			if !strings.Contains(r.Channel, "alias=snapshot") {
				continue // the log, on the log channel
			}
			snaps++
			if r.MTU != 65504 {
				t.Fatalf("member %d: snapshot recording %d (%s) has MTU %d, want 65504", i, r.ID, r.Channel, r.MTU)
			}
		}
		if snaps < 4 {
			t.Fatalf("member %d: %d snapshot recordings, want the consensus module's and the service's of two snapshots: %+v", i, snaps, d.Recordings)
		}
	}

	// matchlog's retention tools on the stopped members' directories:
	// every member restarts normally from the shutdown snapshot; a purge
	// keeping one generation is approved and executed; the members still
	// restart normally, and do: the cluster comes back at the reference's
	// hash.
	args := func(verb string, more ...string) []string {
		a := []string{"retention", verb, "--live", filepath.Join(ms[newL].dir, "archive"), "--json"}
		for i, m := range ms {
			a = append(a, "--member", fmt.Sprintf("%d=%s", i, m.dir))
		}
		return append(a, more...)
	}
	verdicts := func(when string) {
		t.Helper()
		var v struct {
			Members []struct {
				ID      int      `json:"id"`
				Verdict string   `json:"verdict"`
				Reasons []string `json:"reasons"`
				S       int64    `json:"S"`
			} `json:"members"`
		}
		if err := json.Unmarshal([]byte(mustCLI(t, args("verdict")...)), &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Members) != len(ms) {
			t.Fatalf("retention verdict %s: %d members", when, len(v.Members))
		}
		for _, m := range v.Members {
			if m.Verdict != "normal-restart" || m.S != lastSnap[m.ID] {
				t.Fatalf("retention verdict %s: member %d %s from S = %d (%v), want normal-restart from the shutdown snapshot at %d", when, m.ID, m.Verdict, m.S, m.Reasons, lastSnap[m.ID])
			}
		}
	}
	verdicts("after the shutdown")
	var pos struct {
		Members []struct {
			ID int   `json:"id"`
			S  int64 `json:"S"`
			P  int64 `json:"P"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, args("positions")...)), &pos); err != nil {
		t.Fatal(err)
	}
	if len(pos.Members) != len(ms) {
		t.Fatalf("retention positions: %d members", len(pos.Members))
	}
	for _, m := range pos.Members {
		if m.S != lastSnap[m.ID] || m.P < m.S {
			t.Fatalf("retention positions: member %d S = %d, P = %d; want S at the shutdown snapshot, %d, and P at or past it", m.ID, m.S, m.P, lastSnap[m.ID])
		}
	}
	var plan struct {
		Members []struct {
			ID       int  `json:"id"`
			Approved bool `json:"approved"`
			Manifest struct {
				Start    int64 `json:"start_position"`
				Proposed int64 `json:"proposed_start_position"`
				Delete   []struct {
					LogPosition int64 `json:"log_position"`
				} `json:"delete_snapshots"`
			} `json:"manifest"`
			Refusals []struct {
				Rule string `json:"rule"`
			} `json:"refusals"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, args("plan", "--keep", "1")...)), &plan); err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, m := range plan.Members {
		if !m.Approved || len(m.Manifest.Delete) == 0 {
			t.Fatalf("retention plan --keep 1: member %d approved %v, refusals %v, %d snapshot sets to delete (want the ones before the shutdown's)", m.ID, m.Approved, m.Refusals, len(m.Manifest.Delete))
		}
		planned = append(planned, fmt.Sprintf("member %d: log start %d -> %d, %d snapshot sets deleted", m.ID, m.Manifest.Start, m.Manifest.Proposed, len(m.Manifest.Delete)))
	}
	mustCLI(t, args("purge", "--keep", "1", "--delay", "0")...)
	verdicts("after the purge")
	t.Logf("retention purge --keep 1: %v", planned)
	startAll(t, ms)
	leaderOf(t, ms, all, 90*time.Second, nil)
	for i, m := range ms {
		st := m.svc.waitLog(t, "started", 30*time.Second, nil)
		if !st.Restored || st.StateHash != want {
			t.Fatalf("member %d restarted after the purge: restored %v at hash %s, want the reference's %s", i, st.Restored, st.StateHash, want)
		}
	}
	t.Logf("restarted after the purge, all three at the reference's hash; %v in all", time.Since(t0))
}
