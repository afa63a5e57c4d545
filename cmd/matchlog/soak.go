package main

// The kill -9 harness: `matchlog soak` and the tests TestKill9 and
// TestKill9Retention run the same rounds (kill9Run). A round lets a load
// run against `matchlog node` as a child process, kills the child with
// SIGKILL, opens the killed directory in this process and checks it
// (checkKilledDir), and starts the child again; the client reconnects and
// resends what was unanswered. Each round costs the same however many
// came before (see kill9Run).

import (
	"bufio"
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// harnessT is what the harness needs of a test (testing.TB has it): soak
// implements it too, its Fatal ending the run's goroutine as a test's
// does.
type harnessT interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// nodeChildCommand is the command that runs `matchlog args...` as a child
// process: this executable. The tests replace it (their binary runs the
// command line it is given in an environment variable).
var nodeChildCommand = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the node child: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// nodeChild is `matchlog node` running as a child process.
type nodeChild struct {
	cmd     *exec.Cmd
	addr    string // from its "listening ADDR" line
	metrics string // from its "metrics URL" line, when started with --metrics
	stderr  *lockedWriter
	exited  chan error // the child's exit, once its stdout has ended
}

// startNodeChild starts `matchlog node --dir dir --listen listen extra...`
// and waits until it has printed its listen address (and, with --metrics
// among extra, its metrics URL).
func startNodeChild(t harnessT, dir, listen string, extra ...string) *nodeChild {
	t.Helper()
	args := append([]string{"node", "--dir", dir, "--listen", listen}, extra...)
	cmd, err := nodeChildCommand(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	lw := &lockedWriter{b: &stderr}
	cmd.Stderr = lw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &nodeChild{cmd: cmd, stderr: lw, exited: make(chan error, 1)}
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody waits for more lines
			}
		}
		close(lines)
		c.exited <- cmd.Wait()
	}()
	wantMetrics := slices.Contains(extra, "--metrics")
	timeout := time.After(60 * time.Second)
	for c.addr == "" || (wantMetrics && c.metrics == "") {
		select {
		case l, ok := <-lines:
			if !ok {
				<-c.exited
				t.Fatalf("node child exited before printing its addresses: %s", c.stderrText())
			}
			if a, ok := strings.CutPrefix(l, "listening "); ok {
				c.addr = a
			} else if a, ok := strings.CutPrefix(l, "metrics "); ok {
				c.metrics = a
			}
		case <-timeout:
			c.kill()
			t.Fatalf("node child printed no addresses within 60 s: %s", c.stderrText())
		}
	}
	return c
}

// stderrText is what the child has written on stderr so far.
func (c *nodeChild) stderrText() string {
	c.stderr.mu.Lock()
	defer c.stderr.mu.Unlock()
	return c.stderr.b.String()
}

// kill sends SIGKILL and reaps the child. It returns what the child
// wrote on stderr (a race detector's report, under -race).
func (c *nodeChild) kill() string {
	c.cmd.Process.Kill()
	<-c.exited
	return c.stderrText()
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < 1<<16 {
		w.b.Write(p)
	}
	return len(p), nil
}

// freePort returns a loopback address with a port free right now.
func freePort(t harnessT) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// kill9Config is what TestKill9, TestKill9Retention and soak differ in.
type kill9Config struct {
	dir  string // the node directory (created by the first start)
	seed uint64 // of the rounds' random choices and the load (0: from the clock)
	// rounds is how many kills (0: no limit); the run also ends at the
	// first round that starts after duration (0: no limit).
	rounds   int
	duration time.Duration
	// stream is the PCG stream of the round's random choices; the load's
	// is stream+1.
	stream   uint64
	loadRate int // commands a second after the preload
	// preloadRounds: the first rounds send only resting orders, as
	// fast as the node takes them (at most kill9PreloadRounds).
	preloadRounds int
	model         bool // check against the naive model too (TestKill9Retention re-bases on snapshots, which it cannot follow)
	// deletes: the node deletes recordings by itself (automatic
	// retention, --keep), so a kill may leave segment files wholly
	// below a log's start (between the detach and the unlink; the node
	// deletes them at its next check), which are no failure.
	deletes  bool
	nodeArgs []string
	// restartArgs, if not nil, are added to nodeArgs at each restart.
	restartArgs func(rng *rand.Rand) []string
	sleep       func(rng *rand.Rand) time.Duration // how long the load runs before the kill
	// beforeCheck, if not nil, runs on the killed directory before
	// checkKilledDir opens it.
	beforeCheck func(round int, dir string, m *logModel)
	// kinds are the kill kinds that must each occur at rounds >= 100.
	kinds []string
	// tally, if not nil, is called after each round.
	tally func(kill9Tally)
	// stop, if not nil, ends the run at the first round that starts
	// after it is closed.
	stop <-chan struct{}
}

