package aeronbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/matchlog/matchlog/bench/clusterbench"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/measure"
)

// Options configure Run.
type Options struct {
	// Orders is the number of resting orders of the book (default 100,000).
	Orders int
	// Nodes is the number of cluster members: 1 or 3 (default 1).
	Nodes int
	// Rate is the probes' fixed rate, commands a second (default 1,000).
	Rate int
	// Window bounds the commands outstanding while the book is built
	// (default 1,024).
	Window int
	// Classpath is the Aeron classpath (AERON_CLASSPATH); Run fails with
	// ErrNoClasspath when it is empty.
	Classpath string
	// Service returns the command that runs `matchlog aeron-node` with
	// args; Run starts and stops it.
	Service func(args []string) *exec.Cmd
	// Dir is the parent of the bench's temporary directory (os.TempDir()
	// if empty); it is removed afterwards.
	Dir string
	// Seed of the book (default 1).
	Seed uint64
	// Native runs the native node's pauseless snapshot on the same book
	// size after the Aeron part (clusterbench.PauseReport).
	Native bool
	// Progress, if set, receives progress lines.
	Progress io.Writer
}

// Result is what Run measured. Times in ms are of one event; the
// restart's, rejoin's and failover's are from the restart or the kill.
type Result struct {
	Orders int `json:"orders"`
	Nodes  int `json:"nodes"`
	Rate   int `json:"rate"`
	// StartupS: from the first JVM's start to a leader; BuildS and
	// BuildPerS: the book through the ingress (commands answered).
	StartupS  float64 `json:"startup_s"`
	BuildS    float64 `json:"build_s"`
	BuildPerS float64 `json:"build_per_s"`
	// TakeMs is the leader's service's take (OnTakeSnapshot), TakeMaxMs
	// the slowest member's; GapBeforeMs the leader's time from the
	// callback before to the take (mostly aeron-go's archive connection).
	TakeMs      float64 `json:"take_ms"`
	TakeMaxMs   float64 `json:"take_max_ms"`
	GapBeforeMs float64 `json:"gap_before_ms"`
	// SnapshotMs runs from the earliest member's snapshot start (its
	// callback before the take) to the latest member's next callback
	// after it; ToolMs is ClusterTool snapshot's run, JVM start included.
	SnapshotMs float64 `json:"snapshot_ms"`
	ToolMs     float64 `json:"tool_ms"`
	// LeaderSnapshotMs is the leader's alone: from its snapshot start to
	// its next callback (a follower's service behind the log snapshots
	// later, which SnapshotMs includes).
	LeaderSnapshotMs float64 `json:"leader_snapshot_ms"`
	// NoSnapshotP99Ms / MaxMs: probes in the second before ClusterTool
	// started; PauseMaxMs / P99Ms: probes due from the snapshot's start to
	// 200 ms after its end (PauseProbes of them). Round trips from each
	// probe's scheduled time (coordinated omission corrected).
	NoSnapshotP99Ms float64 `json:"no_snapshot_p99_ms"`
	NoSnapshotMaxMs float64 `json:"no_snapshot_max_ms"`
	PauseMaxMs      float64 `json:"pause_max_ms"`
	PauseP99Ms      float64 `json:"pause_p99_ms"`
	PauseProbes     int     `json:"pause_probes"`
	// StopS: ClusterTool abort on the leader until every process ended.
	// RestartRestoredS: from the JVMs' start to the last service's
	// snapshot restore ("started"); RestartReplayedS: to every member at
	// the stop's position; RestartFirstAnswerS: to the first answer on a
	// new session; RestoreMs: the leader's restore in OnStart.
	StopS               float64 `json:"stop_s"`
	RestartRestoredS    float64 `json:"restart_restored_s"`
	RestartReplayedS    float64 `json:"restart_replayed_s"`
	RestartFirstAnswerS float64 `json:"restart_first_answer_s"`
	RestoreMs           float64 `json:"restore_ms"`
	// Three nodes: a follower killed (kill -9, JVM and service), restarted
	// 11 s later (Aeron's mark-file rule); FollowerRejoinS from its
	// restart to its position at the leader's (at the restart). The leader
	// killed: FailoverLeaderS to a new leader's role change,
	// FailoverSessionS to the client's new session, FailoverFirstAnswerS to
	// the first answer; FailoverWorstMs the worst round trip across it;
	// Resent commands sent again, Duplicates answered as applied before.
	FollowerRejoinS      float64 `json:"follower_rejoin_s,omitempty"`
	FollowerRestoreMs    float64 `json:"follower_restore_ms,omitempty"`
	FailoverLeaderS      float64 `json:"failover_leader_s,omitempty"`
	FailoverSessionS     float64 `json:"failover_session_s,omitempty"`
	FailoverFirstAnswerS float64 `json:"failover_first_answer_s,omitempty"`
	FailoverWorstMs      float64 `json:"failover_worst_ms,omitempty"`
	Resent               int     `json:"resent,omitempty"`
	Duplicates           int     `json:"duplicates"`
	// Commands sent in all, all answered; StateHash the members' final
	// hash (equal on every live member, at one log position).
	Commands  int    `json:"commands"`
	StateHash string `json:"state_hash"`
	// Native is the native node's pauseless snapshot of a book of the
	// same size, at the same probe rate, in the same run.
	Native     *clusterbench.PauseResult `json:"native,omitempty"`
	LoadAvg    [3]float64                `json:"load_avg"`
	LoadAvgEnd [3]float64                `json:"load_avg_end"`
	NumCPU     int                       `json:"num_cpu"`
	Loaded     bool                      `json:"loaded"`
	TotalS     float64                   `json:"total_s"`
}

