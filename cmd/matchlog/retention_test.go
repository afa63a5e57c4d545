package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// copyThreeMember copies member-N of the Aeron three-members fixture
// (cluster/ and archive/) into a new directory and returns it.
func copyThreeMember(t *testing.T, n string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "member-"+n)
	copyTree(t, filepath.Join(fixtures.AeronThreeMembers(t), "member-"+n), dst)
	return dst
}

// archive detach and purge of a node's log recording refuse, by default,
// to move its start past C (the greatest segment boundary ≤ the latest
// complete snapshot set's S; with no set, past its start at all), naming
// S, C and the position asked for, and change nothing; a detach to C or
// below goes on; --unsafe-past-snapshot overrides and says so. On real
// Aeron directories (members 0 and 2 of three-members) and a native node
// directory whose latest set was invalidated.
func TestPurgePastSnapshotRefused(t *testing.T) {
	native := copyNode(t, buildTwoSetDir(t))
	mustCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", native) // S = 45120: C = 0
	for _, c := range []struct {
		dir, verb, pos, want string
	}{
		{copyThreeMember(t, "0"), "purge", "1179648", "past C = 1048576, the greatest segment boundary ≤ S = 1101600"},
		{copyThreeMember(t, "0"), "detach", "1179648", "--position 1179648 is past C = 1048576"},
		{copyThreeMember(t, "2"), "purge", "393216", "--position 393216 is past C = 262144, the greatest segment boundary ≤ S = 314464"},
		{native, "purge", "131072", "--position 131072 is past C = 0, the greatest segment boundary ≤ S = 45120"},
		{copyThreeMember(t, "0"), "detach", "1179648", "--unsafe-past-snapshot overrides"},
	} {
		adir := filepath.Join(c.dir, "archive")
		before := treeHashes(t, c.dir)
		failCLI(t, c.want, "archive", c.verb, "--dir", adir, "--id", "0", "--position", c.pos)
		sameTree(t, c.verb+" "+c.pos, before, treeHashes(t, c.dir))
	}
	// A snapshot recording is never detached.
	m0 := copyThreeMember(t, "0")
	failCLI(t, "recording 5 is the snapshot of service 0 at log position 1101600", "archive", "detach", "--dir", filepath.Join(m0, "archive"), "--id", "5", "--position", "131072")
	// To C it goes on.
	out := mustCLI(t, "archive", "detach", "--dir", filepath.Join(m0, "archive"), "--id", "0", "--position", "1048576")
	if !strings.Contains(out, "start 655360 -> 1048576") || strings.Contains(out, "WARNING") {
		t.Fatalf("detach to C: %s", out)
	}
	// After it the member still restarts normally and its recovery plan
	// can be carried out.
	if v := verdictCLI(t, m0, m0); v.Verdict != "normal-restart" || v.A != 1048576 || v.S != 1101600 {
		t.Fatalf("after the detach to C: %+v", v)
	}
	mustCLI(t, "cluster", "recovery-plan", "--dir", m0)
	// The override goes on and says what it overrode.
	out = mustCLI(t, "archive", "purge", "--dir", filepath.Join(native, "archive"), "--id", "0", "--position", "131072", "--unsafe-past-snapshot", "--json")
	var r removalJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.NewStart != 131072 || !strings.Contains(r.Unsafe, "past C = 0") {
		t.Fatalf("override: %+v", r)
	}
}

// With no snapshot set at all, any detach of the log is refused: a restart
// replays it whole.
func TestPurgeWithoutSnapshotRefused(t *testing.T) {
	d := filepath.Join(fixtures.CopyAeronSingleNode(t), "archive")
	// single-node-1: S = 115744, C = 0.
	failCLI(t, "past C = 0, the greatest segment boundary ≤ S = 115744", "archive", "purge", "--dir", d, "--id", "0", "--position", "131072")
	mustCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", filepath.Dir(d))
	failCLI(t, "holds no complete, loadable snapshot set (S = -1, C = -1)", "archive", "purge", "--dir", d, "--id", "0", "--position", "131072")
}