// kill9Standard is the configuration of TestKill9 and soak (the callers
// set dir, seed, rounds or duration, and preloadRounds): snapshots every
// 64 KiB of log (most kills land in one) or every 1 MiB (most land in log
// writes) and file sync level 1 or 2 (both promise that a released
// command is on disk), changed from one start to the next; the node
// deletes all but the last 2 snapshot generations (--keep), or each start
// and each check would read every snapshot recording ever taken.
func kill9Standard() kill9Config {
	return kill9Config{
		stream: 9, loadRate: 8000, model: true, deletes: true,
		kinds:    []string{killPreload, killSnapshot, killLogWrite},
		nodeArgs: []string{"--sync", "1", "--snapshot-every-bytes", "65536", "--session-timeout", "30s", "--keep", "2", "--delay", "0"},
		restartArgs: func(rng *rand.Rand) []string {
			return []string{"--snapshot-every-bytes", []string{"65536", "1048576"}[rng.IntN(2)], "--sync", []string{"1", "2"}[rng.IntN(2)]}
		},
		sleep: func(rng *rand.Rand) time.Duration { return time.Duration(5+rng.IntN(150)) * time.Millisecond },
	}
}

// kill9Tally is where a run stands after a round.
type kill9Tally struct {
	Rounds     int
	Elapsed    time.Duration
	Kinds      map[string]int // kills by kind
	Commands   int            // answered
	Duplicates int64          // answered as Duplicate after a resend
	LogEnd     int64
}

const (
	// kill9PreloadRounds bounds the preload: its book stays the same
	// size however many rounds follow.
	kill9PreloadRounds = 20
	// kill9Live bounds the book: the load cancels its oldest order
	// whenever more than kill9Live order ids are newer than the oldest
	// it has not cancelled.
	kill9Live = 10000
	// kill9RollWindow: a kill whose durable log ends less than this many
	// bytes into a log segment that was not there at the previous check
	// counts as landing in a segment roll-over.
	kill9RollWindow = 4 << 10
)

// Kill kinds (kill9Tally.Kinds).
const (
	killPreload   = "preload"
	killSnapshot  = "snapshot"
	killLogWrite  = "log write"
	killRollOver  = "segment roll-over"
	killRetention = "retention delete"
)

// kill9Phases times the phases of each round, so that a run can show
// which of them grows: per phase, the total of the first and of the last
// 100 rounds.
type kill9Phases struct {
	round       int
	rounds      int
	early, late map[string]time.Duration
	order       []string
	t           time.Time
}

// mark ends the phase that began at the last mark.
func (p *kill9Phases) mark(phase string) {
	now := time.Now()
	d := now.Sub(p.t)
	p.t = now
	p.add(phase, d)
}

// add counts d, a part of the current phase, under its own name (not
// moving the phase's start).
func (p *kill9Phases) add(phase string, d time.Duration) {
	if p.early == nil {
		p.early, p.late = map[string]time.Duration{}, map[string]time.Duration{}
	}
	if _, ok := p.early[phase]; !ok {
		p.order = append(p.order, phase)
		p.early[phase] = 0
	}
	if p.round < 100 {
		p.early[phase] += d
	}
	if p.round >= p.rounds-100 {
		p.late[phase] += d
	}
}

func (p *kill9Phases) String() string {
	var b strings.Builder
	for _, ph := range p.order {
		fmt.Fprintf(&b, " %s %.0f/%.0f", ph, p.early[ph].Seconds()*10, p.late[ph].Seconds()*10)
	}
	return "ms a round, first/last 100 rounds:" + b.String()
}

