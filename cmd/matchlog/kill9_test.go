//go:build unix

package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
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
// written — then, before restarting it, opens the directory in this
// process and checks: the recovered engine's state hash equals that of an
// engine fed the log's commands from the start (the durable prefix: what
// the log recording holds after recovery); every command the client got
// its Release (or Duplicate) for is in that log (file sync level 1 or
// 2, chosen at each start);
// recording.log and the catalog agree (recovery plan, archive verify).
// The client reconnects to each new child, resends what was unanswered
// and goes on; nothing is applied twice (the engine ignores a resent
// (source, seq) and answers Duplicate).
func TestKill9(t *testing.T) {
	rounds := *kill9N
	if testing.Short() {
		rounds = min(rounds, 10)
	}
	seed := *kill9Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-kill9.seed to repeat), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 9))
	dir := filepath.Join(t.TempDir(), "node")
	listen := freePort(t)
	nodeArgs := []string{"--sync", "1", "--snapshot-every-bytes", "65536", "--session-timeout", "30s"}

	child := startNodeChild(t, dir, listen, nodeArgs...)
	defer func() {
		if child != nil {
			child.kill()
		}
	}()

	const clientID = 7
	var mu sync.Mutex
	acked := map[uint64]bool{} // seqs answered Release or Duplicate
	var dups atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Addr: child.addr, ClientID: clientID, Reconnect: true,
		ReconnectMin: time.Millisecond, ReconnectMax: 50 * time.Millisecond, ReconnectTimeout: 2 * time.Minute,
		MaxOutstanding: 1 << 16,
		OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRelease {
				mu.Lock()
				acked[ev.Seq] = true
				mu.Unlock()
			}
		},
		OnDuplicate: func(_, seq uint64) {
			dups.Add(1)
			mu.Lock()
			acked[seq] = true
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20}); err != nil {
		t.Fatal(err)
	}

	// The load: resting orders while preloading (the first fifth of the
	// rounds), then a mix of crossing orders, cancels and modifies.
	var paused atomic.Bool
	var preloading atomic.Bool
	preloading.Store(true)
	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() {
		lr := rand.New(rand.NewPCG(seed, 10))
		var id uint64
		// As fast as the node takes them while preloading (a book of
		// tens of thousands of orders, whose snapshots take a while),
		// then at most loadRate commands a second, few enough for the
		// naive model to follow.
		const loadRate = 8000
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
			if ahead := time.Duration(sent)*time.Second/loadRate - time.Since(t0); ahead > 0 && !preloading.Load() {
				time.Sleep(ahead)
			}
			sent++
			cmd := kill9Command(lr, &id, preloading.Load())
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

	phases := map[string]int{}
	var lastLog int64
	// The model engine is fed the log incrementally: what an earlier
	// round scanned was recovered and closed cleanly, so it stays.
	m := &logModel{eng: engine.New(), model: enginetest.NewModel(), inLog: map[uint64]bool{}}
	for round := 0; round < rounds; round++ {
		if round == rounds/5 {
			preloading.Store(false)
		}
		// Let the load run, then kill.
		time.Sleep(time.Duration(5+rng.IntN(150)) * time.Millisecond)
		if out := child.kill(); strings.Contains(out, "DATA RACE") || strings.Contains(out, "panic:") {
			t.Fatalf("round %d: the node child reported:\n%s", round, out)
		}
		child = nil
		paused.Store(true)
		mu.Lock()
		ackedNow := make([]uint64, 0, len(acked))
		for s := range acked {
			ackedNow = append(ackedNow, s)
		}
		mu.Unlock()

		phase, logPos := checkKilledDir(t, round, dir, ackedNow, clientID, m)
		if round < rounds/5 {
			phase = "preload, " + phase
		}
		phases[phase]++
		if logPos < lastLog {
			t.Fatalf("round %d: the log shrank from %d to %d", round, lastLog, logPos)
		}
		lastLog = logPos

		// Snapshots every 64 KiB of log (most kills land in one) or
		// every 1 MiB (most land in log writes).
		// File sync level 1 or 2 (both promise that a released command
		// is on disk), changed from one start to the next.
		every := []string{"65536", "1048576"}[rng.IntN(2)]
		sync := []string{"1", "2"}[rng.IntN(2)]
		child = startNodeChild(t, dir, listen, append(nodeArgs, "--snapshot-every-bytes", every, "--sync", sync)...)
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
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	if want := int(c.NextSeq() - 1); n != want {
		t.Fatalf("%d commands answered, %d sent", n, want)
	}
	if rounds >= 20 {
		var inSnap, inLog int
		for k, v := range phases {
			if strings.HasSuffix(k, "snapshot") {
				inSnap += v
			} else {
				inLog += v
			}
		}
		if inSnap == 0 || inLog == 0 {
			t.Errorf("kills %v: want some during snapshots and some during log writes only", phases)
		}
	}
	t.Logf("%d kills %v; %d commands, all answered (%d as Duplicate after a resend); log %d bytes", rounds, phases, n, dups.Load(), lastLog)
}

// checkKilledDir opens the directory of a killed node in this process and
// checks it (see TestKill9). It returns what the node was doing when it
// was killed, as the recovery found it, and the log's length.
// logModel is the B-tree engine and the naive model engine
// (engine/enginetest) fed the log's commands, and which (client) seqs it
// saw, up to end. model may be nil (only the B-tree engine).
type logModel struct {
	eng   *engine.Engine
	model *enginetest.Model
	inLog map[uint64]bool
	end   int64
	// detachedOK: segment files wholly below the log's start (a kill
	// between automatic retention's detach and its delete; the node
	// deletes them at its next check) are no failure.
	detachedOK bool
}

func checkKilledDir(t *testing.T, round int, dir string, acked []uint64, clientID uint64, m *logModel) (string, int64) {
	t.Helper()
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
	phase := "log write"
	for _, r := range rec.Archive {
		if r.RecordingID != node.LogRecordingID() {
			phase = "snapshot"
		}
	}
	recovered := svc.Engine().StateHash()
	if err := node.Close(); err != nil {
		fail("close: %v", err)
	}

	// The model: an engine fed every command of the log in order (from
	// where the last round's scan ended).
	var cmd engine.Command
	from := m.end
	if from == 0 {
		from = -1
	}
	err = cluster.ScanLogFrom(vfs.Default, dir, from, func(e *cluster.LogEntry) error {
		m.end = e.Position
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
	if err != nil {
		fail("scan log: %v", err)
	}
	inLog, logEnd := m.inLog, m.end
	if m.model == nil {
		// No naive model (TestKill9Retention re-bases on snapshots).
	} else if got := m.model.StateHash(); got != recovered {
		fail("recovered state hash %x, the model engine fed the log's commands gives %x", recovered, got)
	}
	if got := m.eng.StateHash(); got != recovered {
		fail("recovered state hash %x, the log's commands give %x", recovered, got)
	}
	for _, s := range acked {
		if !inLog[s] {
			fail("command seq %d was answered before the kill but is not in the log", s)
		}
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
	return phase, logEnd
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

// kill9Command is the next command of the kill -9 tests' load: resting
// limit orders (all of them while resting), IOC orders crossing a few
// levels, cancels and modifies of ids already used; id is the last order
// id, advanced for a new order.
func kill9Command(lr *rand.Rand, id *uint64, resting bool) engine.Command {
	side := engine.Side(lr.IntN(2))
	switch k := lr.IntN(10); {
	case resting || k < 5:
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
		return engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: uint64(lr.Int64N(int64(*id)+1)) + 1}
	default:
		return engine.Command{Kind: engine.CmdModify, Instrument: 1, OrderID: uint64(lr.Int64N(int64(*id)+1)) + 1,
			Price: int64(900 + lr.IntN(200)), Qty: int64(lr.IntN(20)) + 1}
	}
}
