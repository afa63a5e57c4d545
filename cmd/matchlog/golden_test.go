package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/fixtures"
)

// The golden tests run every verb that prints a report, text and --json, on
// a copy of the Aeron fixture and on a node directory written by a
// deterministic run, and compare the exit status, stdout and stderr with
// testdata/golden/<name>.txt. After a deliberate change of output:
//
//	go test ./cmd/matchlog -run Golden -rewrite
//
// What cannot be fixed is normalised before the comparison (normalise):
// the temporary directory's path becomes $DIR, process ids become 0, and
// difftest's wall-clock timings are masked. The node run is deterministic:
// a fixed seed, a cluster clock that advances 1 µs a reading from a fixed
// start (cluster.Options.Clock: log, catalog and recording.log
// timestamps), a fixed epoch clock (Options.EpochClock: mark files), one
// goroutine driving the duty cycle.
var rewrite = flag.Bool("rewrite", false, "rewrite the golden files of the Golden tests")

const goldenDir = "testdata/golden"

// goldenRun runs the command line and renders what it did as a golden
// file's text.
func goldenRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, errb := runCLI(t, args...)
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if dir != "" {
			shown[i] = strings.ReplaceAll(a, dir, "$DIR")
		}
	}
	s := fmt.Sprintf("$ matchlog %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(shown, " "), code, out, errb)
	return normalise(s, dir)
}

var (
	pidJSON = regexp.MustCompile(`"pid": \d+`)
	pidText = regexp.MustCompile(`pid[= ]\d+`)
	elapsed = regexp.MustCompile(`"elapsed_ms": \d+|\(\d+\.\ds, \d+ commands/s\)`)
)

// goldenSrc is the directory the golden node ran in (its mark file names
// it), masked as $SRC.
var goldenSrc string

// normalise masks what differs from run to run: the temporary directory
// (dir), process ids and wall-clock timings.
func normalise(s, dir string) string {
	if dir != "" {
		s = strings.ReplaceAll(s, dir, "$DIR")
	}
	if goldenSrc != "" {
		s = strings.ReplaceAll(s, goldenSrc, "$SRC")
	}
	s = pidJSON.ReplaceAllString(s, `"pid": 0`)
	s = pidText.ReplaceAllStringFunc(s, func(m string) string { return m[:4] + "0" })
	return elapsed.ReplaceAllString(s, "(elapsed)")
}

// checkGolden compares got with the golden file name, or writes it with
// -rewrite.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".txt")
	if *rewrite {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/matchlog -run Golden -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n%s\n(got in full:\n%s)", path, firstDiff(got, string(want)), got)
	}
}

// goldenCase is one command line of a golden test; fresh runs it on a new
// copy of the directory (a command that writes).
type goldenCase struct {
	name  string
	args  []string
	fresh bool
}

func readOnlyCases() []goldenCase {
	var cs []goldenCase
	for _, c := range []struct {
		name string
		args []string
	}{
		{"cluster-recording-log", []string{"cluster", "recording-log"}},
		{"cluster-recovery-plan", []string{"cluster", "recovery-plan"}},
		{"cluster-describe", []string{"cluster", "describe"}},
		{"archive-describe", []string{"archive", "describe"}},
		{"archive-verify", []string{"archive", "verify", "--all"}},
		{"archive-verify-id", []string{"archive", "verify", "--id", "1"}},
	} {
		cs = append(cs, goldenCase{name: c.name, args: c.args}, goldenCase{name: c.name + "-json", args: append(c.args, "--json")})
	}
	return cs
}

func runGoldenCases(t *testing.T, prefix string, cases []goldenCase, copyDir func() string) {
	shared := copyDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := shared
			if c.fresh {
				d = copyDir()
			}
			args := append([]string{}, c.args[:2]...)
			args = append(args, "--dir", d)
			args = append(args, c.args[2:]...)
			checkGolden(t, prefix+"-"+c.name, goldenRun(t, d, args...))
		})
	}
}