// ackSet is the client's answers: each (Release or Duplicate) is
// appended to fresh until the next round takes them; seen counts the
// distinct seqs answered (a bit a seq: 1 MiB for 8M commands).
type ackSet struct {
	mu    sync.Mutex
	fresh []uint64
	seen  []uint64 // bit seq%64 of word seq/64
	n     int
}

func (a *ackSet) add(seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uint64(len(a.seen)) <= seq/64 {
		a.seen = append(a.seen, 0)
	}
	if bit := uint64(1) << (seq % 64); a.seen[seq/64]&bit == 0 {
		a.seen[seq/64] |= bit
		a.n++
	}
	a.fresh = append(a.fresh, seq)
}

// take returns the answers since the last take.
func (a *ackSet) take() []uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.fresh
	a.fresh = nil
	return f
}

func (a *ackSet) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// kill9Run is the harness of TestKill9, TestKill9Retention and soak: it
// starts the node child, drives the load through a reconnecting client,
// kills the child cfg.rounds times (or for cfg.duration) at random moments, checks each killed
// directory (checkKilledDir) and restarts the child; at the end every
// command sent must be answered. Each round costs the same however many
// came before: the book is bounded (kill9Load), the model is fed only the
// log's new suffix, and an answered command is checked once, in the round
// after its answer, then forgotten by the model; old snapshot recordings
// are the node's to delete (--keep). It logs the kill kinds, the rounds
// per minute of the first and the last 100 rounds and the time per round
// of each phase (kill9Phases).
func kill9Run(t harnessT, cfg kill9Config) *logModel {
	rounds := cfg.rounds
	seed := cfg.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	if rounds > 0 {
		t.Logf("seed %d, %d rounds", seed, rounds)
	} else {
		t.Logf("seed %d, rounds for %v", seed, cfg.duration)
	}
	rng := rand.New(rand.NewPCG(seed, cfg.stream))
	dir := cfg.dir
	listen := freePort(t)

	child := startNodeChild(t, dir, listen, cfg.nodeArgs...)
	defer func() {
		if child != nil {
			child.kill()
		}
	}()

	const clientID = 7
	var acks ackSet
	var dups atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Addr: child.addr, ClientID: clientID, Reconnect: true,
		ReconnectMin: time.Millisecond, ReconnectMax: 50 * time.Millisecond, ReconnectTimeout: 2 * time.Minute,
		MaxOutstanding: 1 << 16,
		OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRelease {
				acks.add(ev.Seq)
			}
		},
		OnDuplicate: func(_, seq uint64) {
			dups.Add(1)
			acks.add(seq)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20}); err != nil {
		t.Fatal(err)
	}

	preloadRounds := min(cfg.preloadRounds, kill9PreloadRounds)
	var paused atomic.Bool
	var preloading atomic.Bool
	preloading.Store(preloadRounds > 0)
	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() {
		lr := rand.New(rand.NewPCG(seed, cfg.stream+1))
		var load kill9Load
		// As fast as the node takes them while preloading (a book of
		// kill9Live orders, whose snapshots take a while), then at most
		// loadRate commands a second, few enough for the naive model to
		// follow.
		t0, sent := time.Now(), 0
		for {
			select {
			case <-stop:
				loadDone <- nil
				return
			default:
			}
			if paused.Load() || c.Outstanding() >= 512 {
				time.Sleep(200 * time.Microsecond)
				t0, sent = time.Now(), 0
				continue
			}
			if ahead := time.Duration(sent)*time.Second/time.Duration(cfg.loadRate) - time.Since(t0); ahead > 0 && !preloading.Load() {
				time.Sleep(ahead)
			}
			sent++
			cmd := load.next(lr, preloading.Load())
			if _, err := c.Send(&cmd); err != nil {
				loadDone <- err
				return
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()

	kinds := map[string]int{}
	var lastLog int64
	lastSegment := int64(-1)
	// The model engine is fed the log incrementally: what an earlier
	// round scanned was recovered and closed cleanly, so it stays.
	phases := &kill9Phases{rounds: rounds}
	if rounds == 0 {
		phases.rounds = -1 // no last 100 rounds
	}
	m := &logModel{eng: engine.New(), inLog: map[uint64]bool{}, prevEnd: -1, detachedOK: cfg.deletes, phases: phases}
	if cfg.model {
		m.model = enginetest.NewModel()
	}
	t0 := time.Now()
	var early, late time.Duration
	var history []string
	round := 0
	stopped := func() bool {
		select {
		case <-cfg.stop:
			return true
		default:
			return false
		}
	}
	for ; (rounds == 0 || round < rounds) && (cfg.duration == 0 || time.Since(t0) < cfg.duration) && !stopped(); round++ {
		phases.round, phases.t = round, time.Now()
		if round == preloadRounds {
			preloading.Store(false)
		}
		if round == 100 {
			early = time.Since(t0)
		}
		if round == rounds-100 {
			late = time.Since(t0)
		}
		// Let the load run, then kill.
		time.Sleep(cfg.sleep(rng))
		phases.mark("load")
		if out := child.kill(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
			t.Fatalf("round %d: the node child reported:\n%s", round, out)
		}
		child = nil
		paused.Store(true)
		ackedNow := acks.take()
		phases.mark("kill")
		if (round+1)%100 == 0 {
			history = append(history, metadataSizes(dir, round+1))
		}

		if cfg.beforeCheck != nil {
			cfg.beforeCheck(round, dir, m)
			phases.mark("before")
		}
		k := checkKilledDir(t, round, dir, ackedNow, clientID, m)
		if round < preloadRounds {
			kinds[killPreload]++
		}
		if k.snapshot {
			kinds[killSnapshot]++
		} else {
			kinds[killLogWrite]++
		}
		if k.detached {
			kinds[killRetention]++
		}
		if k.segmentLength > 0 {
			seg := k.logEnd / k.segmentLength
			if lastSegment >= 0 && seg != lastSegment && k.logEnd%k.segmentLength < kill9RollWindow {
				kinds[killRollOver]++
			}
			lastSegment = seg
		}
		if k.logEnd < lastLog {
			t.Fatalf("round %d: the log shrank from %d to %d", round, lastLog, k.logEnd)
		}
		lastLog = k.logEnd

		args := cfg.nodeArgs
		if cfg.restartArgs != nil {
			args = append(slices.Clip(args), cfg.restartArgs(rng)...)
		}
		phases.mark("tally")
		child = startNodeChild(t, dir, listen, args...)
		phases.mark("start")
		paused.Store(false)
		// The client reconnects and its unanswered commands are answered
		// before the next kill comes, most of the time: wait a little.
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		for c.Outstanding() > 256 && wctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		wcancel()
		if err := c.Err(); err != nil {
			t.Fatalf("round %d: client failed: %v", round, err)
		}
		phases.mark("catch-up")
		if cfg.tally != nil {
			cfg.tally(kill9Tally{Rounds: round + 1, Elapsed: time.Since(t0), Kinds: kinds, Commands: acks.count(), Duplicates: dups.Load(), LogEnd: lastLog})
		}
	}
	if rounds == 0 {
		rounds = round
	}
	total := time.Since(t0)
	close(stop)
	if err := <-loadDone; err != nil {
		t.Fatalf("load: %v", err)
	}
	// The last child serves every outstanding command.
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	err = c.Wait(wctx)
	wcancel()
	if err != nil {
		t.Fatalf("after the last restart, %d commands unanswered: %v", c.Outstanding(), err)
	}
	n := acks.count()
	if want := int(c.NextSeq() - 1); n != want {
		t.Fatalf("%d commands answered, %d sent", n, want)
	}
	if rounds >= 20 && (kinds[killSnapshot] == 0 || kinds[killLogWrite] == 0) {
		t.Errorf("kills %v: want some during snapshots and some during log writes only", kinds)
	}
	if rounds >= 100 {
		for _, kind := range cfg.kinds {
			if kinds[kind] == 0 {
				t.Errorf("kills %v: none of kind %q in %d rounds", kinds, kind, rounds)
			}
		}
	}
	t.Logf("%d kills %v; %d commands, all answered (%d as Duplicate after a resend); log %d bytes; %.1f s", rounds, kinds, n, dups.Load(), lastLog, total.Seconds())
	if rounds >= 200 && phases.rounds > 0 {
		t.Logf("rounds per minute: %.1f in rounds 1-100, %.1f in rounds %d-%d", 100/early.Minutes(), 100/(total-late).Minutes(), rounds-99, rounds)
		t.Logf("%v", phases)
	}
	if len(history) > 0 {
		t.Logf("catalog and recording.log after a kill, every 100 rounds: %s", strings.Join(history, "; "))
	}
	return m
}

// metadataSizes describes the catalog and recording.log of the node
// directory dir: entries and used bytes of each (the catalog's file is
// its capacity long).
func metadataSizes(dir string, round int) string {
	s := fmt.Sprintf("round %d:", round)
	if cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, cluster.ArchiveDirName), archive.CatalogOptions{ReadOnly: true}); err == nil {
		n := cat.Counts()
		s += fmt.Sprintf(" catalog %d entries (%d DELETED) %d B", n.Total(), n.Deleted, cat.EndOffset())
		cat.Close()
	} else {
		s += " catalog: " + err.Error()
	}
	adir := filepath.Join(dir, cluster.ArchiveDirName)
	if names, err := vfs.Default.List(adir); err == nil {
		kinds := map[string]int{}
		var bytes int64
		for _, n := range names {
			kind := filepath.Ext(n)
			if strings.HasSuffix(n, archive.PreparedSuffix) {
				kind = archive.PreparedSuffix
			}
			kinds[kind]++
			if size, err := vfs.Default.Stat(filepath.Join(adir, n)); err == nil {
				bytes += size
			}
		}
		s += fmt.Sprintf(", archive %d B in %v", bytes, kinds)
	}
	if l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true, Repair: true}); err == nil {
		s += fmt.Sprintf(", recording.log %d entries %d B", len(l.Entries()), l.Size())
		l.Close()
	} else {
		s += ", recording.log: " + err.Error()
	}
	return s
}