// bench is one run.
type bench struct {
	ctx     context.Context
	o       Options
	java    *java
	members []*member
	res     *Result
	t0      time.Time
}

func (b *bench) progress(format string, a ...any) {
	if b.o.Progress != nil {
		fmt.Fprintf(b.o.Progress, "bench aeron: %.1fs: "+format+"\n", append([]any{time.Since(b.t0).Seconds()}, a...)...)
	}
}

// markFileWait is how long a killed member stays down before it starts
// again: Aeron counts a mark file updated in the last 10 s as a live
// program's.
const markFileWait = 11 * time.Second

// Run builds a book of o.Orders resting orders through the commands of a
// client of a real Aeron Cluster of o.Nodes members (ClusteredMediaDriver
// JVMs on loopback, `matchlog aeron-node` as each one's service), then
// measures a snapshot under a fixed-rate probe load, a restart of the
// whole cluster (stop without a snapshot, restore plus replay, first
// answer) and, with three members, a follower's rejoin after kill -9 and a
// failover after the leader's kill -9; then, with o.Native, the native
// node's pauseless snapshot on a book of the same size. Every process it
// starts is stopped before it returns, on an error or ctx's end too; every
// wait is bounded.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if o.Orders <= 0 {
		o.Orders = 100_000
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes != 1 && o.Nodes != 3 {
		return nil, fmt.Errorf("aeronbench: %d nodes: want 1 or 3", o.Nodes)
	}
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Window <= 0 {
		o.Window = 1024
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Service == nil {
		return nil, errors.New("aeronbench: no Service command")
	}
	j, err := findJava(o.Classpath)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.Dir, "matchlog-aeronbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b := &bench{ctx: ctx, o: o, java: j, t0: time.Now(),
		res: &Result{Orders: o.Orders, Nodes: o.Nodes, Rate: o.Rate, NumCPU: runtime.NumCPU(), LoadAvg: measure.LoadAvg()}}
	defer b.stopAll()
	used := map[int]bool{}
	var eps []string
	for i := range o.Nodes {
		m := &member{b: b, id: i, dir: fmt.Sprintf("%s/m%d", dir, i)}
		if err := os.Mkdir(m.dir, 0o755); err != nil {
			return nil, err
		}
		for k := range m.ports {
			for m.ports[k] == 0 || used[m.ports[k]] {
				if m.ports[k], err = freeUDPPort(); err != nil {
					return nil, err
				}
			}
			used[m.ports[k]] = true
		}
		b.members = append(b.members, m)
		eps = append(eps, memberEndpoints(i, m.ports))
	}
	for _, m := range b.members {
		m.members = strings.Join(eps, "|")
	}
	if err := b.aeron(); err != nil {
		return nil, err
	}
	b.stopAll()
	if o.Native {
		b.progress("the native node (cluster.Node, embedded, pauseless) on a book of %d orders", o.Orders)
		nr, err := clusterbench.PauseReport(clusterbench.PauseOptions{Orders: o.Orders, Mode: cluster.Pauseless, SyncLevel: 0,
			FileIoMaxLength: 16 << 20, Rate: o.Rate, Dir: o.Dir, Progress: o.Progress, Seed: o.Seed})
		if err != nil {
			return nil, fmt.Errorf("native node: %w", err)
		}
		b.res.Native = nr
	}
	b.res.LoadAvgEnd = measure.LoadAvg()
	lim := float64(b.res.NumCPU)
	b.res.Loaded = b.res.LoadAvg[0] > lim || b.res.LoadAvgEnd[0] > lim
	b.res.TotalS = time.Since(b.t0).Seconds()
	return b.res, nil
}