// TestGoldenAeron runs the verbs on copies of the directory real Aeron
// wrote.
func TestGoldenAeron(t *testing.T) {
	cases := readOnlyCases()
	cases = append(cases,
		goldenCase{name: "archive-replay", args: []string{"archive", "replay", "--id", "1"}},
		goldenCase{name: "archive-replay-json", args: []string{"archive", "replay", "--id", "0", "--json"}},
		goldenCase{name: "cluster-invalidate", args: []string{"cluster", "invalidate-latest-snapshot"}, fresh: true},
		goldenCase{name: "cluster-invalidate-json", args: []string{"cluster", "invalidate-latest-snapshot", "--json"}, fresh: true},
		goldenCase{name: "cluster-snapshot-refused", args: []string{"cluster", "snapshot"}, fresh: true},
		goldenCase{name: "archive-detach", args: []string{"archive", "detach", "--id", "0", "--position", "131072"}, fresh: true},
		goldenCase{name: "archive-detach-json", args: []string{"archive", "detach", "--id", "0", "--position", "131072", "--json", "--unsafe-past-snapshot"}, fresh: true},
		goldenCase{name: "archive-purge", args: []string{"archive", "purge", "--id", "0", "--position", "131072", "--unsafe-past-snapshot"}, fresh: true},
		goldenCase{name: "archive-purge-json", args: []string{"archive", "purge", "--id", "0", "--position", "131072", "--delay", "0", "--json", "--unsafe-past-snapshot"}, fresh: true},
		goldenCase{name: "archive-verify-missing-id", args: []string{"archive", "verify", "--id", "7"}},
	)
	runGoldenCases(t, "aeron", cases, func() string { return fixtures.CopyAeronSingleNode(t) })
}

// TestGoldenNode runs the verbs on a node directory written by a
// deterministic run (goldenNodeDir), then takes a snapshot with `cluster
// snapshot` and describes the directory again.
func TestGoldenNode(t *testing.T) {
	src := goldenNodeDir(t)
	goldenSrc = src
	defer func() { goldenSrc = "" }()
	copyDir := func() string {
		d := filepath.Join(t.TempDir(), "node")
		copyTree(t, src, d)
		return d
	}
	cases := readOnlyCases()
	cases = append(cases,
		goldenCase{name: "archive-replay", args: []string{"archive", "replay", "--id", "2"}},
		goldenCase{name: "archive-replay-json", args: []string{"archive", "replay", "--id", "0", "--json"}},
		goldenCase{name: "cluster-invalidate", args: []string{"cluster", "invalidate-latest-snapshot"}, fresh: true},
		goldenCase{name: "cluster-invalidate-json", args: []string{"cluster", "invalidate-latest-snapshot", "--json"}, fresh: true},
	)
	runGoldenCases(t, "node", cases, copyDir)

	// cluster snapshot, with fixed clocks for the node it starts.
	oldClock, oldEpoch := snapshotClock, snapshotEpochClock
	snapshotClock, snapshotEpochClock = stepClock(goldenClockStart+int64(time.Hour)), func() int64 { return goldenEpochMs + 3_600_000 }
	defer func() { snapshotClock, snapshotEpochClock = oldClock, oldEpoch }()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"cluster-snapshot", []string{"--snapshot-mode", "stw"}},
		{"cluster-snapshot-json", []string{"--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := copyDir()
			snapshotClock = stepClock(goldenClockStart + int64(time.Hour))
			got := goldenRun(t, d, append([]string{"cluster", "snapshot", "--dir", d}, c.args...)...)
			got += goldenRun(t, d, "cluster", "recording-log", "--dir", d)
			checkGolden(t, "node-"+c.name, got)
		})
	}
}

// TestGoldenSubdir: --dir may name the node directory's cluster/ or
// archive/ directory itself, with the same output as the node directory
// (paths aside); a directory that is neither is one clear error.
func TestGoldenSubdir(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	for _, c := range [][]string{
		{"cluster", "recording-log"}, {"cluster", "recovery-plan", "--json"}, {"cluster", "describe"},
		{"archive", "describe", "--json"}, {"archive", "verify", "--all"},
	} {
		sub := filepath.Join(d, c[0])
		code, want, errb := runCLI(t, append(append(c[:2:2], "--dir", d), c[2:]...)...)
		code2, got, errb2 := runCLI(t, append(append(c[:2:2], "--dir", sub), c[2:]...)...)
		if code != 0 || code2 != code || errb2 != errb || got != want {
			t.Errorf("%v: --dir %s: exit %d, stderr %q\n%s\n--dir %s: exit %d, stderr %q\n%s", c, d, code, errb, want, sub, code2, errb2, got)
		}
	}
	empty := t.TempDir()
	checkGolden(t, "dir-neither", goldenRun(t, empty, "cluster", "recording-log", "--dir", empty)+
		goldenRun(t, empty, "archive", "describe", "--dir", empty))
	// A cluster directory not named cluster/: the archive cannot be found
	// beside it.
	odd := filepath.Join(t.TempDir(), "cm")
	copyTree(t, filepath.Join(d, "cluster"), odd)
	if code, _, errb := runCLI(t, "cluster", "recovery-plan", "--dir", odd); code != 1 || !strings.Contains(errb, "is not named cluster/") {
		t.Errorf("odd cluster dir: exit %d, %q", code, errb)
	}
}