// logModel is the B-tree engine and the naive model engine
// (engine/enginetest) fed the log's commands up to end, and which (client)
// seqs it saw: those at or below base (the client's high-water mark in
// the snapshot the model was last re-based on) and those in inLog, which
// holds only the seqs not yet checked as answered (checkKilledDir drops
// each answered seq once it has found it). model may be nil (only the
// B-tree engine).
type logModel struct {
	eng   *engine.Engine
	model *enginetest.Model
	inLog map[uint64]bool
	base  uint64
	end   int64
	// The last entry scanned: where the one before it ended (-1: none,
	// or not known after a re-base), its payload's CRC and its template.
	prevEnd      int64
	lastSum      uint32
	lastTemplate uint16
	// detachedOK: segment files wholly below the log's start (a kill
	// between automatic retention's detach and its delete; the node
	// deletes them at its next check) are no failure.
	detachedOK bool
	// phases, if not nil, times checkKilledDir's steps.
	phases *kill9Phases
}

func (m *logModel) mark(phase string) {
	if m.phases != nil {
		m.phases.mark(phase)
	}
}

// killedDir is what checkKilledDir found.
type killedDir struct {
	snapshot      bool  // recovery repaired a snapshot recording: the kill came while one was written
	detached      bool  // segment files wholly below the log's start were left (a kill between retention's detach and its delete)
	logEnd        int64 // where the model's scan of the log ended
	segmentLength int64 // of the log recording
}