// stopAll stops every member still running.
func (b *bench) stopAll() {
	for _, m := range b.members {
		m.stop()
	}
}

// startAll starts every member's JVM, then each one's service once its
// JVM has created the cluster directory.
func (b *bench) startAll() error {
	for _, m := range b.members {
		if err := m.launchJVM(); err != nil {
			return err
		}
	}
	for _, m := range b.members {
		if err := m.launchService(b.ctx); err != nil {
			return err
		}
	}
	return nil
}

// leader waits (at most limit) until one live member reports LEADER and
// the others FOLLOWER, and returns the leader's index; step (if set)
// runs between checks, else it sleeps.
func (b *bench) leader(live []int, limit time.Duration, step func() error) (int, error) {
	deadline := time.Now().Add(limit)
	for {
		leader, followers := -1, 0
		for _, i := range live {
			m := b.members[i]
			if err := m.alive(); err != nil {
				return -1, err
			}
			switch m.lastStatus().Role {
			case "LEADER":
				leader = i
			case "FOLLOWER":
				followers++
			}
		}
		if leader >= 0 && followers == len(live)-1 {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no leader among members %v within %v", live, limit)
		}
		var err error
		if step != nil {
			err = step()
		} else {
			err = sleep(b.ctx, 20*time.Millisecond)
		}
		if err != nil {
			return -1, err
		}
	}
}

