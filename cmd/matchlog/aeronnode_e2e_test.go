package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/scenario"
	"github.com/matchlog/matchlog/wire"
)

// aeronNodeArgs adds flags to the aeron-node of TestAeronNodeSingleNode,
// to measure settings (e.g. -aeron-node.args='--archive-idle sleep:50ms').
var aeronNodeArgs = flag.String("aeron-node.args", "", "extra matchlog aeron-node flags for TestAeronNodeSingleNode")

// aeronMember is one member of a real Aeron Cluster: a ClusteredMediaDriver
// JVM (media driver, archive, consensus module) and `matchlog aeron-node`
// as its service, supervised as one unit.
type aeronMember struct {
	t     *testing.T
	j     *aerontest.Java
	dir   string // holds aeron/, archive/, cluster/
	ports [5]int // ingress, consensus, log, catch-up, archive control
	// id and members are the member id and aeron.cluster.members (of a
	// cluster of several members); members empty is a one-member cluster
	// of member 0 on ports.
	id      int
	members string
	extra   []string // more system properties
	svcArgs []string // more aeron-node flags

	jvm *aerontest.Process
	svc *aeronNodeChild
}

func (m *aeronMember) aeronDir() string   { return filepath.Join(m.dir, "aeron") }
func (m *aeronMember) clusterDir() string { return filepath.Join(m.dir, "cluster") }

// memberEndpoints is a member's entry of aeron.cluster.members.
func memberEndpoints(id int, ports [5]int) string {
	ep := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	return fmt.Sprintf("%d,%s,%s,%s,%s,%s", id, ep(0), ep(1), ep(2), ep(3), ep(4))
}

// props are the JVM's system properties: one member, SHARED threading and
// sleeping idle strategies, 64 KiB terms, a nanosecond cluster clock,
// file sync level 0, loopback only.
func (m *aeronMember) props() []string {
	ep := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", m.ports[i]) }
	members := m.members
	if members == "" {
		members = memberEndpoints(0, m.ports)
	}
	return append([]string{
		"aeron.dir=" + m.aeronDir(),
		"aeron.dir.delete.on.start=true",
		"aeron.dir.delete.on.shutdown=true",
		"aeron.threading.mode=SHARED",
		"aeron.shared.idle.strategy=sleep-ms",
		"aeron.term.buffer.length=65536",
		"aeron.ipc.term.buffer.length=65536",
		"aeron.term.buffer.sparse.file=true",
		"aeron.archive.dir=" + filepath.Join(m.dir, "archive"),
		"aeron.archive.threading.mode=SHARED",
		"aeron.archive.idle.strategy=sleep-ms",
		"aeron.archive.control.channel=aeron:udp?endpoint=" + ep(4),
		"aeron.archive.control.response.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.file.sync.level=0",
		"aeron.archive.catalog.file.sync.level=0",
		"aeron.archive.segment.file.length=1048576",
		"aeron.archive.recording.events.enabled=false",
		"aeron.cluster.dir=" + m.clusterDir(),
		"aeron.cluster.member.id=" + strconv.Itoa(m.id),
		"aeron.cluster.members=" + members,
		"aeron.cluster.ingress.channel=aeron:udp",
		"aeron.cluster.log.channel=aeron:udp?term-length=65536",
		"aeron.cluster.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.cluster.service.count=1",
		"aeron.cluster.clock=io.aeron.cluster.NanosecondClusterClock",
		"aeron.cluster.idle.strategy=sleep-ms",
		"aeron.cluster.file.sync.level=0",
	}, m.extra...)
}

// start starts the JVM, then the service (which waits for the driver).
func (m *aeronMember) start() {
	m.t.Helper()
	m.launch()
	m.svc.waitLog(m.t, "started", 60*time.Second, nil)
	m.svc.waitLog(m.t, "role", 30*time.Second, func(r logRecord) bool { return r.Role == "LEADER" })
}

// launch starts the JVM and the service and returns at once.
func (m *aeronMember) launch() {
	m.t.Helper()
	m.launchJVM()
	m.launchService()
}

// launchJVM starts the JVM and returns at once.
func (m *aeronMember) launchJVM() {
	m.t.Helper()
	m.jvm = m.j.Start(m.t, m.props(), aerontest.ClusteredMediaDriver)
}

