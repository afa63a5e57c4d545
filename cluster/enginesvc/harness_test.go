package enginesvc_test

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

const testDir = "node"

// key identifies a command by its source and sequence.
type key struct{ src, seq uint64 }

// stream generates n commands with a reference engine and returns them with
// the reference hash after each prefix (hashes[i] = after i commands).
func stream(seed int64, n int, hashEvery bool) ([]engine.Command, []uint64) {
	return streamWith(seed, n, hashEvery, enginetest.GenConfig{})
}

// streamWith is stream with the generator's configuration.
func streamWith(seed int64, n int, hashEvery bool, cfg enginetest.GenConfig) ([]engine.Command, []uint64) {
	g := enginetest.NewGen(seed, cfg)
	ref := engine.New()
	cmds := make([]engine.Command, n)
	var hashes []uint64
	if hashEvery {
		hashes = make([]uint64, n+1)
		hashes[0] = ref.StateHash()
	}
	for i := range cmds {
		g.Next(&cmds[i])
		for cmds[i].Kind < engine.CmdDefineInstrument || cmds[i].Kind > engine.CmdMarkPrice {
			g.Next(&cmds[i]) // kinds without a message in the schema
		}
		g.Observe(ref.Apply(&cmds[i]))
		if hashEvery {
			hashes[i+1] = ref.StateHash()
		}
	}
	if !hashEvery {
		hashes = []uint64{ref.StateHash()}
	}
	return cmds, hashes
}

// harness drives one node over a file system.
type harness struct {
	t        testing.TB
	fs       vfs.FS
	opts     cluster.Options
	svcOpts  enginesvc.Options
	node     *cluster.Node
	svc      *enginesvc.Service
	sess     int64
	clock    int64
	released map[key]bool
	wrap     func(*enginesvc.Service) cluster.Service
}

func newHarness(t testing.TB, fsys vfs.FS, mode cluster.SnapshotMode, syncLevel int) *harness {
	h := &harness{t: t, fs: fsys, released: map[key]bool{}}
	h.opts = cluster.Options{FS: fsys, Dir: testDir, TermLength: 64 * 1024, SegmentLength: 128 * 1024,
		FileSyncLevel: archive.SyncLevel(syncLevel), SnapshotMode: mode, FileIoMaxLength: 1 << 20, MaxBatch: 64}
	h.opts.Clock = func() int64 { h.clock += 1000; return h.clock }
	h.opts.Egress = func(sid int64, msg []byte) {
		if wire.EventKind(msg) == engine.EvRelease {
			src, seq, err := wire.DecodeRelease(msg)
			if err != nil {
				t.Errorf("bad release: %v", err)
			}
			h.released[key{src, seq}] = true
		}
	}
	return h
}

// restarts skews the epoch clock of each node a harness opens.
var restarts atomic.Int64

func (h *harness) open() error {
	h.svc = enginesvc.New(h.svcOpts)
	o := h.opts
	o.Service = h.svc
	if h.wrap != nil {
		o.Service = h.wrap(h.svc)
	}
	// Every open is a restart well after the previous node's last
	// activity, as after a crash the timeout has passed: the crash clones
	// hold a live cluster-mark.dat.
	skew := restarts.Add(int64(2 * cluster.DefaultMarkFileTimeout / time.Millisecond))
	o.EpochClock = func() int64 { return time.Now().UnixMilli() + skew }
	n, err := cluster.Open(o)
	if err != nil {
		return err
	}
	h.node = n
	if h.sess == 0 {
		if h.sess, err = n.Connect("aeron:ipc", 102); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) mustOpen() {
	h.t.Helper()
	if err := h.open(); err != nil {
		h.t.Fatalf("open: %v", err)
	}
}

// submit offers cmds and runs the duty cycle until they are sequenced.
func (h *harness) submit(cmds []engine.Command) error {
	var buf []byte
	for i := range cmds {
		var err error
		buf, err = wire.AppendCommand(buf[:0], &cmds[i])
		if err != nil {
			return err
		}
		if err := h.node.Offer(h.sess, buf); err != nil {
			return err
		}
	}
	return h.drain()
}

// drain runs DoWork until nothing is left to do or pending.
func (h *harness) drain() error {
	for i := 0; ; i++ {
		w, err := h.node.DoWork()
		if err != nil {
			return err
		}
		if w == 0 {
			if h.node.Pending() == 0 {
				return nil
			}
			runtime.Gosched() // a pauseless snapshot holds the archive
		}
		if i > 10_000_000 {
			return errors.New("drain does not end")
		}
	}
}

func (h *harness) close() error {
	if h.node == nil {
		return nil
	}
	err := h.node.Close()
	h.node = nil
	return err
}

// logCommands reads the commands in the durable log of a stopped node.
func logCommands(t testing.TB, fsys vfs.FS) ([]engine.Command, error) {
	var out []engine.Command
	err := cluster.ScanLog(fsys, testDir, func(e *cluster.LogEntry) error {
		if e.Template != 1 {
			return nil
		}
		var c engine.Command
		if err := wire.DecodeCommand(e.Payload, &c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// modelHash is the state hash of a model engine fed cmds.
func modelHash(cmds []engine.Command) uint64 {
	m := enginetest.NewModel()
	for i := range cmds {
		m.Apply(&cmds[i])
	}
	return m.StateHash()
}