func (b *bench) all() []int {
	var out []int
	for i := range b.members {
		out = append(out, i)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// window is the worst and the p99 round trip of the probes due in
// [from, to), and their number.
func (c *client) window(from, to time.Time) (worst, p99 time.Duration, n int) {
	var ds []time.Duration
	for _, s := range c.lat {
		if !s.due.Before(from) && s.due.Before(to) {
			ds = append(ds, s.d)
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)-1], ds[len(ds)*99/100], len(ds)
}

// clusterTool runs ClusterTool's command on member m's cluster directory,
// retrying a refused toggle (the consensus module takes one only while
// its toggle is NEUTRAL) a few times.
func (b *bench) clusterTool(m *member, command string) error {
	for try := 1; ; try++ {
		out, code, err := b.java.run(b.ctx, 60*time.Second, clusterTool, m.clusterDir(), command)
		if err != nil {
			return err
		}
		if code == 0 {
			return nil
		}
		if try == 5 {
			return fmt.Errorf("ClusterTool %s: exit %d: %s", command, code, strings.TrimSpace(out))
		}
		if err := sleep(b.ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// aeron runs the Aeron part.
func (b *bench) aeron() error {
	res, all := b.res, b.all()
	b.progress("starting %d member(s): ClusteredMediaDriver JVM and matchlog aeron-node each", len(b.members))
	if err := b.startAll(); err != nil {
		return err
	}
	L, err := b.leader(all, 120*time.Second, nil)
	if err != nil {
		return err
	}
	res.StartupS = time.Since(b.t0).Seconds()
	_, C := b.roles(L)
	b.progress("cluster up: leader %d; the client uses member %d's driver", L, C)

	c := &client{ctx: b.ctx, book: clusterbench.NewBook(b.o.Seed), aeronDir: b.members[C].aeronDir(), endpoints: b.ingress()}
	defer c.close()
	if err := c.connect(30 * time.Second); err != nil {
		return err
	}
	t := time.Now()
	if err := c.build(b.o.Orders, b.o.Window, time.Minute+time.Duration(b.o.Orders)*time.Millisecond, b.progress); err != nil {
		return err
	}
	res.BuildS = time.Since(t).Seconds()
	res.BuildPerS = float64(b.o.Orders) / res.BuildS
	b.progress("book of %d orders built through the ingress in %.1fs (%.0f/s)", b.o.Orders, res.BuildS, res.BuildPerS)

	// A snapshot under the probes' fixed rate.
	r := &rated{c: c, period: time.Second / time.Duration(b.o.Rate), sending: true}
	if err := r.run(2*time.Second, nil, 0, ""); err != nil {
		return err
	}
	toolStart := time.Now()
	done := make(chan error, 1)
	go func() { done <- b.clusterTool(b.members[L], "snapshot") }()
	var toolEnd time.Time
	snapped := func() (bool, error) {
		if toolEnd.IsZero() {
			select {
			case err := <-done:
				if err != nil {
					return false, err
				}
				toolEnd = time.Now()
			default:
				return false, nil
			}
		}
		for _, m := range b.members {
			if len(m.find("after snapshot")) == 0 {
				return false, m.alive()
			}
		}
		return time.Since(toolEnd) > 300*time.Millisecond, nil
	}
	if err := r.run(0, snapped, 90*time.Second, "snapshot under load"); err != nil {
		return err
	}
	res.ToolMs = ms(toolEnd.Sub(toolStart))
	var begin, end time.Time
	for i, m := range b.members {
		s, a := m.find("snapshot"), m.find("after snapshot")
		if len(s) != 1 || len(a) != 1 {
			return fmt.Errorf("member %d logged %d snapshots, %d after-snapshot records; want 1", i, len(s), len(a))
		}
		take := dur(s[0].Take)
		st := s[0].Time.Add(-take - dur(s[0].GapBefore))
		if begin.IsZero() || st.Before(begin) {
			begin = st
		}
		if a[0].Time.After(end) {
			end = a[0].Time
		}
		res.TakeMaxMs = max(res.TakeMaxMs, ms(take))
		if i == L {
			res.TakeMs, res.GapBeforeMs = ms(take), ms(dur(s[0].GapBefore))
			res.LeaderSnapshotMs = ms(a[0].Time.Sub(st))
		}
	}
	res.SnapshotMs = ms(end.Sub(begin))
	w, p, _ := c.window(toolStart.Add(-time.Second), toolStart)
	res.NoSnapshotMaxMs, res.NoSnapshotP99Ms = ms(w), ms(p)
	w, p, n := c.window(begin, end.Add(200*time.Millisecond))
	res.PauseMaxMs, res.PauseP99Ms, res.PauseProbes = ms(w), ms(p), n
	b.progress("snapshot: take %.1f ms (slowest member %.1f), %.0f ms from its start to the last ack (the leader's %.0f); probes' worst %.1f ms, p99 %.1f ms (%d probes; %.1f ms worst in the second before)",
		res.TakeMs, res.TakeMaxMs, res.SnapshotMs, res.LeaderSnapshotMs, res.PauseMaxMs, res.PauseP99Ms, n, res.NoSnapshotMaxMs)

	// Probes after the snapshot (a log to replay), then a stop without a
	// snapshot and a restart of every member.
	if err := r.run(time.Second, nil, 0, ""); err != nil {
		return err
	}
	r.sending = false
	if err := r.run(0, func() (bool, error) { return len(c.pending) == 0, nil }, 30*time.Second, "answers before the stop"); err != nil {
		return err
	}
	c.close()
	stopPos, err := b.settled(all, L, 10*time.Second)
	if err != nil {
		return err
	}
	t = time.Now()
	if err := b.clusterTool(b.members[L], "abort"); err != nil {
		return err
	}
	for _, m := range b.members {
		if !m.svc.wait(30 * time.Second) {
			return fmt.Errorf("member %d's aeron-node still running 30 s after ClusterTool abort", m.id)
		}
		if !m.jvm.wait(30 * time.Second) {
			m.jvm.stop()
		}
	}
	res.StopS = time.Since(t).Seconds()
	b.progress("stopped without a snapshot (ClusterTool abort) in %.1fs at log position %d", res.StopS, stopPos)
	t = time.Now()
	if err := b.startAll(); err != nil {
		return err
	}
	if err := b.until(90*time.Second, "restore after the restart", func() (bool, error) {
		for _, m := range b.members {
			if err := m.alive(); err != nil {
				return false, err
			}
			if len(m.find("started")) == 0 {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	res.RestartRestoredS = time.Since(t).Seconds()
	if err := b.until(90*time.Second, "replay after the restart", func() (bool, error) {
		for _, m := range b.members {
			if m.lastStatus().LogPosition < stopPos {
				return false, m.alive()
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	res.RestartReplayedS = time.Since(t).Seconds()
	if L, err = b.leader(all, 90*time.Second, nil); err != nil {
		return err
	}
	for _, st := range b.members[L].find("started") {
		if !st.Restored {
			return fmt.Errorf("member %d restarted without restoring the snapshot", L)
		}
		res.RestoreMs = ms(dur(st.Restore))
	}
	F, C := b.roles(L)
	c.aeronDir = b.members[C].aeronDir()
	if err := c.connect(30 * time.Second); err != nil {
		return err
	}
	r.sending, r.next = true, time.Now()
	answered := c.answered
	if err := r.run(0, func() (bool, error) { return c.answered > answered, nil }, 30*time.Second, "first answer after the restart"); err != nil {
		return err
	}
	res.RestartFirstAnswerS = time.Since(t).Seconds()
	b.progress("restart: restored after %.1fs (leader's restore %.0f ms), replayed to the stop after %.1fs, first answer after %.1fs",
		res.RestartRestoredS, res.RestoreMs, res.RestartReplayedS, res.RestartFirstAnswerS)

	live := all
	if len(b.members) == 3 {
		if live, err = b.killRejoinFailover(r, L, F, C); err != nil {
			return err
		}
	}

	// Every command answered; every live member at one hash and position.
	if err := r.run(time.Second, nil, 0, ""); err != nil {
		return err
	}
	r.sending = false
	if err := r.run(0, func() (bool, error) { return len(c.pending) == 0 && r.unsent == nil, nil }, 30*time.Second, "last answers"); err != nil {
		return err
	}
	if c.answered != c.sent {
		return fmt.Errorf("%d commands sent, %d answered", c.sent, c.answered)
	}
	res.Commands, res.Duplicates, res.Resent = c.sent, c.dups, c.resent
	L, err = b.leader(live, 30*time.Second, nil)
	if err != nil {
		return err
	}
	if _, err := b.settled(live, L, 30*time.Second); err != nil {
		return err
	}
	res.StateHash = b.members[L].lastStatus().StateHash
	b.progress("%d commands, all answered; members %v at hash %s", c.sent, live, res.StateHash)
	return nil
}

// roles picks, given the leader, the follower to kill and the member
// whose driver the client uses (neither the leader nor that follower
// where there are three).
func (b *bench) roles(L int) (F, C int) {
	if len(b.members) == 1 {
		return 0, 0
	}
	F = (L + 1) % 3
	return F, (L + 2) % 3
}

func (b *bench) ingress() string {
	var s []string
	for _, m := range b.members {
		s = append(s, fmt.Sprintf("%d=127.0.0.1:%d", m.id, m.ports[0]))
	}
	return strings.Join(s, ",")
}

// until polls cond every 20 ms, at most limit.
func (b *bench) until(limit time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done within %v", what, limit)
		}
		if err := sleep(b.ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// settled waits until the live members report the leader's log position
// and state hash, unchanged for 300 ms, and returns the position.
func (b *bench) settled(live []int, L int, limit time.Duration) (int64, error) {
	var pos int64 = -1
	var since time.Time
	err := b.until(limit, "members at one log position and hash", func() (bool, error) {
		st := b.members[L].lastStatus()
		for _, i := range live {
			s := b.members[i].lastStatus()
			if err := b.members[i].alive(); err != nil {
				return false, err
			}
			if s.LogPosition != st.LogPosition || s.StateHash != st.StateHash || s.Time.Before(time.Now().Add(-time.Second)) {
				since = time.Time{}
				return false, nil
			}
		}
		if st.LogPosition != pos {
			pos, since = st.LogPosition, time.Now()
			return false, nil
		}
		return time.Since(since) >= 300*time.Millisecond, nil
	})
	return pos, err
}

// killRejoinFailover kills a follower (kill -9, JVM and service),
// restarts it after the mark-file rule and waits until it has caught up
// with the leader; then kills the leader and fails the client over to the
// new leader. It returns the live members.
func (b *bench) killRejoinFailover(r *rated, L, F, C int) ([]int, error) {
	res, c := b.res, r.c
	if err := r.run(time.Second, nil, 0, ""); err != nil {
		return nil, err
	}
	killF := time.Now()
	b.members[F].crash()
	b.progress("follower %d killed (kill -9, JVM and service); restart in %v", F, markFileWait)
	if err := r.run(markFileWait, nil, 0, ""); err != nil {
		return nil, err
	}
	restartF := time.Now()
	leaderPos := b.members[L].lastStatus().LogPosition
	if err := b.members[F].launchJVM(); err != nil {
		return nil, err
	}
	if err := b.members[F].launchService(b.ctx); err != nil {
		return nil, err
	}
	var rejoined time.Time
	if err := r.run(0, func() (bool, error) {
		st := b.members[F].lastStatus()
		if st.Role == "FOLLOWER" && st.LogPosition >= leaderPos {
			rejoined = st.Time
			return true, nil
		}
		return false, b.members[F].alive()
	}, 90*time.Second, "follower rejoin"); err != nil {
		return nil, err
	}
	res.FollowerRejoinS = rejoined.Sub(restartF).Seconds()
	for _, st := range b.members[F].find("started") {
		res.FollowerRestoreMs = ms(dur(st.Restore))
	}
	b.progress("follower %d restarted %.1fs after its kill, at the leader's position %.1fs after the restart (its restore %.0f ms)",
		F, restartF.Sub(killF).Seconds(), res.FollowerRejoinS, res.FollowerRestoreMs)

	if err := r.run(time.Second, nil, 0, ""); err != nil {
		return nil, err
	}
	answered := c.answered
	killL := time.Now()
	b.members[L].crash()
	if err := r.failover(60 * time.Second); err != nil {
		return nil, err
	}
	session := time.Now()
	live := []int{F, C}
	newL, err := b.leader(live, 30*time.Second, func() error { return r.run(20*time.Millisecond, nil, 0, "") })
	if err != nil {
		return nil, err
	}
	var elected time.Time
	for _, rec := range b.members[newL].find("role") {
		if rec.Role == "LEADER" {
			elected = rec.Time
		}
	}
	if err := r.run(0, func() (bool, error) { return c.answered > answered && c.answeredAt.After(killL), nil }, 30*time.Second, "first answer after the failover"); err != nil {
		return nil, err
	}
	res.FailoverLeaderS = elected.Sub(killL).Seconds()
	res.FailoverSessionS = session.Sub(killL).Seconds()
	res.FailoverFirstAnswerS = c.answeredAt.Sub(killL).Seconds()
	w, _, _ := c.window(killL.Add(-time.Second), c.answeredAt)
	res.FailoverWorstMs = ms(w)
	b.progress("leader %d killed: member %d leader after %.1fs, new session after %.1fs, first answer after %.1fs (%d resent)",
		L, newL, res.FailoverLeaderS, res.FailoverSessionS, res.FailoverFirstAnswerS, c.resent)
	return live, nil
}
