package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/bench/aeronbench"
	"github.com/matchlog/matchlog/internal/aerontest"
)

// TestBenchAeronNoClasspath: without AERON_CLASSPATH, bench aeron fails
// at once (exit 1) with a message naming the variable, prints no report
// and leaves its work directory as it was.
func TestBenchAeronNoClasspath(t *testing.T) {
	t.Setenv(aeronbench.ClasspathEnv, "")
	wd := t.TempDir()
	code, out, errb := runCLI(t, "bench", "aeron", "--orders", "2000", "--nodes", "3", "--work-dir", wd)
	if code != 1 || out != "" || !strings.Contains(errb, "AERON_CLASSPATH is unset") || strings.Contains(errb, "panic") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 and a message naming AERON_CLASSPATH", code, out, errb)
	}
	if ents, err := os.ReadDir(wd); err != nil || len(ents) != 0 {
		t.Fatalf("work dir after the refusal: %v %v", ents, err)
	}
}

// children lists the processes whose parent is this test process, and
// kills them (the test stops what it started, also when the bench did
// not).
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == me {
			out = append(out, string(b[:strings.IndexByte(string(b), ')')+1]))
			if pid, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
		}
	}
	return out
}

// TestBenchAeron runs `matchlog bench aeron` tiny on real Aeron (skipped
// without AERON_CLASSPATH), three members with the native node beside
// them, then one member: every figure of the report is measured (a take,
// a pause, a restart, with three members a rejoin and a failover), every
// command was answered, and no process the bench started is left and its
// work directory is empty.
func TestBenchAeron(t *testing.T) {
	aerontest.Require(t)
	aeronNodeCommand = func(args []string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(append([]string{"aeron-node"}, args...), "\x1f"))
		return cmd
	}
	for _, nodes := range []string{"3", "1"} {
		wd := t.TempDir()
		args := []string{"bench", "aeron", "--orders", "2000", "--nodes", nodes, "--json", "--work-dir", wd, "--timeout", "3m"}
		if nodes == "1" {
			args = append(args, "--native=false")
		}
		code, out, errb := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errb)
		}
		var r aeronbench.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		t.Logf("%v: %s", args, out)
		if r.Orders != 2000 || strconv.Itoa(r.Nodes) != nodes || r.BuildPerS <= 0 || r.TakeMs <= 0 || r.TakeMaxMs < r.TakeMs ||
			r.PauseMaxMs <= 0 || r.PauseProbes == 0 || r.SnapshotMs <= 0 || r.LeaderSnapshotMs <= 0 || r.LeaderSnapshotMs > r.SnapshotMs || r.StopS <= 0 || r.RestoreMs <= 0 ||
			r.RestartRestoredS <= 0 || r.RestartReplayedS < r.RestartRestoredS || r.RestartFirstAnswerS < r.RestartReplayedS ||
			r.Commands <= r.Orders || len(r.StateHash) != 16 {
			t.Errorf("%v: report %+v", args, r)
		}
		if nodes == "3" && (r.FollowerRejoinS <= 0 || r.FailoverLeaderS <= 0 || r.FailoverFirstAnswerS < r.FailoverSessionS ||
			r.Native == nil || r.Native.Orders != 2000 || r.Native.TakeMs <= 0) {
			t.Errorf("%v: three-member figures %+v, native %+v", args, r, r.Native)
		}
		if nodes == "1" && (r.Native != nil || r.FollowerRejoinS != 0) {
			t.Errorf("%v: native %+v, rejoin %v", args, r.Native, r.FollowerRejoinS)
		}
		if c := children(t); len(c) != 0 {
			t.Fatalf("%v: processes left: %v", args, c)
		}
		if ents, err := os.ReadDir(wd); err != nil || len(ents) != 0 {
			t.Fatalf("%v: work dir after the bench: %v %v", args, ents, err)
		}
	}
}
