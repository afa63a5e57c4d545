package main

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/backup"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
)

// Retention scenario files (testdata/retention/*.txt): one per row of the
// verdict table and one per refusal rule of the purge plan, each building
// real node directories with the native node (in this process) and checking
// what `matchlog retention verdict|plan` and the start gate of `matchlog
// node` decide on them. TestRetentionScenarioFiles runs every file; a file
// with no expectation, or with a step it does not know, fails.
//
// One step a line; '#' starts a comment. Directories are named by a word
// (A, src, stale ...) and live in the test's temporary directory. A number
// may be written {S:A}, {A:A}, {P:A} or {C:A} (A's position, from
// retention.Gather with no live source), optionally +N or -N after it.
//
//	node A orders N            submit N generated engine commands to node A
//	                           (opened on A, created on first use, if it is not
//	                           running; it keeps running)
//	snapshot A                 take a snapshot on node A (opened if need be) and
//	                           wait until it is complete
//	stop A                     stop node A cleanly
//	copy A B                   copy the stopped directory A to B (a stale member
//	                           when A goes on)
//	empty A                    make A an existing, empty directory
//	purge A to POS             `matchlog archive purge` of A's log recording to
//	                           POS (refused past C, as the command refuses)
//	detach A to POS unsafe     `matchlog archive detach --unsafe-past-snapshot`
//	damage A latest-snapshot   flip a payload byte of the latest set's engine
//	                           snapshot (frames stay whole; the loader refuses)
//	damage A segment BASE      remove the log's segment file at BASE
//	damage A open-log          clear the log recording's stop position in the
//	                           catalog (as a crash leaves it)
//	damage A recording-log     remove cluster/recording.log
//	member ID A                add A as member ID of the plan
//	live A                     A's archive is the live source (verdict and plan)
//	planflags FLAG...          the extra flags of `retention plan` from here on
//	                           (--model B, ...; replacing earlier ones; none:
//	                           no extra flags)
//	verdictflags FLAG...       the same for `retention verdict` (--backup BK ...)
//	backup A to BK             `matchlog backup create --from A --to BK` (a
//	                           verified image of A; A may be running)
//	drill BK [fail] [ago AGE] [into DIR]
//	                           `matchlog backup drill --backup BK` (recorded
//	                           in BK's drill log); fail: flip a byte of the
//	                           image's largest segment file first (its size
//	                           stays, so B still reads) and expect the drill
//	                           to fail; ago AGE (7d, 36h): the drill is dated
//	                           AGE before now (backup.Drill with its clock
//	                           set back); into DIR: restore into the new
//	                           directory DIR and leave the node there
//
// In planflags, verdictflags and reason texts {dir:BK} is the directory BK.
//
// Expectations (each also checks that no directory changed, but for start):
//
//	expect verdict A V [fallback N]   `retention verdict` of A (as member 0,
//	                                  against the live source) is V
//	expect reason A TEXT...           one of A's verdict reasons contains TEXT
//	expect cost A PATH [seconds]      A's recovery path PATH (local-replay,
//	                                  full-local-replay, catch-up, backup-tail)
//	                                  is valid; seconds: with an estimate in
//	                                  seconds from the backup's last drill
//	expect refusal RULE [on ID]       `retention plan` exits 1 and refuses a
//	                                  member (member ID) with rule RULE
//	expect approved ID                member ID's plan is approved
//	expect postponed ID               member ID's plan is approved, postponed,
//	                                  detaching nothing
//	expect detach ID POS              member ID's plan is approved and moves its
//	                                  log start to POS, detaching segment files
//	expect start A                    the node `matchlog node --dir A` would
//	                                  start starts (its gate passes); then stops
//	expect start-refused A V          it refuses with the gate's verdict V
//
// A rule's file is added by writing its steps and `expect refusal RULE`;
// every rule of retention.RefusalRules and every verdict of
// retention.Verdicts has one (TestRetentionScenarioCoverage checks it; the
// lists are checked complete against the package's constants by
// retention's TestRuleListsComplete). The one rule branch no
// directory reaches, the plan's own re-check that C ≤ S without --cutoff
// (C is a boundary ≤ the oldest kept set ≤ S by construction), is covered
// by retention's table and fuzz tests. The purge executor's own rules
// (retention.PurgeRefusalRules: archive-refuses-detach,
// restart-check-impossible) re-check at purge time what the plan has
// ensured on the same files, so no directory the plan approves reaches
// them; retention's TestPurgePreflightRefusals tests them on a plan that
// disagrees with the files.
func TestRetentionScenarioFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "retention", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := runScenario(t, string(b)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		})
	}
}

