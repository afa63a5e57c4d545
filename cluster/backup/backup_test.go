package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// commands generates n commands and the reference engine's state hash
// after each prefix (hashes[i]: after i commands).
func commands(seed int64, n int) ([]engine.Command, []uint64) {
	g := enginetest.NewGen(seed, enginetest.GenConfig{})
	ref := engine.New()
	cmds := make([]engine.Command, n)
	hashes := make([]uint64, n+1)
	hashes[0] = ref.StateHash()
	for i := range cmds {
		g.Next(&cmds[i])
		for cmds[i].Kind < engine.CmdDefineInstrument || cmds[i].Kind > engine.CmdMarkPrice {
			g.Next(&cmds[i])
		}
		g.Observe(ref.Apply(&cmds[i]))
		hashes[i+1] = ref.StateHash()
	}
	return cmds, hashes
}

// node is a node under test on the OS file system.
type node struct {
	t     testing.TB
	dir   string
	n     *cluster.Node
	svc   *enginesvc.Service
	sess  int64
	clock int64
	mu    sync.Mutex
	// applied are the log positions of the commands applied, in order.
	applied []int64
}

func nodeOptions(dir string, clock *int64) cluster.Options {
	return cluster.Options{FS: vfs.Default, Dir: dir, TermLength: 64 * 1024, SegmentLength: 128 * 1024, FileSyncLevel: 1,
		SnapshotMode: cluster.StopTheWorld, FileIoMaxLength: 1 << 20, MaxBatch: 64,
		Clock: func() int64 { *clock += 1000; return *clock }}
}

func openNode(t testing.TB, dir string) *node {
	t.Helper()
	nd := &node{t: t, dir: dir}
	nd.svc = enginesvc.New(enginesvc.Options{OnApplied: func(pos int64, _ *engine.Command, _ []engine.Event) {
		nd.mu.Lock()
		nd.applied = append(nd.applied, pos)
		nd.mu.Unlock()
	}})
	o := nodeOptions(dir, &nd.clock)
	o.Service = nd.svc
	n, err := cluster.Open(o)
	if err != nil {
		t.Fatalf("open node: %v", err)
	}
	nd.n = n
	if nd.sess, err = n.Connect("aeron:ipc", 102); err != nil {
		t.Fatal(err)
	}
	return nd
}

func (nd *node) submit(cmds []engine.Command) {
	nd.t.Helper()
	var buf []byte
	for i := range cmds {
		var err error
		if buf, err = wire.AppendCommand(buf[:0], &cmds[i]); err != nil {
			nd.t.Fatal(err)
		}
		if err := nd.n.Offer(nd.sess, buf); err != nil {
			nd.t.Fatal(err)
		}
	}
	nd.drain()
}

func (nd *node) drain() {
	nd.t.Helper()
	for i := 0; ; i++ {
		w, err := nd.n.DoWork()
		if err != nil {
			nd.t.Fatal(err)
		}
		if w == 0 && nd.n.Pending() == 0 {
			return
		}
		if w == 0 {
			runtime.Gosched()
		}
		if i > 10_000_000 {
			nd.t.Fatal("drain does not end")
		}
	}
}

func (nd *node) snapshot() {
	nd.t.Helper()
	if err := cluster.TakeSnapshot(nd.n, 30*time.Second); err != nil {
		nd.t.Fatalf("snapshot: %v", err)
	}
}

func (nd *node) close() {
	nd.t.Helper()
	if err := nd.n.Close(); err != nil {
		nd.t.Fatal(err)
	}
}

// appliedBy is how many commands were applied at log positions <= pos.
func (nd *node) appliedBy(pos int64) int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return sort.Search(len(nd.applied), func(i int) bool { return nd.applied[i] > pos })
}

// stoppedNode writes a stopped node: first commands, a snapshot, then the
// rest; it returns its directory and the reference hashes.
func stoppedNode(t *testing.T, n, snapAt int) (string, []uint64) {
	dir := filepath.Join(t.TempDir(), "node")
	cmds, hashes := commands(7, n)
	nd := openNode(t, dir)
	nd.submit(cmds[:snapAt])
	nd.snapshot()
	nd.submit(cmds[snapAt:])
	nd.close()
	return dir, hashes
}

func hexHash(h uint64) string { return fmt.Sprintf("%016x", h) }

