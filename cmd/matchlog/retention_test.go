package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/fixtures"
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