// TestGoldenHelp keeps every verb's help, and with it the documentation
// of each JSON output, stable.
func TestGoldenHelp(t *testing.T) {
	var b strings.Builder
	add := func(args ...string) { b.WriteString(goldenRun(t, "", append([]string{"help"}, args...)...) + "\n") }
	add()
	for _, v := range verbs {
		if v.name != "help" {
			add(v.name)
		}
	}
	for _, name := range sortedKeys(keys(clusterCommands)) {
		add("cluster", name)
	}
	for _, name := range sortedKeys(keys(archiveCommands)) {
		add("archive", name)
	}
	for _, name := range sortedKeys(keys(retentionCommands)) {
		add("retention", name)
	}
	for _, name := range sortedKeys(keys(backupCommands)) {
		add("backup", name)
	}
	for _, name := range []string{"engine", "snapshot", "archive", "cluster", "aeron"} {
		add("bench", name)
	}
	add("engine", "run")
	add("client", "depth")
	checkGolden(t, "help", b.String())
}

// TestGoldenDifftest: difftest's summary, text and JSON, timings masked.
func TestGoldenDifftest(t *testing.T) {
	checkGolden(t, "difftest", goldenRun(t, "", "difftest", "--seed", "5", "--commands", "5000", "--every", "1500")+
		goldenRun(t, "", "difftest", "--seed", "5", "--commands", "5000", "--every", "1500", "--json")+
		goldenRun(t, "", "difftest", "--seed", "5", "--commands", "3000", "--snapshots=false", "--json"))
}

// TestUsageErrors: an unknown command of each verb with commands is one
// error line and the usage, exit 2; so are negative ids.
func TestUsageErrors(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	var b strings.Builder
	for _, args := range [][]string{
		{"cluster", "frob"}, {"archive", "frob"}, {"bench", "frob"}, {"engine", "frob"}, {"frob"}, {"help", "frob"},
		{"archive", "describe", "--dir", d, "--id", "-1"}, {"archive", "verify", "--dir", d, "--id", "-1"},
		{"archive", "replay", "--dir", d, "--id", "-3"}, {"archive", "replay", "--dir", d, "--id", "0", "--from", "-1"},
	} {
		code, out, errb := runCLI(t, args...)
		first, _, _ := strings.Cut(errb, "\n")
		if code != 2 || out != "" || !strings.Contains(strings.ToLower(errb), "usage: matchlog") || strings.Contains(first, "usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want exit 2, one error line, then the usage", args, code, out, errb)
		}
		fmt.Fprintf(&b, "%s: %s\n", strings.ReplaceAll(strings.Join(args, " "), d, "$DIR"), strings.ReplaceAll(first, d, "$DIR"))
	}
	checkGolden(t, "usage-errors", b.String())
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const (
	goldenClockStart = int64(1_800_000_000_000_000_000) // ns, 2027-01-15
	goldenEpochMs    = int64(1_800_000_000_000)
)

// stepClock is a clock in ns that advances 1 µs a reading.
func stepClock(start int64) func() int64 {
	t := start
	return func() int64 { t += 1000; return t }
}

// goldenNodeDir writes a node directory deterministically: 300 seeded
// commands, a pauseless snapshot, 200 more, a clean stop.
func goldenNodeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: svc, TermLength: 64 * 1024, SegmentLength: 128 * 1024,
		FileSyncLevel: 1, FileIoMaxLength: 1 << 20, MaxBatch: 64,
		Clock: stepClock(goldenClockStart), EpochClock: func() int64 { return goldenEpochMs }})
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{t: t, dir: dir, node: n, svc: svc, gen: enginetest.NewGen(11, enginetest.GenConfig{})}
	if tn.sess, err = n.Connect("aeron:ipc", 102); err != nil {
		t.Fatal(err)
	}
	tn.submit(300)
	n.RequestSnapshot()
	tn.drain()
	if err := n.AwaitSnapshot(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	tn.drain()
	tn.submit(200)
	tn.close()
	return dir
}

