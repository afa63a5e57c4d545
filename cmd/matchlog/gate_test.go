package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
)

// digests is vfs.Digests of a node directory and its cluster/ and archive/.
func digests(t *testing.T, dir string) map[string]string {
	t.Helper()
	d, err := vfs.Digests(vfs.Default, dir, filepath.Join(dir, "cluster"), filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sameDigests(t *testing.T, what string, before, after map[string]string) {
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

// startNodeVerb starts the node `matchlog node --dir dir extra...` would
// start (its flags, its gate), closes it, and returns its log. It fails
// the test when the node does not start.
func startNodeVerb(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	var logb bytes.Buffer
	cfg, err := parseNodeFlags(append([]string{"--dir", dir, "--listen", "127.0.0.1:0"}, extra...), &logb)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg.Options)
	if err != nil {
		t.Fatalf("node on %s did not start: %v\n%s", dir, err, logb.String())
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	return logb.String()
}

// gateDirs are native node directories for the gate: one per verdict a
// stopped node's own directory can have (no live source).
type gateDirs struct {
	full, noSnap, rebased, damaged, damagedNoFallback, lostLog string
}

func buildGateDirs(t *testing.T) gateDirs {
	t.Helper()
	var g gateDirs
	// 300 commands, a snapshot at 2600, 100 more: the log from 0, one set.
	g.full = filepath.Join(t.TempDir(), "full")
	tn := openTestNode(t, g.full, enginetest.NewGen(41, enginetest.GenConfig{}))
	snapshotNode(t, tn, 2600)
	tn.submit(100)
	tn.close()
	// No snapshot, the log from 0; the same detached past 0.
	g.noSnap = filepath.Join(t.TempDir(), "nosnap")
	tn = openTestNode(t, g.noSnap, enginetest.NewGen(42, enginetest.GenConfig{}))
	tn.submit(1500)
	tn.close()
	g.rebased = copyNode(t, g.noSnap)
	mustCLI(t, "archive", "detach", "--dir", filepath.Join(g.rebased, "archive"), "--id", "0", "--position", "131072", "--unsafe-past-snapshot")
	// Two sets, the latest's engine snapshot damaged: the first set and
	// its log remain.
	g.damaged = copyNode(t, buildTwoSetDir(t))
	damageEngineSnapshot(t, g.damaged, 3)
	// One set whose engine snapshot is damaged, the log before it
	// detached: nothing to fall back to.
	g.damagedNoFallback = copyNode(t, g.full)
	mustCLI(t, "archive", "detach", "--dir", filepath.Join(g.damagedNoFallback, "archive"), "--id", "0", "--position", "131072")
	damageEngineSnapshot(t, g.damagedNoFallback, 1)
	// recording.log lost: the archive holds the log, nothing names it.
	g.lostLog = copyNode(t, g.full)
	removeFile(t, g.lostLog, filepath.Join("cluster", "recording.log"))
	return g
}

// matchlog node refuses, before it writes a byte, a directory whose
// verdict is not normal-restart or full-replay: exit 1, the verdict, its
// reasons and the command that applies; every file as it was.
func TestNodeStartGateRefuses(t *testing.T) {
	g := buildGateDirs(t)
	for _, c := range []struct {
		name, dir, verdict string
		want               []string
	}{
		{"latest set does not load", g.damaged, "invalidate-latest-snapshot", []string{
			"the latest set (log position 297568) does not load; the set at 45120 and its log",
			"snapshot-loads: recording 3 does not read back whole",
			"run `matchlog cluster invalidate-latest-snapshot --dir " + g.damaged + "`",
			"falls back to the snapshot set at log position 45120"}},
		{"no snapshot, log after 0", g.rebased, "rebuild-unless-rebased", []string{
			"no snapshot, and the local log starts at A = 131072, not 0",
			"a deliberately rebased image that has been tested", "start it with --force",
			"`matchlog backup drill --backup BDIR --work-dir " + g.rebased + "`"}},
		{"latest set does not load, nothing to fall back to", g.damagedNoFallback, "rebuild", []string{
			"does not load and no earlier set with its log can replace it",
			"replay from 0 needs the log before its start A = 131072",
			"`matchlog backup drill --backup BDIR --work-dir " + g.damagedNoFallback + "`"}},
		{"recording.log lost", g.lostLog, "rebuild-from-image", []string{
			"recording.log holds no TERM entry, yet the archive holds recorded log (recording 0 [0, ",
			"its recording.log was lost", "`matchlog backup drill --backup BDIR --work-dir " + g.lostLog + "`"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := digests(t, c.dir)
			// The node the verb would start must refuse (had it started, the
			// verb would serve until a signal).
			cfg, err := parseNodeFlags([]string{"--dir", c.dir, "--listen", "127.0.0.1:0"}, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if srv, err := server.New(cfg.Options); err == nil {
				srv.Close()
				t.Fatalf("the node started on a directory whose verdict is %s", c.verdict)
			}
			sameDigests(t, "a refused start", before, digests(t, c.dir))
			code, out, errb := runCLI(t, "node", "--dir", c.dir, "--listen", "127.0.0.1:0")
			if code != 1 || out != "" {
				t.Fatalf("node: exit %d, stdout %q, want 1 and nothing:\n%s", code, out, errb)
			}
			want := append([]string{"start refused by the restart-vs-rebuild gate: the verdict of " + c.dir + " is " + c.verdict,
				"`matchlog retention verdict --member 0=" + c.dir + "`", "--force starts anyway"}, c.want...)
			for _, w := range want {
				if !strings.Contains(errb, w) {
					t.Errorf("stderr does not say %q:\n%s", w, errb)
				}
			}
			// One refusal: the gate's, logged once and printed once.
			if n := strings.Count(errb, "start refused"); n != 2 {
				t.Errorf("the refusal appears %d times (want the log record and the error line):\n%s", n, errb)
			}
			sameDigests(t, "a refused start", before, digests(t, c.dir))
		})
	}
}

// matchlog node starts a normal restart, a full replay and a first start
// (a missing directory, an empty one) and logs the verdict; --force starts
// a refused directory and logs a WARNING naming the verdict it overrode.
func TestNodeStartGateStarts(t *testing.T) {
	g := buildGateDirs(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		extra     []string
		want      []string
	}{
		{"normal restart", g.full, nil, []string{"msg=\"start gate\" verdict=normal-restart"}},
		{"full replay", g.noSnap, nil, []string{"msg=\"start gate\" verdict=full-replay"}},
		{"first start, no directory", filepath.Join(t.TempDir(), "new"), nil, []string{"msg=\"start gate\" verdict=first-start"}},
		{"first start, empty directory", empty, nil, []string{"msg=\"start gate\" verdict=first-start"}},
		{"--force over rebuild-unless-rebased", g.rebased, []string{"--force"},
			[]string{"level=WARN msg=\"start gate overridden by --force", "verdict=rebuild-unless-rebased"}},
		{"--force over rebuild-from-image", g.lostLog, []string{"--force"},
			[]string{"level=WARN msg=\"start gate overridden by --force", "verdict=rebuild-from-image"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := startNodeVerb(t, c.dir, c.extra...)
			for _, w := range c.want {
				if !strings.Contains(log, w) {
					t.Errorf("log does not say %q:\n%s", w, log)
				}
			}
			if c.extra == nil && strings.Contains(log, "WARN") {
				t.Errorf("a start without --force warned:\n%s", log)
			}
		})
	}
	// After a first start the directory restarts normally.
	if log := startNodeVerb(t, empty); !strings.Contains(log, "verdict=normal-restart") && !strings.Contains(log, "verdict=full-replay") {
		t.Errorf("restart after a first start:\n%s", log)
	}
}

// The gate's fix for a node with no way back but an image works as
// written: on a directory whose recording.log was lost (rebuild-from-image)
// the refusal names `matchlog backup create` and `matchlog backup drill
// --backup BDIR --work-dir DIR`; run as printed (BDIR and MEMBER_DIR filled
// in, DIR moved aside first, as it says) they leave in DIR a node that
// starts, a normal restart.
func TestNodeStartGateFixRestores(t *testing.T) {
	healthy := filepath.Join(t.TempDir(), "healthy")
	tn := openTestNode(t, healthy, enginetest.NewGen(43, enginetest.GenConfig{}))
	snapshotNode(t, tn, 2600)
	tn.submit(100)
	tn.close()
	dir := copyNode(t, healthy)
	removeFile(t, dir, filepath.Join("cluster", "recording.log"))
	code, _, errb := runCLI(t, "node", "--dir", dir, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errb, "the verdict of "+dir+" is rebuild-from-image") {
		t.Fatalf("node: exit %d, want 1 and rebuild-from-image:\n%s", code, errb)
	}
	bk := filepath.Join(t.TempDir(), "bk")
	command := func(prefix string) []string {
		i := strings.Index(errb, "`"+prefix)
		if i < 0 {
			t.Fatalf("the refusal names no `%s...`:\n%s", prefix, errb)
		}
		cmd, _, _ := strings.Cut(errb[i+1:], "`")
		w := strings.Fields(cmd)[1:] // without "matchlog"
		for k := range w {
			w[k] = strings.NewReplacer("BDIR", bk, "MEMBER_DIR", healthy).Replace(w[k])
		}
		return w
	}
	create, drill := command("matchlog backup create "), command("matchlog backup drill ")
	if want := []string{"backup", "drill", "--backup", bk, "--work-dir", dir}; !slices.Equal(drill, want) {
		t.Fatalf("the refusal's drill command is %q, want %q", drill, want)
	}
	mustCLI(t, create...)
	if err := os.Rename(dir, dir+".aside"); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, drill...)
	if log := startNodeVerb(t, dir); !strings.Contains(log, "msg=\"start gate\" verdict=normal-restart") {
		t.Fatalf("the restored node did not start as a normal restart:\n%s", log)
	}
}