func TestCreateStopped(t *testing.T) {
	dir, hashes := stoppedNode(t, 3000, 1000)
	before, err := vfs.Digests(vfs.Default, filepath.Join(dir, "cluster"), filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(t.TempDir(), "bk")
	m, err := Create(Options{From: dir, To: bdir})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	after, _ := vfs.Digests(vfs.Default, filepath.Join(dir, "cluster"), filepath.Join(dir, "archive"))
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("create changed the source:\nbefore %v\nafter  %v", before, after)
	}
	if !m.Verified || m.StateHash != hexHash(hashes[len(hashes)-1]) {
		t.Fatalf("manifest: verified %v, state hash %s; the reference engine after all %d commands: %s", m.Verified, m.StateHash, len(hashes)-1, hexHash(hashes[len(hashes)-1]))
	}
	if m.S <= 0 || m.B <= m.S || m.SourceRunning {
		t.Fatalf("manifest: S %d, B %d, running %v", m.S, m.B, m.SourceRunning)
	}
	got, err := ReadManifest(vfs.Default, bdir)
	if err != nil || got.StateHash != m.StateHash || len(got.Files) == 0 {
		t.Fatalf("read manifest: %v %+v", err, got)
	}
	if _, err := os.Stat(bdir + ".verify"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the verification directory is left behind: %v", err)
	}
	// A second create into the same directory is refused: it is not empty.
	if _, err := Create(Options{From: dir, To: bdir}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("create into a backup: %v", err)
	}
}