// TestGoldenRetention keeps retention's tables and JSON stable, on the
// three-member Aeron fixture (read in place: the commands only read; the
// tree is compared before and after) and on the deterministic native node.
func TestGoldenRetention(t *testing.T) {
	d := fixtures.AeronThreeMembers(t)
	before := treeHashes(t, d)
	m := func(i string) string {
		return i + "=" + filepath.Join(d, "member-"+i, "cluster") + "," + filepath.Join(d, "member-"+i, "archive")
	}
	all := []string{"--member", m("0"), "--member", m("1"), "--member", m("2"), "--live", filepath.Join(d, "member-0", "archive")}
	one := func(i string) []string {
		return []string{"--member", m(i), "--live", filepath.Join(d, "member-0", "archive")}
	}
	var b strings.Builder
	for _, c := range []struct {
		name string
		args []string
	}{
		{"positions", append([]string{"positions"}, all...)},
		{"positions-json", append([]string{"positions", "--json"}, all...)},
		{"verdict", append([]string{"verdict"}, all...)},
		{"verdict-json", append([]string{"verdict", "--json"}, all...)},
		{"verdict-json-one", append([]string{"verdict", "--json"}, one("2")...)},
		{"plan", append([]string{"plan"}, all...)},
		{"plan-json", append([]string{"plan", "--json"}, all...)},
		{"plan-json-one", append([]string{"plan", "--json"}, one("0")...)},
		{"plan-cutoff-refused", append([]string{"plan", "--cutoff", "1000000"}, one("0")...)},
		{"plan-model-b-refused", append([]string{"plan", "--model", "B", "--json"}, one("0")...)},
	} {
		b.Reset()
		b.WriteString(goldenRun(t, d, append([]string{"retention"}, c.args...)...))
		checkGolden(t, "retention-aeron-"+c.name, b.String())
	}
	sameTree(t, "retention on the fixture", before, treeHashes(t, d))

	node := goldenNodeDir(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"positions-json", []string{"positions", "--json"}},
		{"plan-json", []string{"plan", "--json"}},
	} {
		args := append([]string{"retention"}, c.args...)
		args = append(args, "--member", "0="+node, "--live", filepath.Join(node, "archive"))
		checkGolden(t, "retention-node-"+c.name, goldenRun(t, node, args...))
	}
}

// verdictCLI runs `retention verdict --json` for member 0 in dir
// (live source: live's archive, "" none) and returns its verdict.
func verdictCLI(t *testing.T, dir, live string) verdictJSON {
	t.Helper()
	args := []string{"retention", "verdict", "--json", "--member", "0=" + dir}
	if live != "" {
		args = append(args, "--live", filepath.Join(live, "archive"))
	}
	var v verdictJSON
	if err := json.Unmarshal([]byte(mustCLI(t, args...)), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// snapshotNode submits k commands to tn and takes a snapshot.
func snapshotNode(t *testing.T, tn *testNode, k int) {
	t.Helper()
	tn.submit(k)
	tn.node.RequestSnapshot()
	tn.drain()
	if err := tn.node.AwaitSnapshot(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// damageEngineSnapshot flips one payload byte of a large frame of the
// first segment of recording id in dir: the frames stay whole, the strict
// loader's checksum no longer matches.
func damageEngineSnapshot(t *testing.T, dir string, id int64) {
	t.Helper()
	p := filepath.Join(dir, "archive", archive.SegmentFileName(id, 0))
	b := mustRead(t, p)
	off := int64(-1)
	for o := int64(0); o+32 <= int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[o:]))
		if n <= 0 {
			break
		}
		if n > 1000 && off < 0 {
			off = o + 32 + n/2
		}
		o += (n + 31) &^ 31
	}
	if off < 0 {
		t.Fatalf("%s: no frame to damage", p)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The verdict rows and refusal rules on native node directories are the
// scenario files of testdata/retention (TestRetentionScenarioFiles).

// planCLI runs `retention plan --json` with args and returns its exit
// status and document (the members array: one member's is lifted into it).
func planCLI(t *testing.T, args ...string) (int, []planMemberJSON) {
	t.Helper()
	code, out, errb := runCLI(t, append([]string{"retention", "plan", "--json"}, args...)...)
	var list planListJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil || (code != 0 && code != 1) {
		t.Fatalf("plan %v: exit %d, %v\n%s\n%s", args, code, err, out, errb)
	}
	if len(list.Members) == 0 {
		var one planOneJSON
		if err := json.Unmarshal([]byte(out), &one); err != nil {
			t.Fatal(err)
		}
		list.Members = []planMemberJSON{one.planMemberJSON}
	}
	return code, list.Members
}

func rules(m planMemberJSON) []string {
	var out []string
	for _, r := range m.Refusals {
		out = append(out, r.Rule)
	}
	return out
}

// Bad retention command lines are usage errors (exit 2) that name the
// problem; no member directory is read.
func TestRetentionUsage(t *testing.T) {
	d := t.TempDir()
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--member is required", []string{"retention", "verdict"}},
		{"want ID=CLUSTER_DIR,ARCHIVE_DIR", []string{"retention", "verdict", "--member", "x=" + d}},
		{"must be the cluster/ and archive/ of one member directory", []string{"retention", "positions", "--member", "0=" + d + "/a," + d + "/b"}},
		{"is not a directory (an empty disk is an existing, empty directory)", []string{"retention", "verdict", "--member", "0=" + d + "/nope"}},
		{"member 0 given twice", []string{"retention", "plan", "--member", "0=" + d, "--member", "0=" + d}},
		{"--model is A or B", []string{"retention", "plan", "--member", "0=" + d, "--model", "C"}},
		{"--cutoff must not be negative", []string{"retention", "plan", "--member", "0=" + d, "--cutoff", "-5"}},
		{"flag provided but not defined: -cutoff", []string{"retention", "verdict", "--member", "0=" + d, "--cutoff", "5"}},
	} {
		code, _, errb := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errb, c.want)
		}
	}
}

