//go:build unix

package main

import (
	"bufio"
	"context"
	"flag"
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
	"testing"
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

var (
	kill9N    = flag.Int("kill9.n", 50, "kill -9 rounds of TestKill9 (10 with -short; 0.5 to 1 s a round, so pass -timeout for hundreds)")
	kill9Seed = flag.Uint64("kill9.seed", 0, "seed of TestKill9 (0: from the clock, printed)")
)

// childArgsEnv makes the test binary run the matchlog command line it
// names (fields separated by \x1f) instead of the tests: the node child of
// TestKill9.
const childArgsEnv = "MATCHLOG_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
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
func startNodeChild(t *testing.T, dir, listen string, extra ...string) *nodeChild {
	t.Helper()
	args := append([]string{"node", "--dir", dir, "--listen", listen}, extra...)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f"))
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
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestKill9 runs `matchlog node` as a child process under client load and
// kills it with SIGKILL at random moments — while the book is preloaded,
// while snapshots are written (every 64 KiB of log), while the log is
// written — then, before
// restarting it, opens the directory in this process and checks
// (kill9Run, checkKilledDir): the recovered engine's state hash equals
// that of an engine and of the naive model fed the log's commands from the
// start (the durable prefix: what the log recording holds after recovery);
// every command the client got its Release (or Duplicate) for is in that
// log (file sync level 1 or 2, chosen at each start); recording.log and the
// catalog agree (recovery plan, archive verify). The client reconnects to
// each new child, resends what was unanswered and goes on; nothing is
// applied twice (the engine ignores a resent (source, seq) and answers
// Duplicate).
func TestKill9(t *testing.T) {
	rounds := *kill9N
	if testing.Short() {
		rounds = min(rounds, 10)
	}
	kill9Run(t, kill9Config{
		rounds: rounds, stream: 9, loadRate: 8000, preload: true, model: true,
		kinds:    []string{killPreload, killSnapshot, killLogWrite},
		nodeArgs: []string{"--sync", "1", "--snapshot-every-bytes", "65536", "--session-timeout", "30s"},
		// Snapshots every 64 KiB of log (most kills land in one) or
		// every 1 MiB (most land in log writes); file sync level 1 or 2
		// (both promise that a released command is on disk), changed
		// from one start to the next.
		restartArgs: func(rng *rand.Rand) []string {
			return []string{"--snapshot-every-bytes", []string{"65536", "1048576"}[rng.IntN(2)], "--sync", []string{"1", "2"}[rng.IntN(2)]}
		},
		sleep: func(rng *rand.Rand) time.Duration { return time.Duration(5+rng.IntN(150)) * time.Millisecond },
	})
}

// kill9Config is what TestKill9 and TestKill9Retention differ in.
type kill9Config struct {
	rounds int
	// stream is the PCG stream of the round's random choices; the load's
	// is stream+1.
	stream   uint64
	loadRate int  // commands a second after the preload
	preload  bool // the first rounds (a fifth, at most kill9PreloadRounds) send only resting orders, as fast as the node takes them
	model    bool // check against the naive model too (TestKill9Retention re-bases on snapshots, which it cannot follow)
	nodeArgs []string
	// restartArgs, if not nil, are added to nodeArgs at each restart.
	restartArgs func(rng *rand.Rand) []string
	sleep       func(rng *rand.Rand) time.Duration // how long the load runs before the kill
	// beforeCheck, if not nil, runs on the killed directory before
	// checkKilledDir opens it.
	beforeCheck func(round int, dir string, m *logModel)
	// kinds are the kill kinds that must each occur at rounds >= 100.
	kinds []string
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

// Kill kinds (kill9Stats.kinds).
const (
	killPreload   = "preload"
	killSnapshot  = "snapshot"
	killLogWrite  = "log write"
	killRollOver  = "segment roll-over"
	killRetention = "retention delete"
)

// ackSet is the client's answers: each (Release or Duplicate) is
// appended to fresh until the next round takes them; seen counts the
// distinct seqs answered.
type ackSet struct {
	mu    sync.Mutex
	fresh []uint64
	seen  []bool // by seq
	n     int
}

func (a *ackSet) add(seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uint64(len(a.seen)) <= seq {
		a.seen = append(a.seen, false)
	}
	if !a.seen[seq] {
		a.seen[seq] = true
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

// kill9Run is the harness of TestKill9 and TestKill9Retention: it starts
// the node child, drives the load through a reconnecting client, kills
// the child cfg.rounds times at random moments, checks each killed
// directory (checkKilledDir) and restarts the child; at the end every
// command sent must be answered. Each round costs the same however many
// came before: the book is bounded (kill9Load), the model is fed only the
// log's new suffix, and an answered command is checked once, in the round
// after its answer, then forgotten by the model. It logs the kill kinds
// and the rounds per minute of the first and the last 100 rounds.
func kill9Run(t *testing.T, cfg kill9Config) *logModel {
	rounds := cfg.rounds
	seed := *kill9Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-kill9.seed to repeat), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, cfg.stream))
	dir := filepath.Join(t.TempDir(), "node")
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
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

	preloadRounds := 0
	if cfg.preload {
		preloadRounds = min(rounds/5, kill9PreloadRounds)
	}
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
	m := &logModel{eng: engine.New(), inLog: map[uint64]bool{}, prevEnd: -1, detachedOK: cfg.beforeCheck != nil}
	if cfg.model {
		m.model = enginetest.NewModel()
	}
	t0 := time.Now()
	var early, late time.Duration
	for round := 0; round < rounds; round++ {
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
		if out := child.kill(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
			t.Fatalf("round %d: the node child reported:\n%s", round, out)
		}
		child = nil
		paused.Store(true)
		ackedNow := acks.take()

		if cfg.beforeCheck != nil {
			cfg.beforeCheck(round, dir, m)
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
		child = startNodeChild(t, dir, listen, args...)
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
	if rounds >= 200 {
		t.Logf("rounds per minute: %.1f in rounds 1-100, %.1f in rounds %d-%d", 100/early.Minutes(), 100/(total-late).Minutes(), rounds-99, rounds)
	}
	return m
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
func checkKilledDir(t *testing.T, round int, dir string, acked []uint64, clientID uint64, m *logModel) killedDir {
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

	// The model: an engine fed every command of the log in order (from
	// where the last round's scan ended).
	// The scan starts one entry early: the last entry scanned must still
	// be there, unchanged (the log only grows after its durable end).
	var cmd engine.Command
	from, tail := m.end, m.end > 0 && m.prevEnd >= 0
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
	inLog, logEnd := m.inLog, m.end
	if m.model == nil {
		// No naive model (TestKill9Retention re-bases on snapshots).
	} else if got := m.model.StateHash(); got != recovered {
		fail("recovered state hash %x, the model engine fed the log's commands gives %x (the B-tree engine fed them %x)", recovered, got, m.eng.StateHash())
	}
	if got := m.eng.StateHash(); got != recovered {
		fail("recovered state hash %x, the log's commands give %x", recovered, got)
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
	if d, err := descriptorOf(dir, logID); err != nil {
		fail("log descriptor: %v", err)
	} else {
		k.segmentLength = int64(d.SegmentFileLength)
	}

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