// TestRetentionScenarioFilesCompacted runs every scenario file with every
// stopped directory compacted (`matchlog archive compact`) before each
// expectation: the verdicts, reasons, costs, refusals, approvals and
// cutoffs the files expect must all hold on the compacted directories, and
// nodes started on them must start. The compactions must drop something
// (verdict-normal-restart-long-history makes TERM entries to drop).
func TestRetentionScenarioFilesCompacted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "retention", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	total := 0
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			n, err := runScenarioWith(t, string(b), true)
			if err != nil {
				t.Fatalf("%s, compacted: %v", f, err)
			}
			total += n
		})
	}
	t.Logf("the compactions dropped %d entries", total)
	if total < 4 { // the four terms before the purged log's start in verdict-normal-restart-long-history
		t.Errorf("the compactions dropped %d entries: the test shows little", total)
	}
}

// TestRetentionScenarioCoverage: every verdict row and every refusal rule
// has a scenario file that expects it.
func TestRetentionScenarioCoverage(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "retention", "*.txt"))
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	text := all.String()
	for _, v := range retention.Verdicts {
		if !regexpLine(text, "expect verdict ", " "+v) {
			t.Errorf("no scenario expects the verdict %s", v)
		}
	}
	for _, r := range retention.RefusalRules {
		if !regexpLine(text, "expect refusal "+r, "") {
			t.Errorf("no scenario expects the refusal %s", r)
		}
	}
}

// TestRetentionNamesDocumented: every verdict and refusal rule of
// cluster/retention (its lists) is named in README.md, and every verdict
// in the --json field doc of `retention verdict` (a struct tag, so a
// written list).
func TestRetentionNamesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Concat(retention.Verdicts, retention.RefusalRules, retention.PurgeRefusalRules) {
		if !bytes.Contains(readme, []byte("`"+n+"`")) {
			t.Errorf("README.md does not name `%s`", n)
		}
	}
	f, _ := reflect.TypeFor[verdictJSON]().FieldByName("Verdict")
	doc := f.Tag.Get("doc")
	words := strings.FieldsFunc(doc, func(r rune) bool { return r == ',' || r == ' ' })
	for _, v := range retention.Verdicts {
		if !slices.Contains(words, v) {
			t.Errorf("the doc of verdict --json's verdict (%q) does not name %s", doc, v)
		}
	}
}

// regexpLine reports whether a line of text starts with prefix and
// contains sub (after the prefix) and ends a word there.
func regexpLine(text, prefix, sub string) bool {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		rest := l[len(prefix):]
		if sub == "" && (rest == "" || rest[0] == ' ') {
			return true
		}
		if i := strings.Index(rest, sub); sub != "" && i >= 0 && (i+len(sub) == len(rest) || rest[i+len(sub)] == ' ') {
			return true
		}
	}
	return false
}

// TestRetentionScenarioLanguage: a file with no expectation, an unknown
// step, or a step with bad arguments fails.
func TestRetentionScenarioLanguage(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"# nothing\n", "no expectation"},
		{"node A orders 10\nstop A\n", "no expectation"},
		{"frobnicate A\nexpect verdict A full-replay\n", `line 1: frobnicate A: unknown step "frobnicate"`},
		{"node A orders ten\nexpect verdict A full-replay\n", "line 1"},
		{"expect verdict A\n", "line 1"},
		{"copy A B\nexpect verdict B full-replay\n", "line 1: copy A B: A is no directory"},
		{"expect start-refused A rebuild extra\n", "line 1"},
		{"backup A BK\nexpect verdict A full-replay\n", "line 1: backup A BK: want: backup A to BK"},
		{"drill BK\nexpect verdict A full-replay\n", "line 1: drill BK: BK is no directory"},
		{"empty BK\ndrill BK sideways\nexpect verdict BK full-replay\n", "line 2: drill BK sideways: want: drill BK [fail] [ago AGE] [into DIR]"},
		{"empty BK\ndrill BK ago 8x\nexpect verdict BK full-replay\n", `line 2: drill BK ago 8x: age "8x"`},
		{"empty BK\nverdictflags --backup {dir:nope}\nexpect verdict BK full-replay\n", "line 2"},
		{"empty A\nexpect cost A backup-tail minutes\n", "line 2: expect cost A backup-tail minutes: want: expect cost A PATH [seconds]"},
	} {
		if err := runScenario(t, c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
	}
}