// TestArchiveVerbsLeaveAeronMarkFile: a purge on real Aeron's archive
// changes the catalog and segments only; Aeron's archive-mark.dat (its
// channels, archive id and pid) stays byte for byte as Aeron wrote it.
func TestArchiveVerbsLeaveAeronMarkFile(t *testing.T) {
	m0 := copyThreeMember(t, "0")
	mark := filepath.Join(m0, "archive", "archive-mark.dat")
	before, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "archive", "purge", "--dir", filepath.Join(m0, "archive"), "--id", "0", "--position", "1048576", "--delay", "0")
	after, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		n := 0
		for i := range min(len(before), len(after)) {
			if before[i] != after[i] {
				n++
			}
		}
		t.Fatalf("archive purge changed Aeron's %s: %d of %d bytes differ (length %d -> %d)", mark, n, len(before), len(before), len(after))
	}
	if v := verdictCLI(t, m0, m0); v.Verdict != "normal-restart" || v.A != 1048576 {
		t.Fatalf("after the purge to C: %+v", v)
	}
}

// retention purge: on a copy of three-members member 0 (member 0 its own
// live source) it executes the plan and says what it did; the verdict is
// still a normal restart afterwards and a second purge has nothing to do.
// A refused purge (a cutoff past S) exits 1, names the rule and changes
// nothing. On a native node directory the restart check runs.
func TestRetentionPurgeCLI(t *testing.T) {
	m0 := copyThreeMember(t, "0")
	live := filepath.Join(m0, "archive")
	before := treeHashes(t, m0)
	code, out, errb := runCLI(t, "retention", "purge", "--json", "--member", "0="+m0, "--live", live, "--cutoff", "1200000")
	if code != 1 || !strings.Contains(out, `"rule": "cutoff-after-snapshot"`) || !strings.Contains(errb, "refused") {
		t.Fatalf("refused purge: exit %d, stderr %q\n%s", code, errb, out)
	}
	sameTree(t, "a refused purge", before, treeHashes(t, m0))

	var one purgeOneJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "retention", "purge", "--json", "--delay", "0", "--member", "0="+m0, "--live", live)), &one); err != nil {
		t.Fatal(err)
	}
	p := one.Purge
	if p.Status != "purged" || p.Kind != "aeron" || p.DetachedFrom != 655360 || p.DetachedTo != 786432 || p.Validated != "normal-restart" ||
		len(p.Renamed) != 3 || len(p.Unlinked) != 3 || one.DelayMs != 0 || !one.Approved {
		t.Fatalf("purge: %+v", one)
	}
	if v := verdictCLI(t, m0, m0); v.Verdict != "normal-restart" || v.A != 786432 {
		t.Fatalf("after the purge: %+v", v)
	}
	if out := mustCLI(t, "retention", "purge", "--member", "0="+m0, "--live", live); !strings.Contains(out, "member 0 (aeron): nothing-to-do") {
		t.Fatalf("second purge:\n%s", out)
	}

	native := copyNode(t, buildTwoSetDir(t))
	out = mustCLI(t, "retention", "purge", "--keep", "1", "--member", "0="+native)
	if !strings.Contains(out, "member 0 (matchlog-node): purged") || !strings.Contains(out, "hash-before: a restart") ||
		!strings.Contains(out, "pending") && !strings.Contains(out, "left") {
		t.Fatalf("native purge:\n%s", out)
	}
	deleted, err := archive.DeletedSegments(vfs.Default, filepath.Join(native, "archive"))
	if err != nil || len(deleted) == 0 {
		t.Fatalf("--delay 60s leaves the renamed files for the next open: %v %v", deleted, err)
	}
}