// checkKilledDir opens the directory of a killed node in this process and
// checks it (see TestKill9): acked are the seqs answered since the last
// check. It returns what the node was doing when it was killed, as the
// recovery found it, and the log's length.
func checkKilledDir(t harnessT, round int, dir string, acked []uint64, clientID uint64, m *logModel) killedDir {
	t.Helper()
	var k killedDir
	fail := func(format string, args ...any) {
		t.Helper()
		if keep := os.Getenv("MATCHLOG_KILL9_KEEP"); keep != "" {
			exec.Command("cp", "-a", dir, keep).Run()
		}
		t.Fatalf("round %d: "+format+" (directory %s)", append([]any{round}, append(args, dir)...)...)
	}
	svc := enginesvc.New(enginesvc.Options{})
	node, err := cluster.Open(cluster.Options{Dir: dir, Service: svc, FileSyncLevel: 1})
	if err != nil {
		fail("open after kill -9: %v", err)
	}
	rec := node.Recovery()
	if m.phases != nil {
		m.phases.add("open-capture", rec.Capture)
	}
	for _, r := range rec.Archive {
		if r.RecordingID != node.LogRecordingID() {
			k.snapshot = true
		}
	}
	logID := node.LogRecordingID()
	recovered := svc.Engine().StateHash()
	if err := node.Close(); err != nil {
		fail("close: %v", err)
	}
	m.mark("open")

	d, err := descriptorOf(dir, logID)
	if err != nil {
		fail("log descriptor: %v", err)
	}
	k.segmentLength = int64(d.SegmentFileLength)

	// The model: an engine fed every command of the log in order (from
	// where the last round's scan ended).
	// The scan starts one entry early: the last entry scanned must still
	// be there, unchanged (the log only grows after its durable end) —
	// unless retention has moved the log's start past where that entry
	// began: the bytes below the new start were checked when they were
	// scanned, and the scan goes on from where it ended.
	if m.end < d.StartPosition {
		fail("the log starts at %d, past where the model's scan ended (%d), and the model was not re-based on a snapshot", d.StartPosition, m.end)
	}
	var cmd engine.Command
	from, tail := m.end, m.end > 0 && m.prevEnd >= d.StartPosition
	checked := tail
	if tail {
		from = m.prevEnd
	} else if from == 0 {
		from = -1
	}
	var tailErr error
	err = cluster.ScanLogFrom(vfs.Default, dir, from, func(e *cluster.LogEntry) error {
		sum := crc32.ChecksumIEEE(e.Payload)
		if tail {
			tail = false
			if e.Position != m.end || sum != m.lastSum || e.Template != m.lastTemplate {
				tailErr = fmt.Errorf("the log entry that ended at %d (template %d, payload crc %08x) when the last round scanned it is now an entry ending at %d (template %d, payload crc %08x)",
					m.end, m.lastTemplate, m.lastSum, e.Position, e.Template, sum)
				return tailErr
			}
			return nil
		}
		m.prevEnd, m.end, m.lastSum, m.lastTemplate = m.end, e.Position, sum, e.Template
		if e.Template != 1 {
			return nil
		}
		if wire.DecodeCommand(e.Payload, &cmd) != nil {
			return nil // skipped by the service too
		}
		cmd.Time = e.Timestamp
		if cmd.Source == clientID {
			m.inLog[cmd.Seq] = true
		}
		m.eng.Apply(&cmd)
		if m.model != nil {
			m.model.Apply(&cmd)
		}
		return nil
	})
	if tailErr != nil {
		fail("the durable log changed under the model: %v", tailErr)
	}
	if err != nil {
		fail("scan log: %v", err)
	}
	m.mark("scan")
	inLog, logEnd := m.inLog, m.end
	scanned := fmt.Sprintf("from %d to %d, the log starting at %d, the last entry of the round before checked again: %v", from, m.end, d.StartPosition, checked)
	if m.model == nil {
		// No naive model (TestKill9Retention re-bases on snapshots).
	} else if got := m.model.StateHash(); got != recovered {
		fail("recovered state hash %x, the model engine fed the log's commands gives %x (the B-tree engine fed them %x; this round's scan: %s)", recovered, got, m.eng.StateHash(), scanned)
	}
	if got := m.eng.StateHash(); got != recovered {
		fail("recovered state hash %x, the log's commands give %x (this round's scan: %s)", recovered, got, scanned)
	}
	for _, s := range acked {
		if s > m.base && !inLog[s] {
			fail("command seq %d was answered before the kill but is not in the log", s)
		}
	}
	// Checked: an answered seq is in the log for good (the log only
	// grows, or loses a prefix to retention, whose snapshot's high-water
	// mark covers it), so the model forgets it.
	for _, s := range acked {
		delete(inLog, s)
	}
	m.mark("model")

	// recording.log and the catalog agree.
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, "archive"), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		fail("catalog: %v", err)
	}
	l, err := recordinglog.Open(vfs.Default, filepath.Join(dir, "cluster"), recordinglog.Options{ReadOnly: true})
	if err != nil {
		cat.Close()
		fail("recording.log: %v", err)
	}
	plan, err := l.CreateRecoveryPlan(cat, 1)
	l.Close()
	cat.Close()
	if err == nil {
		err = plan.Err()
	}
	if err != nil {
		fail("recovery plan: %v", err)
	}
	m.mark("plan")
	vr, err := archive.Verify(vfs.Default, filepath.Join(dir, "archive"), archive.VerifyOptions{})
	if err != nil {
		fail("verify: %v", err)
	}
	if !vr.OK() && m.detachedOK {
		ok := true
		for _, r := range vr.Recordings {
			if r.Status == archive.StatusOK || r.Status == archive.StatusSkipped {
				continue
			}
			ok = ok && r.Status == archive.StatusWarning && len(r.MissingSegments) == 0 && len(r.WrongSizeSegments) == 0 && len(r.OrphanSegments) > 0
			d, err := descriptorOf(dir, r.RecordingID)
			for _, name := range r.OrphanSegments {
				_, base, perr := archive.ParseSegmentFileName(name)
				ok = ok && err == nil && perr == nil && base+int64(d.SegmentFileLength) <= d.StartPosition
			}
		}
		if ok {
			vr = &archive.VerifyReport{}
			k.detached = true
		}
	}
	if !vr.OK() {
		var probs []string
		for _, r := range vr.Recordings {
			for _, p := range r.Problems {
				probs = append(probs, fmt.Sprintf("recording %d: %s", r.RecordingID, p))
			}
		}
		fail("archive verify: %s", strings.Join(probs, "; "))
	}
	m.mark("verify")
	k.logEnd = logEnd
	return k
}