// rscenario is the state of one running retention scenario file.
type rscenario struct {
	t         *testing.T
	root      string
	dirs      map[string]string
	nodes     map[string]*testNode
	gens      map[string]*enginetest.Gen
	members   []string // "ID=DIR"
	live      string
	planFlags []string
	verdFlags []string
	// compact: before each expectation, every stopped directory is
	// compacted in place (cluster.CompactDir); dropped counts what went.
	compact bool
	dropped int
}

// runScenario runs a scenario file's text; the error names the line.
func runScenario(t *testing.T, text string) error {
	_, err := runScenarioWith(t, text, false)
	return err
}

// runScenarioWith runs a scenario, with compact set compacting every
// stopped directory before each expectation; it returns the entries the
// compactions dropped (catalog and recording.log).
func runScenarioWith(t *testing.T, text string, compact bool) (int, error) {
	s := &rscenario{t: t, root: t.TempDir(), dirs: map[string]string{}, nodes: map[string]*testNode{}, gens: map[string]*enginetest.Gen{},
		compact: compact}
	defer func() {
		for _, n := range s.nodes {
			n.close()
		}
	}()
	expects := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		w := strings.Fields(l)
		if len(w) == 0 {
			continue
		}
		if w[0] == "expect" {
			expects++
		}
		if err := s.step(w); err != nil {
			return s.dropped, fmt.Errorf("line %d: %s: %w", line, strings.TrimSpace(l), err)
		}
	}
	if expects == 0 {
		return s.dropped, fmt.Errorf("no expectation: a scenario must expect something")
	}
	return s.dropped, nil
}

// compactAll compacts every stopped directory of the scenario that holds
// a node (cluster/recording.log and archive/).
func (s *rscenario) compactAll() error {
	for name, d := range s.dirs {
		if s.nodes[name] != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, cluster.ArchiveDirName, archive.CatalogFileName)); err != nil {
			continue
		}
		res, err := cluster.CompactDir(vfs.Default, d, archive.CompactOptions{})
		if err != nil {
			return fmt.Errorf("compact %s: %w", name, err)
		}
		if res.RecordingLog != nil {
			s.dropped += len(res.RecordingLog.Dropped)
		}
		s.dropped += len(res.Catalog.Dropped)
	}
	return nil
}

func (s *rscenario) dir(name string) string {
	if d, ok := s.dirs[name]; ok {
		return d
	}
	d := filepath.Join(s.root, name)
	s.dirs[name] = d
	return d
}

func (s *rscenario) existing(name string) (string, error) {
	d, ok := s.dirs[name]
	if !ok {
		return "", fmt.Errorf("%s is no directory of the scenario", name)
	}
	return d, nil
}

// node returns the running node on name, opening it if need be.
func (s *rscenario) node(name string) *testNode {
	if n := s.nodes[name]; n != nil {
		return n
	}
	g := s.gens[name]
	if g == nil {
		h := fnv.New64a()
		h.Write([]byte(name))
		g = enginetest.NewGen(int64(h.Sum64()%1000)+1, enginetest.GenConfig{})
		s.gens[name] = g
	}
	n := openTestNode(s.t, s.dir(name), g)
	s.nodes[name] = n
	return n
}

func (s *rscenario) stopped(name string) (string, error) {
	d, err := s.existing(name)
	if err != nil {
		return "", err
	}
	if s.nodes[name] != nil {
		return "", fmt.Errorf("node %s is running: stop it first", name)
	}
	return d, nil
}