// copyTree copies the regular files of src (recursively) into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFlagTypes: a flag has one name and one type in every verb; verbs
// that run one configuration refuse a list; the old spellings are gone.
// Every case fails while parsing, before any work.
func TestFlagTypes(t *testing.T) {
	d := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "--dir", d, "--sync", "0,2"}, "--sync 0,2: this verb runs one configuration"},
		{[]string{"demo", "--sync", "0,2"}, "--sync 0,2: this verb runs one configuration"},
		{[]string{"demo", "--orders", "1K,2K"}, "--orders 1000,2000: this verb runs one configuration"},
		{[]string{"demo", "--rate", "2.5"}, `invalid value "2.5" for flag -rate`},
		{[]string{"bench", "engine", "--orders", "1M,5M"}, "--orders 1000000,5000000: this verb runs one configuration"},
		{[]string{"bench", "cluster", "--sync", "0,3"}, "--sync 3: want 0, 1 or 2"},
		{[]string{"bench", "cluster", "--snapshot-mode", "both"}, `"both": want pauseless or stw`},
		{[]string{"bench", "cluster", "--rate", "1.5"}, `invalid value "1.5" for flag -rate`},
		{[]string{"bench", "cluster", "--mode", "both"}, "flag provided but not defined: -mode"},
		{[]string{"bench", "archive", "--dir", d}, "flag provided but not defined: -dir"},
		{[]string{"bench", "aeron", "--orders", "1K,2K"}, "--orders 1000,2000: this verb runs one configuration"},
		{[]string{"bench", "aeron", "--nodes", "2"}, "--nodes 2: want 1 or 3"},
		{[]string{"bench", "aeron", "--dir", d}, "flag provided but not defined: -dir"},
		{[]string{"cluster", "snapshot", "--dir", d, "--mode", "stw"}, "flag provided but not defined: -mode"},
		{[]string{"cluster", "snapshot", "--dir", d, "--snapshot-mode", "stw,pauseless"}, "this verb takes one snapshot mode"},
		{[]string{"difftest", "--seed", "-1"}, `invalid value "-1" for flag -seed`},
	} {
		code, out, errb := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errb, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errb, c.want)
		}
	}
}

var (
	number  = regexp.MustCompile(`-?\d+(\.\d+)?(e[-+]\d+)?`)
	spaces  = regexp.MustCompile(` +`)
	metText = regexp.MustCompile(`\b(not )?met\b`)
	// loadWarning is the line a report adds when the machine was loaded
	// beyond its CPUs while it measured: a fact of the run, not of the
	// output's shape.
	loadWarning = regexp.MustCompile(`(?m)^WARNING: load average above .*\n`)
)

// benchShape is what is stable of a bench's output, which is
// measurements: the JSON document with every number 0 and the build and
// date strings masked, and whether a target was met and the machine loaded
// (fields and nesting stay), or the text with every number N, "met" and
// "not met" as "met?" and runs of spaces collapsed (the rows and labels
// stay).
func benchShape(t *testing.T, out string, isJSON bool) string {
	t.Helper()
	if !isJSON {
		out = metText.ReplaceAllString(number.ReplaceAllString(loadWarning.ReplaceAllString(out, ""), "N"), "met?")
		return spaces.ReplaceAllString(out, " ")
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		switch x := v.(type) {
		case float64:
			return 0
		case bool:
			if key == "met" || key == "loaded" {
				return "(masked)"
			}
			return x
		case string:
			switch key {
			case "date", "go_version", "goos", "goarch":
				return "(masked)"
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i], key)
			}
			return x
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e, k)
			}
			return x
		}
		return v
	}
	b, err := json.MarshalIndent(walk(v, ""), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestGoldenBench: the benches' outputs are measurements, so their golden
// files hold the shape only (benchShape): the fields of the JSON and the
// rows of the table. bench archive and bench snapshot run here at a tiny
// size (about a second); bench engine (its command mix has a fixed size,
// several seconds) and bench cluster (a second of baseline per
// configuration) are left to their own tests in bench/ and
// cluster/enginesvc.
func TestGoldenBench(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 8 MiB with syncs")
	}
	var b strings.Builder
	wd := t.TempDir()
	for _, args := range [][]string{
		{"bench", "archive", "--bytes", "1048576", "--runs", "2", "--work-dir", wd},
		{"bench", "snapshot", "--orders", "2000", "--takes", "1", "--workers", "0"},
	} {
		for _, asJSON := range []bool{false, true} {
			a := args
			if asJSON {
				a = append(a[:len(a):len(a)], "--json")
			}
			code, out, errb := runCLI(t, a...)
			if code != 0 {
				t.Fatalf("%q: exit %d, stderr %s", a, code, errb)
			}
			shown := strings.ReplaceAll(strings.Join(a, " "), wd, "$DIR")
			fmt.Fprintf(&b, "$ matchlog %s\nexit %d\n--- stdout (shape)\n%s", shown, code, benchShape(t, out, asJSON))
		}
	}
	checkGolden(t, "bench", b.String())
}