// descriptorOf reads recording id's descriptor from a stopped node
// directory's catalog.
func descriptorOf(dir string, id int64) (archive.RecordingDescriptor, error) {
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, "archive"), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return archive.RecordingDescriptor{}, err
	}
	defer cat.Close()
	return cat.Descriptor(id)
}

// kill9Load is the kill -9 tests' load: resting limit orders (all of
// them while resting), IOC orders crossing a few levels, cancels and
// modifies of the live window of ids. Its book stays bounded: whenever
// more than kill9Live order ids are newer than the oldest not yet
// cancelled, the next command cancels that one.
type kill9Load struct {
	id     uint64 // the last order id
	oldest uint64 // ids at or below it were cancelled (or never rested)
}

func (l *kill9Load) next(lr *rand.Rand, resting bool) engine.Command {
	if l.id-l.oldest > kill9Live {
		l.oldest++
		return engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: l.oldest}
	}
	return kill9Command(lr, &l.id, l.oldest, resting)
}

// kill9Command is the next command of kill9Load: id is the last order id,
// advanced for a new order; cancels and modifies pick an id above oldest.
func kill9Command(lr *rand.Rand, id *uint64, oldest uint64, resting bool) engine.Command {
	side := engine.Side(lr.IntN(2))
	switch k := lr.IntN(10); {
	case resting || *id == oldest || k < 5:
		*id++
		price := int64(1000 - 1 - lr.IntN(200))
		if side == engine.Sell {
			price = int64(1000 + 1 + lr.IntN(200))
		}
		return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: *id, Account: uint64(lr.IntN(50)) + 1,
			Side: side, Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: int64(lr.IntN(20)) + 1}
	case k < 7: // crosses a few levels
		*id++
		price := int64(1000 + lr.IntN(30))
		if side == engine.Sell {
			price = int64(1000 - lr.IntN(30))
		}
		return engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: *id, Account: uint64(lr.IntN(50)) + 1,
			Side: side, Type: engine.Limit, TIF: engine.IOC, Price: price, Qty: int64(lr.IntN(60)) + 1}
	case k < 9:
		return engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: oldest + 1 + uint64(lr.Int64N(int64(*id-oldest)))}
	default:
		return engine.Command{Kind: engine.CmdModify, Instrument: 1, OrderID: oldest + 1 + uint64(lr.Int64N(int64(*id-oldest))),
			Price: int64(900 + lr.IntN(200)), Qty: int64(lr.IntN(20)) + 1}
	}
}
