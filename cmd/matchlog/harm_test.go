package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// deadPID returns the id of a process that has exited and been reaped:
// what a node killed with SIGKILL leaves in its mark files.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	return c.Process.Pid
}

// treeHashes returns the SHA-256 of every file under dir, by relative path.
func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test when a file under dir differs from before.
func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed %s", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created %s", what, k)
		}
	}
}

// Every offline verb that writes refuses a live node (one held open in this
// process: fresh mark files naming this process), exits 1 naming the pid,
// and changes no byte of the directory; once the node is gone they run.
func TestWritingVerbsRefuseLiveNode(t *testing.T) {
	dir, _, _ := buildNodeDir(t)
	adir := filepath.Join(dir, "archive")
	tn := openTestNode(t, dir, nil)
	pid := fmt.Sprintf("process %d is running", os.Getpid())
	// The live node prepares its next log segment in the background
	// (*.rec.prep): that file is the node's own doing, not the verbs'.
	hashes := func() map[string]string {
		h := treeHashes(t, dir)
		for k := range h {
			if strings.HasSuffix(k, archive.PreparedSuffix) {
				delete(h, k)
			}
		}
		return h
	}
	before := hashes()
	for _, args := range [][]string{
		{"cluster", "invalidate-latest-snapshot", "--dir", dir},
		{"cluster", "revalidate-snapshot", "--dir", dir},
		{"cluster", "snapshot", "--dir", dir},
		{"archive", "detach", "--dir", adir, "--id", "0", "--position", "131072"},
		{"archive", "delete", "--dir", adir, "--id", "0"},
		{"archive", "purge", "--dir", adir, "--id", "0", "--position", "131072"},
		{"archive", "verify", "--dir", adir, "--truncate"},
		{"archive", "compact", "--dir", adir},
		{"archive", "compact", "--dir", dir, "--invalid"},
	} {
		code, out, errb := runCLI(t, args...)
		if code != 1 || !strings.Contains(errb, pid) || !strings.Contains(errb, "activity timestamp") {
			t.Errorf("%q on a live node: exit %d, stdout %q, stderr %q; want 1 naming %q", args, code, out, errb, pid)
		}
		sameTree(t, strings.Join(args[:2], " ")+" on a live node", before, hashes())
	}
	tn.close()
}

// A node killed with SIGKILL leaves fresh activity timestamps and a pid
// that is gone: it is not live, at once, for every tool and for Open.
func TestKilledNodeIsNotLive(t *testing.T) {
	dir, _, _ := buildNodeDir(t)
	dead := uint64(deadPID(t))
	now := uint64(time.Now().UnixMilli())
	for _, f := range []struct {
		path              string
		activityAt, pidAt int
	}{
		{filepath.Join(dir, "cluster", cluster.MarkFileName), 16, 32},
		{filepath.Join(dir, "archive", archive.MarkFileName), 16, 32},
	} {
		b := mustRead(t, f.path)
		binary.LittleEndian.PutUint64(b[f.activityAt:], now)
		binary.LittleEndian.PutUint64(b[f.pidAt:], dead)
		if err := os.WriteFile(f.path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := archive.ReadMarkFileIn(vfs.Default, filepath.Join(dir, "archive")); err != nil || m.PID != int64(dead) || m.ActivityTimestamp != int64(now) {
		t.Fatalf("archive mark file as written: %+v, %v", m, err)
	}
	code, out, _ := runCLI(t, "cluster", "describe", "--dir", dir)
	if code != 0 || strings.Contains(out, "LIVE") || !strings.Contains(out, "not stopped cleanly (crashed?), not live") {
		t.Errorf("describe of a killed node: exit %d\n%s", code, out)
	}
	mustCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", dir)
	mustCLI(t, "cluster", "revalidate-snapshot", "--dir", dir)
	mustCLI(t, "archive", "verify", "--dir", filepath.Join(dir, "archive"), "--truncate")
	// matchlog node opens it at once.
	tn := openTestNode(t, dir, nil)
	tn.close()
}

// A refused detach, delete or purge leaves the archive as it found it: the
// mark file is not rewritten and files waiting to be unlinked stay, even
// with --now (which unlinks them first only when the command can go on).
func TestRefusedRemovalLeavesArchive(t *testing.T) {
	d := filepath.Join(fixtures.CopyAeronSingleNode(t, "archive"), "archive")
	mustCLI(t, "archive", "detach", "--dir", d, "--id", "0", "--position", "131072")
	mustCLI(t, "archive", "delete", "--dir", d, "--id", "0") // 60 s delay: 0-0.rec.deleted waits
	if !fileExists(d, "0-0.rec.deleted") {
		t.Fatal("no pending file to keep")
	}
	before := treeHashes(t, d)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"not after the start segment", []string{"archive", "purge", "--dir", d, "--id", "0", "--position", "131072", "--now"}},
		{"not after the start segment", []string{"archive", "purge", "--dir", d, "--id", "0", "--position", "131072", "--delay", "0"}},
		{"not a segment boundary", []string{"archive", "detach", "--dir", d, "--id", "0", "--position", "5"}},
		{"past the stop segment", []string{"archive", "detach", "--dir", d, "--id", "0", "--position", "393216"}},
		{"files waiting", []string{"archive", "delete", "--dir", d, "--id", "0"}},
		{"recording 9 is not in the catalog", []string{"archive", "purge", "--dir", d, "--id", "9", "--position", "131072"}},
	} {
		failCLI(t, c.want, c.args...)
		sameTree(t, strings.Join(c.args, " "), before, treeHashes(t, d))
	}
}