// number parses N, or {X:A}[+-N] with X one of S, A, P, C.
func (s *rscenario) number(w string) (int64, error) {
	if !strings.HasPrefix(w, "{") {
		return strconv.ParseInt(w, 10, 64)
	}
	end := strings.IndexByte(w, '}')
	if end < 0 {
		return 0, fmt.Errorf("%q: want {X:DIR}", w)
	}
	x, name, ok := strings.Cut(w[1:end], ":")
	if !ok {
		return 0, fmt.Errorf("%q: want {X:DIR}", w)
	}
	d, err := s.existing(name)
	if err != nil {
		return 0, err
	}
	f, err := retention.Gather(vfs.Default, retention.Member{ID: 0, Dir: d}, retention.Options{Commit: -1})
	if err != nil {
		return 0, err
	}
	p := retention.PositionsOf(f)
	v, found := map[string]int64{"S": p.S, "A": p.A, "P": p.P, "C": p.C}[x]
	if !found {
		return 0, fmt.Errorf("%q: no position %s (S, A, P or C)", w, x)
	}
	if rest := w[end+1:]; rest != "" {
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", w, err)
		}
		v += n
	}
	return v, nil
}

// word expands {dir:NAME} to the directory NAME and {X:A}[+-N] to the
// number; any other word is itself.
func (s *rscenario) word(w string) (string, error) {
	if name, ok := strings.CutPrefix(w, "{dir:"); ok && strings.HasSuffix(name, "}") {
		return s.existing(strings.TrimSuffix(name, "}"))
	}
	if strings.HasPrefix(w, "{") {
		v, err := s.number(w)
		return fmt.Sprint(v), err
	}
	return w, nil
}