// launchService starts the service and returns at once.
func (m *aeronMember) launchService() {
	m.t.Helper()
	args := []string{"--aeron-dir", m.aeronDir(), "--cluster-dir", m.clusterDir(),
		"--media-driver-timeout", "5s", "--status-every", "100ms", "--log-format", "json", "--metrics", "127.0.0.1:0"}
	args = append(args, m.svcArgs...)
	m.svc = startAeronNodeChild(m.t, append(args, strings.Fields(*aeronNodeArgs)...)...)
}

// crash kills the member as one unit, JVM and service, with SIGKILL.
func (m *aeronMember) crash() {
	m.t.Helper()
	if err := m.jvm.Crash(); err != nil {
		m.t.Fatal(err)
	}
	_ = m.svc.cmd.Process.Kill()
	<-m.svc.exited
}

// abort stops the member without a snapshot (ClusterTool abort): the
// consensus module terminates the service, then the JVM exits. It returns
// the service's "terminated" record.
func (m *aeronMember) abort() logRecord {
	m.t.Helper()
	// The consensus module's control toggle takes ABORT only while it is
	// NEUTRAL (not, e.g., just after a snapshot): retry a few times.
	for try := 1; ; try++ {
		r, err := m.j.Run(m.t, 0, nil, aerontest.ClusterTool, m.clusterDir(), "abort")
		if err != nil {
			m.t.Fatal(err)
		}
		if r.ExitCode == 0 {
			break
		}
		if try == 5 {
			m.t.Fatalf("ClusterTool abort: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
		m.t.Logf("ClusterTool abort, try %d: exit %d: %s", try, r.ExitCode, strings.TrimSpace(r.Stdout+r.Stderr))
		time.Sleep(200 * time.Millisecond)
	}
	r := m.svc.waitLog(m.t, "terminated", 30*time.Second, nil)
	if err := m.svc.wait(30 * time.Second); err != nil {
		m.t.Fatalf("aeron-node after abort: %v\n%s", err, m.svc.stderr.String())
	}
	if err := m.jvm.Stop(); err != nil {
		m.t.Fatal(err)
	}
	return r
}

// aeronNodeChild is `matchlog aeron-node` running as a child process.
type aeronNodeChild struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 8<<20 {
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startAeronNodeChild(t *testing.T, args ...string) *aeronNodeChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(append([]string{"aeron-node"}, args...), "\x1f"))
	c := &aeronNodeChild{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// metric scrapes the child's --metrics endpoint and returns the value of
// the sample line starting with name (e.g. `matchlog_node_up`).
func (c *aeronNodeChild) metric(t *testing.T, name string) float64 {
	t.Helper()
	url := ""
	for _, l := range strings.Split(c.stdout.String(), "\n") {
		if u, ok := strings.CutPrefix(l, "metrics "); ok {
			url = u
		}
	}
	if url == "" {
		t.Fatalf("aeron-node printed no metrics URL: %q", c.stdout.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the metrics:\n%s", name, body)
	return 0
}

func (c *aeronNodeChild) wait(timeout time.Duration) error {
	select {
	case <-c.exited:
		return c.err
	case <-time.After(timeout):
		return fmt.Errorf("still running after %v", timeout)
	}
}

// logRecord is one JSON log line of aeron-node.
type logRecord struct {
	Msg         string    `json:"msg"`
	Level       string    `json:"level"`
	Role        string    `json:"role"`
	LogPosition int64     `json:"log_position"`
	StateHash   string    `json:"state_hash"`
	Restored    bool      `json:"restored"`
	TermID      int64     `json:"leadership_term_id"`
	Applied     int64     `json:"applied"`
	Take        string    `json:"take"`
	GapBefore   string    `json:"gap_before"`
	Gap         string    `json:"gap"`
	Err         string    `json:"err"`
	Time        time.Time `json:"time"`
}

func (c *aeronNodeChild) records() []logRecord {
	var out []logRecord
	sc := bufio.NewScanner(strings.NewReader(c.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r logRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Msg != "" {
			out = append(out, r)
		}
	}
	return out
}

// waitLog waits for a record msg (satisfying ok, if set).
func (c *aeronNodeChild) waitLog(t *testing.T, msg string, timeout time.Duration, ok func(logRecord) bool) logRecord {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, r := range c.records() {
			if r.Msg == msg && (ok == nil || ok(r)) {
				return r
			}
		}
		select {
		case <-c.exited:
			t.Fatalf("aeron-node exited (%v) before logging %q:\n%s", c.err, msg, c.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("aeron-node logged no %q within %v:\n%s", msg, timeout, c.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refClient sends commands to the cluster through aeron-go's cluster
// client and checks every egress message against a reference engine fed
// the same commands (with the cluster's timestamps, from the egress
// headers).
type refClient struct {
	t   *testing.T
	gen *enginetest.Gen
	ref *engine.Engine

	ac      *aclient.AeronCluster
	pending []engine.Command // sent, not yet answered in full
	want    [][]byte         // the rest of the oldest pending command's answer
	msgs    int
	lat     []time.Duration
	sentAt  []time.Time
	sent    int // commands sent on all sessions
	failure error
}

func (r *refClient) OnConnect(*aclient.AeronCluster)                 {}
func (r *refClient) OnDisconnect(_ *aclient.AeronCluster, d string)  { r.fail("disconnected: %s", d) }
func (r *refClient) OnNewLeader(*aclient.AeronCluster, int64, int32) {}
func (r *refClient) OnError(_ *aclient.AeronCluster, details string) {
	r.fail("egress error: %s", details)
}
func (r *refClient) fail(format string, a ...any) {
	if r.failure == nil {
		r.failure = fmt.Errorf(format, a...)
	}
}

func (r *refClient) OnMessage(_ *aclient.AeronCluster, ts int64, buf *aatomic.Buffer, off, n int32, _ *logbuffer.Header) {
	got := buf.GetBytesArray(off, n)
	if r.want == nil {
		if len(r.pending) == 0 {
			r.fail("egress message with no command outstanding: %x", got)
			return
		}
		c := &r.pending[0]
		c.Time = ts
		evs := r.ref.Apply(c)
		r.gen.Observe(evs)
		if len(evs) == 0 {
			r.want = [][]byte{wire.AppendDuplicate(nil, c.Source, c.Seq)}
		}
		for i := range evs {
			r.want = append(r.want, wire.AppendEvent(nil, &evs[i]))
		}
	}
	if !bytes.Equal(got, r.want[0]) {
		r.fail("egress message %d (command %s): got %x, want %x", r.msgs, enginetest.FormatCommand(&r.pending[0]), got, r.want[0])
	}
	r.msgs++
	r.want = r.want[1:]
	if len(r.want) == 0 {
		r.want = nil
		r.pending = r.pending[1:]
		r.lat = append(r.lat, time.Since(r.sentAt[0]))
		r.sentAt = r.sentAt[1:]
	}
}

// connect opens a session on the member's ingress through its media
// driver.
func (r *refClient) connect(m *aeronMember) {
	r.t.Helper()
	ctx := aeron.NewContext().AeronDir(m.aeronDir()).MediaDriverTimeout(10 * time.Second).
		IdleStrategy(idlestrategy.Sleeping{SleepFor: time.Millisecond})
	opts := aclient.NewOptions()
	opts.IngressChannel = "aeron:udp"
	opts.IngressEndpoints = fmt.Sprintf("0=127.0.0.1:%d", m.ports[0])
	opts.EgressChannel = "aeron:udp?endpoint=127.0.0.1:0"
	opts.IdleStrategy = idlestrategy.Sleeping{SleepFor: 100 * time.Microsecond}
	ac, err := aclient.NewAeronCluster(ctx, opts, r)
	if err != nil {
		r.t.Fatal(err)
	}
	r.ac = ac
	deadline := time.Now().Add(30 * time.Second)
	for !ac.IsConnected() {
		if ac.Poll() == 0 {
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) {
			r.t.Fatal("cluster client not connected within 30 s")
		}
	}
}

func (r *refClient) close() {
	if r.ac != nil {
		r.ac.Close()
		r.ac = nil
	}
}

// send sends n commands, at most window outstanding, and waits for every
// answer; it fails the test on the first egress mismatch.
func (r *refClient) send(n, window int) { r.sendUntil(n, window, nil) }

// sendUntil is send that stops sending early once stop (if set) returns
// true; it returns how many commands it sent.
func (r *refClient) sendUntil(n, window int, stop func() bool) int {
	r.t.Helper()
	r.lat = r.lat[:0]
	deadline := time.Now().Add(60 * time.Second)
	var body []byte
	sent := 0
	for sent < n || len(r.pending) > 0 {
		if stop != nil && sent < n && stop() {
			n = sent
		}
		if r.failure != nil {
			r.t.Fatal(r.failure)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d commands sent, %d unanswered after 60 s", sent, n, len(r.pending))
		}
		if sent < n && len(r.pending) < window {
			var c engine.Command
			r.gen.Next(&c)
			var err error
			if body, err = wire.AppendCommand(body[:0], &c); err != nil {
				continue // a deliberately invalid command the wire cannot carry
			}
			buf := aatomic.MakeBuffer(body)
			for {
				res := r.ac.Offer(buf, 0, int32(len(body)))
				if res >= 0 {
					break
				}
				if res == aeron.NotConnected || res == aeron.PublicationClosed || res == aeron.MaxPositionExceeded {
					r.t.Fatalf("ingress offer: %d", res)
				}
				r.ac.Poll()
				if time.Now().After(deadline) {
					r.t.Fatal("ingress back-pressured for 60 s")
				}
			}
			r.pending = append(r.pending, c)
			r.sentAt = append(r.sentAt, time.Now())
			sent++
			r.sent++
			continue
		}
		if r.ac.Poll() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	if r.failure != nil {
		r.t.Fatal(r.failure)
	}
	return sent
}

func (r *refClient) maxLatency() time.Duration {
	var m time.Duration
	for _, d := range r.lat {
		m = max(m, d)
	}
	return m
}

func (r *refClient) hash() string { return fmt.Sprintf("%016x", r.ref.StateHash()) }

// TestAeronNodeSingleNode runs `matchlog aeron-node` as the service of a
// one-member real Aeron Cluster (ClusteredMediaDriver): every egress
// message of a few thousand commands equals a reference engine's; a
// snapshot requested with ClusterTool carries the reference's hash; after
// a stop without a snapshot (ClusterTool abort) and a restart on the same
// directories the service restores the snapshot's hash, replays the log
// to the hash at the stop, and accepts new commands; losing the JVM ends
// the service with exit 1.
func TestAeronNodeSingleNode(t *testing.T) {
	j := aerontest.Require(t)
	m := &aeronMember{t: t, j: j, dir: t.TempDir()}
	for i := range m.ports {
		m.ports[i] = aerontest.FreeUDPPort(t)
	}
	m.start()
	c := &refClient{t: t, gen: enginetest.NewGen(15, enginetest.GenConfig{}), ref: engine.New()}
	c.connect(m)
	const phase1, phase2, phase3 = 1500, 10000, 500
	c.send(phase1, 32)
	t.Logf("phase 1: %d commands, %d egress messages, worst round trip %v", phase1, c.msgs, c.maxLatency())

	// A snapshot with no traffic: its hash is the reference's now.
	snapHash := c.hash()
	t0 := time.Now()
	j.MustRun(t, nil, aerontest.ClusterTool, m.clusterDir(), "snapshot")
	snap := m.svc.waitLog(t, "snapshot", 30*time.Second, nil)
	t.Logf("snapshot at %d: ClusterTool returned after %v, service take %s", snap.LogPosition, time.Since(t0), snap.Take)
	if up, applied, snaps, pos := m.svc.metric(t, "matchlog_node_up"), m.svc.metric(t, "matchlog_log_entries_applied_total"),
		m.svc.metric(t, "matchlog_snapshots_total"), m.svc.metric(t, "matchlog_snapshot_position_bytes"); up != 1 || applied != float64(c.sent) || snaps != 1 || pos != float64(snap.LogPosition) {
		t.Fatalf("metrics: up %v, applied %v (sent %d), snapshots %v at %v (logged at %d)", up, applied, c.sent, snaps, pos, snap.LogPosition)
	}
	if snap.StateHash != snapHash {
		t.Fatalf("snapshot state hash %s, reference %s", snap.StateHash, snapHash)
	}

	// A second snapshot under load (at most phase2 commands, 32
	// outstanding), for the client's worst delay around it.
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		r, err := j.Run(t, 0, nil, aerontest.ClusterTool, m.clusterDir(), "snapshot")
		if err == nil && r.ExitCode != 0 {
			err = fmt.Errorf("ClusterTool snapshot: exit %d: %s%s", r.ExitCode, r.Stdout, r.Stderr)
		}
		done <- err
	}()
	var snapDone, after time.Time
	sent := c.sendUntil(phase2, 32, func() bool {
		if snapDone.IsZero() {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				snapDone = time.Now()
			default:
			}
			return false
		}
		if after.IsZero() {
			after = time.Now()
		}
		return time.Since(after) > 200*time.Millisecond
	})
	if snapDone.IsZero() {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		t.Logf("the snapshot under load came after the %d commands of phase 2", sent)
	}
	var takes []string
	for _, r := range m.svc.records() {
		switch r.Msg {
		case "snapshot":
			takes = append(takes, fmt.Sprintf("%d: %s since the callback before, take %s", r.LogPosition, r.GapBefore, r.Take))
		case "after snapshot":
			takes = append(takes, fmt.Sprintf("then %s to the next callback", r.Gap))
		}
	}
	if n := strings.Count(m.svc.stderr.String(), `"msg":"snapshot"`); n != 2 {
		t.Fatalf("snapshots logged: %d (%v), want 2", n, takes)
	}
	t.Logf("phase 2: %d commands with a snapshot under way (snapshots %v): client's worst round trip %v", sent, takes, c.maxLatency())
	phase2Sent := sent
	c.close()

	stopHash := c.hash()
	term := m.abort()
	if term.StateHash != stopHash {
		t.Fatalf("hash at the stop %s, reference %s", term.StateHash, stopHash)
	}
	var lastSnap logRecord
	for _, r := range m.svc.records() {
		if r.Msg == "snapshot" {
			lastSnap = r
		}
	}

	// Restart on the same directories.
	t1 := time.Now()
	m.start()
	st := m.svc.waitLog(t, "started", time.Second, nil)
	if !st.Restored || st.StateHash != lastSnap.StateHash || st.TermID != lastSnap.TermID {
		t.Fatalf("restart: restored %v with hash %s in term %d, the last snapshot's %s in term %d",
			st.Restored, st.StateHash, st.TermID, lastSnap.StateHash, lastSnap.TermID)
	}
	rs := m.svc.waitLog(t, "status", 60*time.Second, func(r logRecord) bool { return r.LogPosition >= term.LogPosition })
	t.Logf("restart: started after %v, replayed to %d (the stop was at %d)", time.Since(t1), rs.LogPosition, term.LogPosition)
	if rs.StateHash != stopHash {
		t.Fatalf("after the replay to %d: hash %s, at the stop %s", rs.LogPosition, rs.StateHash, stopHash)
	}
	c.connect(m)
	c.send(phase3, 32)
	c.close()

	// matchlog aeron-client: JSON lines in, the reference's events out.
	in, want := aeronClientLines(c.gen, c.ref, 300)
	clientStdin = bytes.NewReader(in)
	code, out, errb := runCLI(t, "aeron-client", "--aeron-dir", m.aeronDir(), "--window", "16",
		"--ingress-endpoints", fmt.Sprintf("0=127.0.0.1:%d", m.ports[0]))
	clientStdin = os.Stdin
	if code != 0 || out != string(want) {
		t.Fatalf("aeron-client: exit %d, stderr %s\n%s", code, errb, enginetest.DiffLines(strings.Split(out, "\n"), strings.Split(string(want), "\n"), "aeron-client", "reference"))
	}
	t.Logf("aeron-client, as the reference: %s", lastLine(string(want)))
	finalHash := c.hash()
	term = m.abort()
	if term.StateHash != finalHash {
		t.Fatalf("final hash %s, reference %s", term.StateHash, finalHash)
	}
	t.Logf("%d commands, %d egress messages, all equal to the reference", phase1+phase2Sent+phase3, c.msgs)

	// Real Aeron's tools accept the directories: ArchiveTool verify -a (on
	// a copy: it may mark the catalog), ClusterTool recording-log (equal
	// to matchlog's) and describe.
	v := t.TempDir()
	fixtures.CopyDirs(t, m.dir, v, "archive")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, filepath.Join(v, "archive"), "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 || strings.Count(r.Stdout, ") OK") < 5 || strings.Contains(r.Stdout, "INVALID") {
		t.Fatalf("ArchiveTool verify -a: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	rl := j.MustRun(t, nil, aerontest.ClusterTool, m.clusterDir(), "recording-log")
	theirs, err := aerontest.ParseRecordingLog(rl)
	if err != nil {
		t.Fatal(err)
	}
	var ours entriesJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recording-log", "--dir", m.dir, "--json")), &ours); err != nil {
		t.Fatal(err)
	}
	if len(ours.Entries) != len(theirs) || len(theirs) < 6 {
		t.Fatalf("recording-log: matchlog %d entries, ClusterTool %d (want 2 terms and 2 snapshots of 2 components)\n%s", len(ours.Entries), len(theirs), rl)
	}
	for i, e := range ours.Entries {
		got := aerontest.Entry{RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition, Timestamp: e.Timestamp,
			ServiceID: e.ServiceID, Type: e.Type, Valid: e.Valid, EntryIndex: e.Index}
		if got != theirs[i] {
			t.Errorf("recording-log entry %d: matchlog %+v, ClusterTool %+v", i, got, theirs[i])
		}
	}
	if out := j.MustRun(t, nil, aerontest.ClusterTool, m.clusterDir(), "describe"); !strings.Contains(out, "componentType=CONSENSUS_MODULE") {
		t.Errorf("ClusterTool describe:\n%s", out)
	}

	// SIGTERM to the service: it stops (exit 0) and logs the state hash.
	// Then the JVM (supervised as one unit).
	m.start()
	if err := m.svc.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := m.svc.wait(30 * time.Second); err != nil {
		t.Fatalf("aeron-node after SIGINT: %v\n%s", err, m.svc.stderr.String())
	}
	if st := m.svc.waitLog(t, "stopped", time.Second, nil); st.StateHash != finalHash {
		t.Fatalf("stopped by a signal with hash %s, want %s", st.StateHash, finalHash)
	}
	if err := m.jvm.Stop(); err != nil {
		t.Fatal(err)
	}

	// The JVM killed (kill -9: its cnc.dat stays, its heartbeat stops): the
	// service exits 1 once the heartbeat is older than the driver timeout.
	m.start()
	t2 := time.Now()
	m.jvm.Kill()
	err = m.svc.wait(30 * time.Second)
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("aeron-node after the JVM's kill -9: %v\n%s", err, m.svc.stderr.String())
	}
	t.Logf("aeron-node exited 1 %v after the JVM's kill -9 (media driver timeout 5 s): %s", time.Since(t2), lastLine(m.svc.stderr.String()))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// aeronClientLines generates n commands with gen, applies each to the
// reference engine ref, and returns them as `matchlog aeron-client`'s JSON
// input lines and the output it must print: each command's events as
// engine run writes them (a duplicate line where the engine applied none)
// and the summary line.
func aeronClientLines(gen *enginetest.Gen, ref *engine.Engine, n int) (in, want []byte) {
	count, events, dups := 0, 0, 0
	for count < n {
		var cmd engine.Command
		gen.Next(&cmd)
		if _, err := wire.AppendCommand(nil, &cmd); err != nil {
			continue
		}
		in = scenario.AppendCommand(in, &cmd)
		evs := ref.Apply(&cmd)
		gen.Observe(evs)
		if len(evs) == 0 {
			want = fmt.Appendf(want, "{\"event\":\"duplicate\",\"source\":%d,\"seq\":%d}\n", cmd.Source, cmd.Seq)
			dups++
		}
		for i := range evs {
			want = scenario.AppendEvent(want, &evs[i])
		}
		events += len(evs)
		count++
	}
	return in, fmt.Appendf(want, "{\"commands\":%d,\"events\":%d,\"duplicates\":%d}\n", count, events, dups)
}