// buildTwoSetDir makes a node directory with two snapshot sets and a log
// of three segments: 300 commands, a snapshot (log position 45120), 1700
// more, a snapshot (297568), 100 more, a clean stop. Recording 0 is the
// log, 1 and 2 the first set (service, consensus module), 3 and 4 the
// latest.
func buildTwoSetDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	gen := enginetest.NewGen(7, enginetest.GenConfig{})
	tn := openTestNode(t, dir, gen)
	for _, k := range []int{300, 1700} {
		tn.submit(k)
		tn.node.RequestSnapshot()
		tn.drain()
		if err := tn.node.AwaitSnapshot(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	tn.submit(100)
	tn.close()
	p := runPlanJSON(t, dir)
	if !p.Complete || len(p.Snapshots) != 2 || p.Snapshots[0].LogPosition != 297568 || p.Snapshots[0].RecordingID != 4 ||
		p.ReplayTo <= 262144 {
		t.Fatalf("plan %+v: the damage below assumes another layout", p)
	}
	return dir
}

// copyNode copies a node directory (its cluster/ and archive/) into a new
// temporary directory and returns it.
func copyNode(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "node")
	copyTree(t, src, dst)
	return dst
}

// setEntryLogPosition rewrites the logPosition of recording.log entries.
func setEntryLogPosition(t *testing.T, dir string, pos int64, offsets ...int) {
	t.Helper()
	p := filepath.Join(dir, "cluster", "recording.log")
	b := mustRead(t, p)
	for _, off := range offsets {
		binary.LittleEndian.PutUint64(b[off+24:], uint64(pos))
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func setRecordingState(t *testing.T, dir string, id int64, st archive.RecordingState) {
	t.Helper()
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, "archive"), archive.CatalogOptions{SyncLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.ChangeState(id, st); err != nil {
		t.Fatal(err)
	}
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, dir, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
}

// recovery-plan, describe and a start say what is wrong with a damaged node
// directory and the fix that applies: invalidate-latest-snapshot only when
// the latest set is what fails and the plan it leaves can be carried out;
// recovery-plan and describe exit 1 whenever the plan cannot be carried
// out (a segment missing, a recording INVALID, a position off the frame
// grid), 0 when it can; no command here changes a byte.
func TestPlanRemedies(t *testing.T) {
	base := buildTwoSetDir(t)
	const fallBack = "invalidate-latest-snapshot --dir "
	cases := []struct {
		name   string
		damage func(t *testing.T, d string)
		want   []string // in the error of recovery-plan, describe and Open
		// invalidate: the fix suggests invalidate-latest-snapshot (and to
		// which set); ok: the plan can be carried out.
		invalidate bool
		ok         bool
	}{
		{name: "latest service snapshot segment missing", damage: func(t *testing.T, d string) { removeFile(t, d, "archive/3-0.rec") },
			want: []string{"segment file 3-0.rec of recording 3 (snapshot of service 0 at log position 297568)", "is missing",
				"to fall back to the snapshot set at log position 45120", "revalidate-snapshot"}, invalidate: true},
		{name: "both sets' snapshot segments missing", damage: func(t *testing.T, d string) {
			removeFile(t, d, "archive/3-0.rec")
			removeFile(t, d, "archive/1-0.rec")
		}, want: []string{"segment file 3-0.rec", "restore the latest snapshot set's recordings from a backup",
			"the earlier set cannot be used either: segment file 1-0.rec"}},
		{name: "log segment in the replay range missing", damage: func(t *testing.T, d string) { removeFile(t, d, "archive/0-262144.rec") },
			want: []string{"segment file 0-262144.rec of recording 0 (log)", "restore 0-262144.rec from a backup; no earlier snapshot set helps"}},
		{name: "log segment below the replay range missing", damage: func(t *testing.T, d string) { removeFile(t, d, "archive/0-0.rec") }, ok: true},
		{name: "latest set fails, log before it detached", damage: func(t *testing.T, d string) {
			mustCLI(t, "archive", "detach", "--dir", filepath.Join(d, "archive"), "--id", "0", "--position", "131072")
			removeFile(t, d, "archive/3-0.rec")
		}, want: []string{"segment file 3-0.rec", "the earlier set cannot be used either: log recording 0 holds [131072, ",
			"the log from the snapshot at 45120 was detached or purged"}},
		{name: "detached log", damage: func(t *testing.T, d string) {
			mustCLI(t, "archive", "detach", "--dir", filepath.Join(d, "archive"), "--id", "0", "--position", "262144")
			mustCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", d)
		}, want: []string{"log recording 0 holds [262144, ", "restore the detached segment files"}},
		{name: "log recording INVALID", damage: func(t *testing.T, d string) { setRecordingState(t, d, 0, archive.StateInvalid) },
			want: []string{"recording 0 (log of term 0) is INVALID in the archive catalog", "archive verify"}},
		{name: "latest snapshot recording INVALID", damage: func(t *testing.T, d string) { setRecordingState(t, d, 3, archive.StateInvalid) },
			want: []string{"recording 3 (snapshot of service 0 at log position 297568) is INVALID", "to fall back to the snapshot set at log position 45120"}, invalidate: true},
		{name: "snapshot position off the frame alignment", damage: func(t *testing.T, d string) { setEntryLogPosition(t, d, 297568+8, 192, 256) },
			want: []string{"replay position 297576 of log recording 0 is not at a frame: not a multiple of the 32-byte frame alignment",
				"to fall back to the snapshot set at log position 45120"}, invalidate: true},
		{name: "snapshot position inside a frame", damage: func(t *testing.T, d string) { setEntryLogPosition(t, d, 297568+32, 192, 256) },
			want: []string{"replay position 297600 of log recording 0 is not at a frame", "to fall back to the snapshot set at log position 45120"}, invalidate: true},
		{name: "damaged catalog", damage: func(t *testing.T, d string) {
			if err := os.Truncate(filepath.Join(d, "archive", archive.CatalogFileName), 100); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"the archive catalog is damaged: restore archive.catalog from a backup"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := copyNode(t, base)
			c.damage(t, d)
			before := treeHashes(t, d)
			for _, verb := range []string{"recovery-plan", "describe"} {
				code, out, errb := runCLI(t, "cluster", verb, "--dir", d)
				if c.ok {
					if code != 0 {
						t.Errorf("%s: exit %d, stderr %q; the plan can be carried out", verb, code, errb)
					}
					continue
				}
				if code != 1 {
					t.Errorf("%s: exit %d, want 1; stderr %q\n%s", verb, code, errb, out)
				}
				for _, w := range c.want {
					if !strings.Contains(errb, w) {
						t.Errorf("%s: stderr does not say %q:\n%s", verb, w, errb)
					}
				}
				if got := strings.Contains(errb, fallBack+d); got != c.invalidate {
					t.Errorf("%s: suggests invalidate-latest-snapshot: %v, want %v:\n%s", verb, got, c.invalidate, errb)
				}
			}
			sameTree(t, "recovery-plan and describe", before, treeHashes(t, d))
			if c.ok {
				return
			}
			// A start refuses with the same words, and changes nothing.
			n, err := cluster.Open(cluster.Options{Dir: d, Service: enginesvc.New(enginesvc.Options{}), TermLength: 64 * 1024,
				SegmentLength: 128 * 1024, FileSyncLevel: 1})
			if err == nil {
				n.Close()
				t.Fatal("the node started")
			}
			if c.name == "damaged catalog" {
				return // the archive refuses it before any plan
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open: error does not say %q:\n%v", w, err)
				}
			}
			if got := strings.Contains(err.Error(), fallBack+d); got != c.invalidate {
				t.Errorf("Open: suggests invalidate-latest-snapshot: %v, want %v:\n%v", got, c.invalidate, err)
			}
		})
	}
}

// matchlog node refuses a directory real Aeron wrote, before it touches
// anything: exit 1, the reason, every file byte-identical.
func TestNodeRefusesAeronDirectory(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	before := treeHashes(t, d)
	code, _, errb := runCLI(t, "node", "--dir", d, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errb, "written by Aeron's consensus module") || !strings.Contains(errb, "never overwrites that file") {
		t.Errorf("node on Aeron's directory: exit %d, stderr %q", code, errb)
	}
	sameTree(t, "node", before, treeHashes(t, d))
}

// A cluster snapshot that fails part way (here the new snapshot
// recording's segment file cannot be created: a directory is in its way)
// exits 1 and leaves no half-added recording, TERM entry or log append:
// every file is as it was.
func TestClusterSnapshotFailureLeavesDirectory(t *testing.T) {
	dir, _, _ := buildNodeDir(t)
	if err := os.Mkdir(filepath.Join(dir, "archive", archive.SegmentFileName(3, 0)), 0o755); err != nil {
		t.Fatal(err)
	}
	before := treeHashes(t, dir)
	code, out, errb := runCLI(t, "cluster", "snapshot", "--dir", dir)
	if code != 1 || out != "" || !strings.Contains(errb, "3-0.rec") || !strings.Contains(errb, "the directory is as it was before the command") {
		t.Errorf("snapshot: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	sameTree(t, "failed snapshot", before, treeHashes(t, dir))
	// With the obstacle gone the same command succeeds.
	if err := os.Remove(filepath.Join(dir, "archive", archive.SegmentFileName(3, 0))); err != nil {
		t.Fatal(err)
	}
	if s := runSnapshotJSON(t, "--dir", dir); len(s.RecordingIDs) != 2 {
		t.Errorf("snapshot after the failure: %+v", s)
	}
}

// A byte flipped inside a log frame in the replay range is found by
// position: `archive verify --all` fails naming the segment offset,
// `archive replay` and a start of the node refuse naming the position and
// the file offset, `cluster snapshot` saves nothing; no command changes a
// byte.
func TestFlippedLogByteReported(t *testing.T) {
	d := buildTwoSetDir(t)
	seg := filepath.Join(d, "archive", "0-262144.rec")
	b := mustRead(t, seg)
	// The frames of the segment; flip a payload byte of one in the middle.
	var offs []int
	for off := 0; off+32 <= len(b); {
		l := int32(binary.LittleEndian.Uint32(b[off:]))
		if l <= 0 {
			break
		}
		offs = append(offs, off)
		off += int(archive.AlignedFrameLength(l))
	}
	// The frames after the latest snapshot (297568), but for the last.
	var replayed []int
	for _, o := range offs[:len(offs)-1] {
		if 262144+o > 297568 {
			replayed = append(replayed, o)
		}
	}
	if len(replayed) < 10 {
		t.Fatalf("segment holds %d frames in the replay range", len(replayed))
	}
	off := replayed[len(replayed)/2]
	b[off+40] ^= 0x01
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pos := 262144 + off
	before := treeHashes(t, d)
	code, out, errb := runCLI(t, "archive", "verify", "--dir", filepath.Join(d, "archive"), "--all")
	if code == 0 || !strings.Contains(out+errb, fmt.Sprintf("segment offset %d", off)) || !strings.Contains(out+errb, "0-262144.rec") {
		t.Errorf("verify --all: exit %d, does not name the damaged frame at offset %d:\n%s%s", code, off, out, errb)
	}
	code, _, errb = runCLI(t, "archive", "replay", "--dir", filepath.Join(d, "archive"), "--id", "0")
	if code == 0 || !strings.Contains(errb, fmt.Sprintf("position %d", pos)) {
		t.Errorf("replay: exit %d, does not name position %d:\n%s", code, pos, errb)
	}
	// The node must refuse before `matchlog node` runs (which would serve).
	if n, err := cluster.Open(cluster.Options{Dir: d, Service: enginesvc.New(enginesvc.Options{}), TermLength: 64 * 1024,
		SegmentLength: 128 * 1024, FileSyncLevel: 1}); err == nil {
		n.Close()
		t.Fatal("the node started on the damaged log")
	}
	code, _, errb = runCLI(t, "node", "--dir", d, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errb, fmt.Sprintf("position %d", pos)) || !strings.Contains(errb, fmt.Sprintf("0-262144.rec offset %d", off)) {
		t.Errorf("node: exit %d, does not name position %d and the file offset %d:\n%s", code, pos, off, errb)
	}
	code, _, errb = runCLI(t, "cluster", "snapshot", "--dir", d)
	if code == 0 {
		t.Errorf("cluster snapshot saved the state of a damaged log:\n%s", errb)
	}
	sameTree(t, "verify, replay, node and cluster snapshot", before, treeHashes(t, d))
}