// words expands every word of ws (word).
func (s *rscenario) words(ws []string) ([]string, error) {
	out := []string{}
	for _, w := range ws {
		x, err := s.word(w)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// scenarioAge parses a drill's age: a Go duration or Nd (days).
func scenarioAge(w string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(w, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("age %q: want Nd or a duration", w)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("age %q: want Nd or a duration", w)
	}
	return d, nil
}

// drill runs a restore drill of the backup directory w[1]: `drill BK
// [fail] [ago AGE] [into DIR]`.
func (s *rscenario) drill(w []string) error {
	bk, err := s.existing(w[1])
	if err != nil {
		return err
	}
	fail, into := false, ""
	var ago time.Duration
	for rest := w[2:]; len(rest) > 0; {
		switch {
		case rest[0] == "fail":
			fail, rest = true, rest[1:]
		case rest[0] == "ago" && len(rest) > 1:
			if ago, err = scenarioAge(rest[1]); err != nil {
				return err
			}
			rest = rest[2:]
		case rest[0] == "into" && len(rest) > 1:
			if _, dup := s.dirs[rest[1]]; dup {
				return fmt.Errorf("%s exists", rest[1])
			}
			into, rest = s.dir(rest[1]), rest[2:]
		default:
			return fmt.Errorf("want: drill BK [fail] [ago AGE] [into DIR]")
		}
	}
	if fail {
		if err := damageImage(bk); err != nil {
			return err
		}
	}
	if ago > 0 {
		work := into
		if work == "" {
			work = filepath.Join(s.root, ".drill-"+w[1])
			defer os.RemoveAll(work)
		}
		_, err := backup.Drill(backup.DrillOptions{FS: vfs.Default, Backup: bk, WorkDir: work, Now: func() time.Time { return time.Now().Add(-ago) }})
		if fail != (err != nil) {
			return fmt.Errorf("drill of %s (fail %v): %v", w[1], fail, err)
		}
		return nil
	}
	args := []string{"backup", "drill", "--backup", bk}
	if into != "" {
		args = append(args, "--work-dir", into)
	}
	code, out, errb := runCLI(s.t, args...)
	if fail != (code != 0) {
		return fmt.Errorf("%v (fail %v): exit %d: %s%s", args, fail, code, errb, out)
	}
	return nil
}

// damageImage flips one byte in the middle of the largest segment file of
// the backup image bk: the sizes stay (the manifest still reads, B is
// still there) and a drill's restore check of the file fails.
func damageImage(bk string) error {
	files, err := filepath.Glob(filepath.Join(bk, "archive", "*.rec"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("%s holds no segment file: %v", bk, err)
	}
	var big string
	var size int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			big, size = f, st.Size()
		}
	}
	b, err := os.ReadFile(big)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0xff
	return os.WriteFile(big, b, 0o644)
}

func (s *rscenario) digests() map[string]string {
	all := map[string]string{}
	for name, d := range s.dirs {
		if s.nodes[name] != nil {
			continue // a running node writes its own files
		}
		for k, v := range digests(s.t, d) {
			all[k] = v
		}
	}
	return all
}

func (s *rscenario) unchanged(before map[string]string) error {
	after := s.digests()
	for k, v := range before {
		if after[k] != v {
			return fmt.Errorf("%s changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			return fmt.Errorf("%s was created", k)
		}
	}
	return nil
}

// cli runs a matchlog command line and fails unless it exits 0.
func (s *rscenario) cli(args ...string) error {
	code, out, errb := runCLI(s.t, args...)
	if code != 0 {
		return fmt.Errorf("%v: exit %d: %s%s", args, code, errb, out)
	}
	return nil
}

func (s *rscenario) step(w []string) error {
	n := func(k int) error {
		if len(w) != k {
			return fmt.Errorf("want %d words, got %d", k, len(w))
		}
		return nil
	}
	switch w[0] {
	case "node":
		if err := n(4); err != nil || w[2] != "orders" {
			return fmt.Errorf("want: node A orders N")
		}
		k, err := strconv.Atoi(w[3])
		if err != nil || k <= 0 {
			return fmt.Errorf("orders %q: want a positive count", w[3])
		}
		s.node(w[1]).submit(k)
	case "snapshot":
		if err := n(2); err != nil {
			return err
		}
		snapshotNode(s.t, s.node(w[1]), 0)
	case "stop":
		if err := n(2); err != nil {
			return err
		}
		tn := s.nodes[w[1]]
		if tn == nil {
			return fmt.Errorf("node %s is not running", w[1])
		}
		tn.close()
		delete(s.nodes, w[1])
	case "copy":
		if err := n(3); err != nil {
			return err
		}
		src, err := s.stopped(w[1])
		if err != nil {
			return err
		}
		if _, dup := s.dirs[w[2]]; dup {
			return fmt.Errorf("%s exists", w[2])
		}
		copyTree(s.t, src, s.dir(w[2]))
	case "empty":
		if err := n(2); err != nil {
			return err
		}
		if err := os.MkdirAll(s.dir(w[1]), 0o755); err != nil {
			return err
		}
	case "purge", "detach":
		unsafe := len(w) == 5 && w[4] == "unsafe"
		if len(w) != 4 && !unsafe || w[2] != "to" {
			return fmt.Errorf("want: %s A to POS [unsafe]", w[0])
		}
		d, err := s.stopped(w[1])
		if err != nil {
			return err
		}
		pos, err := s.number(w[3])
		if err != nil {
			return err
		}
		args := []string{"archive", w[0], "--dir", filepath.Join(d, "archive"), "--id", "0", "--position", fmt.Sprint(pos)}
		if w[0] == "purge" {
			args = append(args, "--delay", "0")
		}
		if unsafe {
			args = append(args, "--unsafe-past-snapshot")
		}
		return s.cli(args...)
	case "damage":
		return s.damage(w)
	case "member":
		if err := n(3); err != nil {
			return err
		}
		if _, err := strconv.ParseUint(w[1], 10, 31); err != nil {
			return fmt.Errorf("member id %q", w[1])
		}
		d, err := s.existing(w[2])
		if err != nil {
			return err
		}
		s.members = append(s.members, w[1]+"="+d)
	case "live":
		if err := n(2); err != nil {
			return err
		}
		d, err := s.existing(w[1])
		if err != nil {
			return err
		}
		s.live = filepath.Join(d, "archive")
	case "planflags", "verdictflags":
		flags, err := s.words(w[1:])
		if err != nil {
			return err
		}
		if w[0] == "planflags" {
			s.planFlags = flags
		} else {
			s.verdFlags = flags
		}
	case "backup":
		if len(w) != 4 || w[2] != "to" {
			return fmt.Errorf("want: backup A to BK")
		}
		src, err := s.existing(w[1])
		if err != nil {
			return err
		}
		if _, dup := s.dirs[w[3]]; dup {
			return fmt.Errorf("%s exists", w[3])
		}
		return s.cli("backup", "create", "--from", src, "--to", s.dir(w[3]))
	case "drill":
		if len(w) < 2 {
			return fmt.Errorf("want: drill BK [fail] [ago AGE] [into DIR]")
		}
		return s.drill(w)
	case "expect":
		if len(w) < 2 {
			return fmt.Errorf("expect what?")
		}
		if s.compact {
			if err := s.compactAll(); err != nil {
				return err
			}
		}
		before := s.digests()
		if err := s.expect(w[1:]); err != nil {
			return err
		}
		if w[1] != "start" {
			return s.unchanged(before)
		}
	default:
		return fmt.Errorf("unknown step %q", w[0])
	}
	return nil
}

func (s *rscenario) damage(w []string) error {
	if len(w) < 3 {
		return fmt.Errorf("want: damage A WHAT")
	}
	d, err := s.stopped(w[1])
	if err != nil {
		return err
	}
	switch w[2] {
	case "latest-snapshot":
		f, err := retention.Gather(vfs.Default, retention.Member{ID: 0, Dir: d}, retention.Options{Commit: -1})
		if err != nil {
			return err
		}
		for _, set := range f.Sets {
			for _, r := range set.Recordings {
				if r.ServiceID == 0 {
					damageEngineSnapshot(s.t, d, r.RecordingID)
					return nil
				}
			}
		}
		return fmt.Errorf("%s holds no engine snapshot", w[1])
	case "segment":
		if len(w) != 4 {
			return fmt.Errorf("want: damage A segment BASE")
		}
		base, err := s.number(w[3])
		if err != nil {
			return err
		}
		return os.Remove(filepath.Join(d, "archive", archive.SegmentFileName(0, base)))
	case "open-log":
		cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(d, "archive"), archive.CatalogOptions{SyncLevel: 1})
		if err != nil {
			return err
		}
		if err := cat.UpdateStopPosition(0, archive.NullPosition); err != nil {
			cat.Close()
			return err
		}
		return cat.Close()
	case "recording-log":
		return os.Remove(filepath.Join(d, "cluster", "recording.log"))
	}
	return fmt.Errorf("unknown damage %q", w[2])
}

func (s *rscenario) expect(w []string) error {
	switch w[0] {
	case "verdict", "reason", "cost":
		if len(w) < 3 {
			return fmt.Errorf("want: expect %s A ...", w[0])
		}
		d, err := s.existing(w[1])
		if err != nil {
			return err
		}
		args := []string{"retention", "verdict", "--json", "--member", "0=" + d}
		if s.live != "" {
			args = append(args, "--live", s.live)
		}
		code, out, errb := runCLI(s.t, append(args, s.verdFlags...)...)
		var v verdictJSON
		if code != 0 {
			return fmt.Errorf("verdict: exit %d: %s", code, errb)
		}
		mustJSON(s.t, out, &v)
		if w[0] == "cost" {
			if len(w) != 3 && !(len(w) == 4 && w[3] == "seconds") {
				return fmt.Errorf("want: expect cost A PATH [seconds]")
			}
			i := slices.IndexFunc(v.Costs, func(c retention.Cost) bool { return c.Path == w[2] })
			switch {
			case i < 0:
				return fmt.Errorf("%s's verdict has no cost %s: %+v", w[1], w[2], v.Costs)
			case !v.Costs[i].Valid || v.Costs[i].Bytes < 0:
				return fmt.Errorf("%s's path %s is not valid: %+v", w[1], w[2], v.Costs[i])
			case len(w) == 4 && v.Costs[i].Seconds <= 0:
				return fmt.Errorf("%s's path %s has no estimate in seconds: %+v", w[1], w[2], v.Costs[i])
			}
			return nil
		}
		if w[0] == "reason" {
			ws, err := s.words(w[2:])
			if err != nil {
				return err
			}
			text := strings.Join(ws, " ")
			if !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, text) }) {
				return fmt.Errorf("no reason of %s says %q: %q", w[1], text, v.Reasons)
			}
			return nil
		}
		if v.Verdict != w[2] {
			return fmt.Errorf("verdict of %s is %s, want %s: %q", w[1], v.Verdict, w[2], v.Reasons)
		}
		if len(w) == 5 && w[3] == "fallback" {
			fb, err := s.number(w[4])
			if err != nil {
				return err
			}
			if v.Fallback != fb {
				return fmt.Errorf("fallback of %s is %d, want %d", w[1], v.Fallback, fb)
			}
		} else if len(w) != 3 {
			return fmt.Errorf("want: expect verdict A V [fallback N]")
		}
	case "refusal", "approved", "postponed", "detach":
		code, ms, err := s.plan()
		if err != nil {
			return err
		}
		if w[0] == "refusal" {
			if len(w) != 2 && !(len(w) == 4 && w[2] == "on") {
				return fmt.Errorf("want: expect refusal RULE [on ID]")
			}
			if code != 1 {
				return fmt.Errorf("plan exit %d, want 1", code)
			}
			for _, m := range ms {
				if (len(w) == 2 || fmt.Sprint(m.ID) == w[3]) && slices.Contains(rules(m), w[1]) {
					return nil
				}
			}
			var got [][]string
			for _, m := range ms {
				got = append(got, rules(m))
			}
			return fmt.Errorf("no member's plan is refused by %s: %v", w[1], got)
		}
		want := int64(-1)
		if w[0] == "detach" {
			if len(w) != 3 {
				return fmt.Errorf("want: expect detach ID POS")
			}
			if want, err = s.number(w[2]); err != nil {
				return err
			}
		} else if len(w) != 2 {
			return fmt.Errorf("want: expect %s ID", w[0])
		}
		for _, m := range ms {
			if fmt.Sprint(m.ID) != w[1] {
				continue
			}
			if !m.Approved {
				return fmt.Errorf("member %s's plan is refused: %v", w[1], rules(m))
			}
			if w[0] == "postponed" && (!m.Manifest.Postponed || len(m.Manifest.Detach) != 0) {
				return fmt.Errorf("member %s's plan is not postponed: %+v", w[1], m.Manifest)
			}
			if w[0] == "detach" && (m.Manifest.ProposedStart != want || len(m.Manifest.Detach) == 0 || m.Manifest.DetachBytes <= 0) {
				return fmt.Errorf("member %s's plan moves the start to %d detaching %v, want %d and files", w[1], m.Manifest.ProposedStart, m.Manifest.Detach, want)
			}
			return nil
		}
		return fmt.Errorf("member %s is not in the plan", w[1])
	case "start", "start-refused":
		if len(w) != 2 && !(w[0] == "start-refused" && len(w) == 3) {
			return fmt.Errorf("want: expect start A | expect start-refused A V")
		}
		d, err := s.stopped(w[1])
		if err != nil {
			return err
		}
		var logb bytes.Buffer
		cfg, err := parseNodeFlags([]string{"--dir", d, "--listen", "127.0.0.1:0"}, &logb)
		if err != nil {
			return err
		}
		srv, err := server.New(cfg.Options)
		if w[0] == "start" {
			if err != nil {
				return fmt.Errorf("the node did not start: %v", err)
			}
			return srv.Close()
		}
		if err == nil {
			srv.Close()
			return fmt.Errorf("the node started")
		}
		if !strings.Contains(err.Error(), "the verdict of "+d+" is "+w[2]+",") {
			return fmt.Errorf("the start was refused, not by the gate's %s: %v", w[2], err)
		}
	default:
		return fmt.Errorf("unknown expectation %q", w[0])
	}
	return nil
}

// plan runs `retention plan --json` over the scenario's members.
func (s *rscenario) plan() (int, []planMemberJSON, error) {
	if len(s.members) == 0 {
		return 0, nil, fmt.Errorf("no member: add them with `member ID A`")
	}
	var args []string
	for _, m := range s.members {
		args = append(args, "--member", m)
	}
	if s.live != "" {
		args = append(args, "--live", s.live)
	}
	code, ms := planCLI(s.t, append(args, s.planFlags...)...)
	return code, ms, nil
}