func TestDrill(t *testing.T) {
	dir, _ := stoppedNode(t, 2000, 500)
	bdir := filepath.Join(t.TempDir(), "bk")
	m, err := Create(Options{From: dir, To: bdir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := Drill(DrillOptions{Backup: bdir, WorkDir: filepath.Join(t.TempDir(), "restore"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("drill: %v", err)
	}
	if !d.OK || d.StateHash != m.StateHash || d.RestoreBytes != m.Bytes || d.ReplayedPositions != m.B-m.S ||
		d.ReplayPositionsPerSec <= 0 || d.RestoreBytesPerSec <= 0 || d.Date != "2026-01-02T03:04:05Z" {
		t.Fatalf("drill record %+v; manifest bytes %d, B-S %d, hash %s", d, m.Bytes, m.B-m.S, m.StateHash)
	}
	last, err := LastDrill(vfs.Default, bdir)
	if err != nil || last == nil || *last != *d {
		t.Fatalf("last drill %+v, %v; want %+v", last, err, d)
	}
	// A damaged image: the drill fails, says why, and is recorded.
	seg := firstLogSegment(t, bdir, m)
	flipByte(t, seg, 200)
	d2, err := Drill(DrillOptions{Backup: bdir, WorkDir: filepath.Join(t.TempDir(), "restore2")})
	if !errors.Is(err, ErrDrillFailed) || d2 == nil || d2.OK || !strings.Contains(d2.Why, "SHA-256") {
		t.Fatalf("drill of a damaged image: %v, %+v", err, d2)
	}
	all, err := ReadDrills(vfs.Default, bdir)
	if err != nil || len(all) != 2 || !all[0].OK || all[1].OK {
		t.Fatalf("drill log %+v, %v", all, err)
	}
}

// firstLogSegment is the path of the image's first log segment.
func firstLogSegment(t *testing.T, bdir string, m *Manifest) string {
	t.Helper()
	prefix := fmt.Sprintf("archive/%d-", m.LogRecordingID)
	for _, f := range m.Files {
		if strings.HasPrefix(f.Path, prefix) && strings.HasSuffix(f.Path, archive.SegmentSuffix) {
			return filepath.Join(bdir, f.Path)
		}
	}
	t.Fatalf("no log segment in %v", m.Files)
	return ""
}

// flipByte flips one byte of the file at path, off bytes into its data
// (from the start of the file's first non-zero byte).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for i < len(b) && b[i] == 0 {
		i++
	}
	b[i+int(off)] ^= 0x5a
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// imageFile is the path of the first segment file of image recording id.
func imageFile(t *testing.T, bdir string, id int64) string {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(bdir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("%d-", id)) && strings.HasSuffix(e.Name(), archive.SegmentSuffix) {
			return filepath.Join(bdir, "archive", e.Name())
		}
	}
	t.Fatalf("no segment of recording %d in %s", id, bdir)
	return ""
}

func TestCreateCorruptImage(t *testing.T) {
	dir, _ := stoppedNode(t, 2000, 1000)
	for _, tc := range []struct {
		name   string
		exists bool // the backup directory exists, empty
		pick   func(m *Manifest) int64
		off    int64
	}{
		{"log-payload", false, func(m *Manifest) int64 { return m.LogRecordingID }, 100},
		{"log-payload-existing-dir", true, func(m *Manifest) int64 { return m.LogRecordingID }, 3000},
		{"engine-snapshot", false, func(m *Manifest) int64 { return m.SnapshotRecordingIDs[1] }, 400},
		{"consensus-module-snapshot", false, func(m *Manifest) int64 { return m.SnapshotRecordingIDs[0] }, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bdir := filepath.Join(t.TempDir(), "bk")
			if tc.exists {
				if err := os.Mkdir(bdir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			flipped := false
			_, err := Create(Options{From: dir, To: bdir, beforeVerify: func(m *Manifest) error {
				flipByte(t, imageFile(t, bdir, tc.pick(m)), tc.off)
				flipped = true
				return nil
			}})
			if !flipped || !errors.Is(err, ErrVerify) {
				t.Fatalf("create of a damaged image: flipped %v, err %v", flipped, err)
			}
			t.Logf("refused: %v", err)
			names, rerr := os.ReadDir(bdir)
			switch {
			case tc.exists && (rerr != nil || len(names) != 0):
				t.Errorf("the backup directory is not left empty: %v %v", names, rerr)
			case !tc.exists && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("the backup directory made by the failed create is left: %v %v", names, rerr)
			}
			if _, err := ReadManifest(vfs.Default, bdir); !errors.Is(err, ErrNoManifest) {
				t.Errorf("manifest after a failed create: %v", err)
			}
		})
	}
}

// TestCreateRunning backs up a node while it runs under a bounded load:
// the image verifies, and its state hash at B is the reference engine's
// after the commands the source had applied up to B.
func TestCreateRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	const total, first, before = 8000, 1000, 2500
	cmds, hashes := commands(11, total)
	nd := openNode(t, dir)
	nd.submit(cmds[:first])
	nd.snapshot()
	// The log after the snapshot spans several terms before the create
	// starts; the load goes on while it runs.
	nd.submit(cmds[first:before])
	var bdir string
	var m *Manifest
	var cerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		bdir = filepath.Join(t.TempDir(), "bk")
		m, cerr = Create(Options{From: dir, To: bdir})
	}()
	// The load: batches until the create is done or every command is in,
	// whichever comes first; then the rest.
	sent := before
	running := true
	for sent < total {
		select {
		case <-done:
			running = false
		default:
		}
		if !running {
			break
		}
		k := min(sent+20, total)
		nd.submit(cmds[sent:k])
		sent = k
	}
	<-done
	midway := sent < total
	nd.submit(cmds[sent:])
	nd.close()
	if cerr != nil {
		t.Fatalf("create from a running node: %v", cerr)
	}
	if !m.SourceRunning {
		t.Errorf("the manifest does not say the source was running")
	}
	k := nd.appliedBy(m.B)
	t.Logf("S %d, B %d: %d of %d commands in the image (create done while the load ran: %v)", m.S, m.B, k, total, midway)
	if m.StateHash != hexHash(hashes[k]) {
		t.Fatalf("image state hash at B = %d is %s; the reference after the %d commands the source applied by B: %s", m.B, m.StateHash, k, hexHash(hashes[k]))
	}
	if k < before {
		t.Fatalf("the image holds %d commands, fewer than the %d sent before the create", k, before)
	}
	if _, err := Drill(DrillOptions{Backup: bdir, WorkDir: filepath.Join(t.TempDir(), "restore")}); err != nil {
		t.Fatalf("drill of the running node's image: %v", err)
	}
}

// A directory real Aeron wrote is refused before anything is written.
func TestCreateRefusesAeronDirectory(t *testing.T) {
	dir := fixtures.CopyAeronSingleNode(t)
	bdir := filepath.Join(t.TempDir(), "bk")
	if _, err := Create(Options{From: dir, To: bdir}); err == nil || !strings.Contains(err.Error(), "not a matchlog node") {
		t.Fatalf("create from an Aeron directory: %v", err)
	}
	if _, err := os.Stat(bdir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused create made %s: %v", bdir, err)
	}
}
