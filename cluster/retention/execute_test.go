package retention

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// testEpochMs is the purge tests' clock; a run after a crash is later by
// more than the mark files' live timeout.
const testEpochMs = int64(1_800_000_000_000)

func fixedClock(ms int64) func() int64 { return func() int64 { return ms } }

const (
	nodeTerm    = 64 * 1024
	nodeSegment = 64 * 1024
)

// buildNode writes a stopped matchlog node directory dir on fsys: an
// engine service fed generated commands, with a snapshot after each of the
// first three batches (three generations), small segments, a clean stop.
func buildNode(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, FS: fsys, Service: svc, TermLength: nodeTerm, SegmentLength: nodeSegment,
		FileSyncLevel: 1, FileIoMaxLength: 1 << 20, MaxBatch: 64, EpochClock: fixedClock(testEpochMs - 60_000)})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := n.Connect("aeron:ipc", 102)
	if err != nil {
		t.Fatal(err)
	}
	gen := enginetest.NewGen(7, enginetest.GenConfig{})
	drain := func() {
		for i := 0; ; i++ {
			w, err := n.DoWork()
			if err != nil {
				t.Fatal(err)
			}
			if w == 0 {
				if n.Pending() == 0 && !n.SnapshotInProgress() {
					return
				}
				time.Sleep(50 * time.Microsecond)
			}
			if i > 1_000_000 {
				t.Fatal("the duty cycle does not settle")
			}
		}
	}
	var c engine.Command
	var buf []byte
	for batch := range 4 {
		for range 700 {
			gen.Next(&c)
			for c.Kind < engine.CmdDefineInstrument || c.Kind > engine.CmdMarkPrice {
				gen.Next(&c)
			}
			if buf, err = wire.AppendCommand(buf[:0], &c); err != nil {
				t.Fatal(err)
			}
			if err := n.Offer(sess, buf); err != nil {
				t.Fatal(err)
			}
		}
		drain()
		if batch < 3 {
			n.RequestSnapshot()
			drain()
			if err := n.AwaitSnapshot(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			drain()
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

var (
	nodeBase  *vfs.MemFS
	nodeBuilt bool
)

// nodeFS returns a fresh copy of the test node directory "n" (built once).
func nodeFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	if !nodeBuilt {
		mem := vfs.NewMem()
		buildNode(t, mem, "n")
		nodeBase, nodeBuilt = mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100}), true
	}
	return nodeBase.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
}

func digests(t *testing.T, fsys vfs.FS, dirs ...string) map[string]string {
	t.Helper()
	var subs []string
	for _, d := range dirs {
		subs = append(subs, fsys.Join(d, cluster.ClusterDirName), fsys.Join(d, cluster.ArchiveDirName))
	}
	out, err := vfs.Digests(fsys, subs...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diff(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %s -> %q", k, v, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "new file "+k)
		}
	}
	slices.Sort(d)
	return d
}

// realRestartHash opens the node of dir on a copy of fsys (a real start:
// the copy gets its writes) and returns its engine state hash.
func realRestartHash(t *testing.T, fsys *vfs.MemFS, dir string) uint64 {
	t.Helper()
	cp := fsys.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, FS: cp, Service: svc, TermLength: nodeTerm, SegmentLength: nodeSegment,
		EpochClock: fixedClock(testEpochMs + 3_600_000)})
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	h := svc.Engine().StateHash()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return h
}

func nodePurgeOptions(ms int64) PurgeOptions {
	return PurgeOptions{Gather: Options{Services: 1, Commit: -1}, Plan: PlanOptions{Cutoff: -1}, Clock: fixedClock(ms)}
}

// checkRestartable: the member gathers as a normal restart, its recovery
// plan is accepted by CheckPlan and every file it references is there.
func checkRestartable(t *testing.T, fsys vfs.FS, m Member, opts Options, what string) *Facts {
	t.Helper()
	f, err := Gather(fsys, m, opts)
	if err != nil {
		t.Fatalf("%s: gather: %v", what, err)
	}
	v := Decide(f)
	if v.Verdict != NormalRestart || len(f.PlanIssues) > 0 || len(f.MissingSegments) > 0 || f.Running != "" {
		t.Fatalf("%s: verdict %s %v, plan issues %v, missing %v, running %q", what, v.Verdict, v.Reasons, f.PlanIssues, f.MissingSegments, f.Running)
	}
	checkPlanAccepts(t, fsys, m.Dir, what)
	return f
}

// checkPlanAccepts makes the recovery plan of dir and checks it with
// cluster.CheckPlan directly.
func checkPlanAccepts(t *testing.T, fsys vfs.FS, dir, what string) {
	t.Helper()
	rl, err := recordinglog.Open(fsys, fsys.Join(dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer rl.Close()
	cat, err := archive.OpenCatalogFile(fsys, fsys.Join(dir, cluster.ArchiveDirName), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer cat.Close()
	plan, err := rl.CreateRecoveryPlan(cat, 1)
	if err != nil {
		t.Fatalf("%s: recovery plan: %v", what, err)
	}
	issues, err := cluster.CheckPlan(fsys, dir, cat, rl, plan)
	if err != nil || len(issues) > 0 {
		t.Fatalf("%s: CheckPlan: %v %v", what, issues, err)
	}
}

// checkPurged: the member's log starts at start, the recordings are
// DELETED with no file left, no *.deleted file and no backup remains.
func checkPurged(t *testing.T, fsys vfs.FS, dir string, start int64, deleted []int64, what string) {
	t.Helper()
	desc, err := archive.Describe(fsys, fsys.Join(dir, cluster.ArchiveDirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range desc.Recordings {
		if slices.Contains(deleted, r.Descriptor.RecordingID) && (r.State != archive.StateDeleted || len(r.Segments) > 0) {
			t.Fatalf("%s: recording %d: %s with %d files, want DELETED with none", what, r.Descriptor.RecordingID, r.State, len(r.Segments))
		}
		if r.Descriptor.RecordingID == 0 && r.State == archive.StateValid {
			if r.Descriptor.StartPosition != start {
				t.Fatalf("%s: log start %d, want %d", what, r.Descriptor.StartPosition, start)
			}
			for _, s := range r.Segments {
				if s.Base+int64(r.Descriptor.SegmentFileLength) <= start {
					t.Fatalf("%s: %s below the start is still there", what, s.Name)
				}
			}
		}
	}
	for _, sub := range []string{cluster.ClusterDirName, cluster.ArchiveDirName} {
		names, _ := fsys.List(fsys.Join(dir, sub))
		for _, n := range names {
			if strings.Contains(n, BackupMarker) || strings.HasSuffix(n, archive.DeletedSuffix) {
				t.Fatalf("%s: %s/%s left behind", what, sub, n)
			}
		}
	}
}

// The native node: the plan detaches segments and deletes the oldest
// generation; the purge does it, and a real restart afterwards reaches the
// state hash a real restart reached before.
func TestPurgeNativeNode(t *testing.T) {
	mem := nodeFS(t)
	m := Member{ID: 0, Dir: "n"}
	before := realRestartHash(t, mem, "n")
	opts := nodePurgeOptions(testEpochMs)
	res, err := Purge(mem, []Member{m}, opts)
	if err != nil {
		t.Fatalf("purge: %v\n%+v", err, res)
	}
	mp, out := res.Plan.Members[0], res.Members[0]
	man := mp.Manifest
	if len(man.Detach) == 0 || len(man.DeleteSnapshots) != 1 || len(man.RetainedSets) != 2 {
		t.Fatalf("the test node's plan detaches %v and deletes %v: want segments and one generation", man.Detach, man.DeleteSnapshots)
	}
	var del []int64
	for _, r := range man.DeleteSnapshots[0].Recordings {
		del = append(del, r.RecordingID)
	}
	slices.Sort(del)
	if out.Status != StatusPurged || out.Kind != KindMatchlog || !out.RestartChecked || out.HashBefore == "" || out.HashBefore != out.HashAfter ||
		out.HashBefore != fmt.Sprintf("%016x", before) || out.DetachedFrom != man.StartPosition || out.DetachedTo != man.ProposedStart ||
		out.Validated != NormalRestart || !slices.Equal(sorted(out.DeletedRecordings), del) {
		t.Fatalf("purge result %+v; want purged, hash %016x, detached %d -> %d, deleted %v", out, before, man.StartPosition, man.ProposedStart, del)
	}
	renamed := map[string]int64{}
	for _, f := range out.Renamed {
		renamed[f.Name] = f.Bytes
	}
	for _, f := range man.Detach {
		if renamed[f.Name] != f.Size {
			t.Errorf("%s (%d bytes) not renamed: %v", f.Name, f.Size, out.Renamed)
		}
	}
	if len(out.Unlinked) != len(out.Renamed) || len(out.Pending) != 0 || len(out.RemovedBackups) != 3 {
		t.Errorf("unlinked %v pending %v removed backups %v", out.Unlinked, out.Pending, out.RemovedBackups)
	}
	f := checkRestartable(t, mem, m, Options{Services: 1, Commit: -1, NowMs: testEpochMs}, "after the purge")
	if f.A != man.ProposedStart || f.A <= man.StartPosition {
		t.Fatalf("A = %d, want %d", f.A, man.ProposedStart)
	}
	checkPurged(t, mem, "n", man.ProposedStart, del, "after the purge")
	if after := realRestartHash(t, mem, "n"); after != before {
		t.Fatalf("restart after the purge: state hash %016x, before %016x", after, before)
	}
	// Purging again finds nothing to do and changes nothing.
	d0 := digests(t, mem, "n")
	res, err = Purge(mem, []Member{m}, nodePurgeOptions(testEpochMs+1))
	if err != nil || res.Members[0].Status != StatusNothing || len(res.Plan.Members[0].Manifest.DeleteSnapshots) != 0 {
		t.Fatalf("second purge: %v %+v %+v", err, res.Members, res.Plan.Members[0].Manifest.DeleteSnapshots)
	}
	if d := diff(d0, digests(t, mem, "n")); len(d) > 0 {
		t.Fatalf("a purge with nothing to do changed %v", d)
	}
}

// With a delay the renamed files stay for the archive's next open, which
// schedules them; the node still restarts to the same hash.
func TestPurgeDelayLeavesDeleted(t *testing.T) {
	mem := nodeFS(t)
	before := realRestartHash(t, mem, "n")
	opts := nodePurgeOptions(testEpochMs)
	opts.Delay = time.Minute
	res, err := Purge(mem, []Member{{0, "n"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Members[0]
	got, _ := archive.DeletedSegments(mem, "n/archive")
	if len(out.Unlinked) != 0 || len(out.Pending) == 0 || len(got) != len(out.Pending) || len(out.Renamed) != len(out.Pending) {
		t.Fatalf("unlinked %v, pending %v, on disk %v, renamed %v", out.Unlinked, out.Pending, got, out.Renamed)
	}
	if after := realRestartHash(t, mem, "n"); after != before {
		t.Fatalf("state hash %016x, before %016x", after, before)
	}
	// The archive's next open schedules them (DeleteDelay -1: at once).
	a, err := archive.Open(mem, "n/archive", archive.Options{DeleteDelay: -1, Clock: fixedClock(testEpochMs + 3_600_000)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := a.DrainDeletes(false); err != nil || n != len(got) {
		t.Fatalf("the next open unlinked %d of %d: %v", n, len(got), err)
	}
	a.Close()
}

// FACTS.md "A safe purge of member 0 now", executed on a copy of member 0
// with member 0 as the live source: C = 786,432, 0-655360.rec detached and
// deleted, recordings 1 and 2 purged; afterwards A = C, the verdict is
// still a normal restart and cluster.CheckPlan accepts the recovery plan.
func TestPurgeThreeMembersMember0(t *testing.T) {
	src := fixtures.AeronThreeMembers(t)
	d := filepath.Join(t.TempDir(), "member-0")
	fixtures.CopyDirs(t, filepath.Join(src, "member-0"), d, "cluster", "archive")
	m := Member{ID: 0, Dir: d}
	gopts := Options{Services: 1, Live: filepath.Join(d, "archive"), Commit: -1}
	res, err := Purge(vfs.Default, []Member{m}, PurgeOptions{Gather: gopts, Plan: PlanOptions{Cutoff: -1}})
	if err != nil {
		t.Fatalf("purge: %v\n%+v", err, res)
	}
	out := res.Members[0]
	if out.Status != StatusPurged || out.Kind != KindAeron || out.RestartChecked || out.DetachedFrom != 655360 || out.DetachedTo != 786432 ||
		out.Validated != NormalRestart || !slices.Equal(sorted(out.DeletedRecordings), []int64{1, 2}) {
		t.Fatalf("purge %+v", out)
	}
	want := map[string]int64{"0-655360.rec": 131072, "1-0.rec": 131072, "2-0.rec": 131072}
	got := map[string]int64{}
	for _, f := range out.Renamed {
		got[f.Name] = f.Bytes
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("renamed %v, want %v", got, want)
	}
	f := checkRestartable(t, vfs.Default, m, gopts, "after the purge")
	if p := PositionsOf(f); p.A != 786432 || p.S != 1101600 || p.P != 1258560 || p.L != 786432 {
		t.Fatalf("positions after the purge %+v", p)
	}
	if f.A != MakePlan([]*Facts{f}, PlanOptions{Cutoff: -1}).Members[0].Manifest.CMember {
		t.Fatalf("A = %d is not C", f.A)
	}
	checkPurged(t, vfs.Default, d, 786432, []int64{1, 2}, "after the purge")
	// recording.log is unchanged: the entries of the purged generation stay.
	a, _ := vfs.ReadFile(vfs.Default, filepath.Join(src, "member-0", "cluster", "recording.log"))
	b, _ := vfs.ReadFile(vfs.Default, filepath.Join(d, "cluster", "recording.log"))
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("recording.log changed")
	}
	// Aeron's archive-mark.dat is Aeron's: left byte for byte.
	a, _ = vfs.ReadFile(vfs.Default, filepath.Join(src, "member-0", "archive", "archive-mark.dat"))
	b, _ = vfs.ReadFile(vfs.Default, filepath.Join(d, "archive", "archive-mark.dat"))
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("the purge changed Aeron's archive-mark.dat")
	}
}

// Refusals change nothing: a running member, a cutoff past S, model B, a
// cutoff that drops a kept generation on the Aeron fixture; the digests of
// every member directory are the same before and after.
func TestPurgeRefusalsChangeNothing(t *testing.T) {
	mem := nodeFS(t)
	m := Member{ID: 0, Dir: "n"}
	check := func(name string, fsys vfs.FS, members []Member, opts PurgeOptions, rule string, dirs ...string) {
		t.Helper()
		before := digests(t, fsys, dirs...)
		res, err := Purge(fsys, members, opts)
		if !errors.Is(err, ErrPurgeRefused) || res == nil || !res.Refused {
			t.Fatalf("%s: err %v", name, err)
		}
		found := false
		for _, mp := range res.Plan.Members {
			for _, r := range mp.Refusals {
				found = found || r.Rule == rule
			}
		}
		if !found {
			t.Fatalf("%s: refusals %+v, want %s", name, res.Plan.Members[0].Refusals, rule)
		}
		if d := diff(before, digests(t, fsys, dirs...)); len(d) > 0 {
			t.Fatalf("%s: a refused purge changed %v", name, d)
		}
	}
	o := nodePurgeOptions(testEpochMs)
	o.Plan.Cutoff = 1 << 40
	check("cutoff past S", mem, []Member{m}, o, RefuseCutoffAfterS, "n")
	o = nodePurgeOptions(testEpochMs)
	o.Plan.Model = ModelB
	check("model B", mem, []Member{m}, o, RefuseModelBNoBackup, "n")

	// A running node: its mark file is live (this process, fresh activity).
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: "n", FS: mem, Service: svc, TermLength: nodeTerm, SegmentLength: nodeSegment})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := Purge(mem, []Member{m}, PurgeOptions{Gather: Options{Services: 1, Commit: -1}, Plan: PlanOptions{Cutoff: -1}})
	if rs := fmt.Sprint(res.Plan.Members[0].Refusals); !strings.Contains(rs, fmt.Sprintf("its process %d is running", os.Getpid())) || !strings.Contains(rs, "activity timestamp") {
		t.Fatalf("running: the refusal does not name the process and its activity: %s", rs)
	}
	check("running", mem, []Member{m}, PurgeOptions{Gather: Options{Services: 1, Commit: -1}, Plan: PlanOptions{Cutoff: -1}}, RefuseMemberRunning, "n")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	src := fixtures.AeronThreeMembers(t)
	root := t.TempDir()
	var ms []Member
	var dirs []string
	for i := range 3 {
		d := filepath.Join(root, fmt.Sprintf("member-%d", i))
		fixtures.CopyDirs(t, filepath.Join(src, fmt.Sprintf("member-%d", i)), d, "cluster", "archive")
		ms = append(ms, Member{ID: int32(i), Dir: d})
		dirs = append(dirs, d)
	}
	o = PurgeOptions{Gather: Options{Services: 1, Live: filepath.Join(dirs[0], "archive"), Commit: -1}, Plan: PlanOptions{Cutoff: 1000000}}
	check("cutoff drops a kept generation", vfs.Default, ms, o, RefuseCutoffDropsKept, dirs...)
}

// sweepCase is a set of operation kinds failed in turn; writes: every
// failure must surface as an error wrapping the injected one.
type sweepCase struct {
	name   string
	ops    vfs.OpSet
	writes bool
}

// Every failure point in turn: an injected failure of each file-system
// operation of a purge (WriteOps, then opens and reads), and a crash (a
// CrashClone taken just before each write-kind operation). After each, the
// member restarts normally with everything its recovery plan references;
// a failure before the first rename leaves the directory byte-identical;
// and a new purge completes the work, ending at the same state hash.
func TestPurgeFaultSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep")
	}
	base := nodeFS(t)
	m := Member{ID: 0, Dir: "n"}
	want := digests(t, base, "n")
	hash := realRestartHash(t, base, "n")
	plan := MakePlan([]*Facts{mustGather(t, base, m)}, PlanOptions{Cutoff: -1}).Members[0].Manifest
	var del []int64
	for _, r := range plan.DeleteSnapshots[0].Recordings {
		del = append(del, r.RecordingID)
	}
	later := Options{Services: 1, Commit: -1, NowMs: testEpochMs + 3_600_000}
	finish := func(fsys *vfs.MemFS, what string) {
		t.Helper()
		checkRestartable(t, fsys, m, later, what)
		res, err := Purge(fsys, []Member{m}, nodePurgeOptions(testEpochMs+3_600_000))
		if err != nil {
			t.Fatalf("%s: the purge after it: %v\n%+v", what, err, res)
		}
		checkPurged(t, fsys, "n", plan.ProposedStart, del, what+", purged again")
		checkRestartable(t, fsys, m, later, what+", purged again")
		if h := realRestartHash(t, fsys, "n"); h != hash {
			t.Fatalf("%s: state hash %016x after the purge, %016x before", what, h, hash)
		}
	}

	for _, sc := range []sweepCase{{"write", vfs.WriteOps, true}, {"open-read", vfs.Ops(vfs.OpOpen, vfs.OpRead, vfs.OpList, vfs.OpStat), false}} {
		failures, restored := 0, 0
		for i := int64(0); ; i++ {
			if i > 50_000 {
				t.Fatal("sweep does not end")
			}
			fsys := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
			inj := vfs.NewInjector(fsys, sc.ops, i)
			res, err := Purge(inj, []Member{m}, nodePurgeOptions(testEpochMs))
			if inj.Injected() == nil {
				if err != nil {
					t.Fatalf("%s: run without failure: %v", sc.name, err)
				}
				t.Logf("%s: %d operations failed in turn (%d failed the purge, %d of them put the directory back)", sc.name, i, failures, restored)
				break
			}
			what := fmt.Sprintf("%s failure %d (%v)", sc.name, i, inj.Injected())
			if err != nil && !sc.writes {
				// A failed open or read may surface as another error (a
				// lower layer's), or make Gather see other facts: a
				// refusal, or a validation that fails and puts the
				// directory back. Either way it is as it was, or purged.
				failures++
				if res != nil && len(res.Members) == 1 && res.Members[0].Status == StatusRestored {
					restored++
				}
				if d := diff(want, digests(t, fsys, "n")); len(d) > 0 {
					finish(fsys, what)
				}
				continue
			}
			if err == nil {
				finish(fsys, what+", absorbed")
				continue
			}
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("%s: error does not wrap the injected one: %v", what, err)
			}
			failures++
			if res != nil && len(res.Members) == 1 {
				switch out := res.Members[0]; {
				case out.Status == StatusRestored:
					if d := diff(want, digests(t, fsys, "n")); len(d) > 0 {
						t.Fatalf("%s: restored, but the directory changed:\n%v", what, strings.Join(d, "\n"))
					}
					restored++
				case len(out.Renamed) == 0 && len(out.Unlinked) == 0 && out.hasStep("backup"):
					t.Fatalf("%s: failed before a file was renamed, and was not put back: %+v", what, out)
				}
			}
			finish(fsys, what)
		}
		if failures == 0 || restored == 0 {
			t.Fatalf("%s: %d failures, %d restored: the sweep did not reach the purge", sc.name, failures, restored)
		}
	}

	crashes := crashSweep(t, base, func(fsys vfs.FS) error {
		_, err := Purge(fsys, []Member{m}, nodePurgeOptions(testEpochMs))
		return err
	}, finish)
	t.Logf("%d crash points", crashes)
}

// crashSweep runs purge on a copy of base once per write-kind operation k
// (0, 1, ...), crashing just before the k-th: the state a crash could
// leave there (a random share of the unsynced writes kept) goes to finish,
// and nothing more happens to the copy. It returns the number of crash
// points (the k of the first run that reached its end).
func crashSweep(t *testing.T, base *vfs.MemFS, purge func(vfs.FS) error, finish func(*vfs.MemFS, string)) int {
	t.Helper()
	crashes := 0
	for k := int64(0); ; k++ {
		fsys := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		var crashed *vfs.MemFS
		seen := int64(0)
		errCrash := errors.New("crashed")
		rng := rand.New(rand.NewPCG(uint64(k), 3))
		inj := vfs.NewInjector(fsys, 0, -1).Hook(vfs.Hook{Ops: vfs.WriteOps, Before: func(op vfs.Op, path string) error {
			if crashed != nil {
				return errCrash // the process is gone: nothing more happens
			}
			if seen == k {
				crashed = fsys.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: rng.IntN(101), Rand: rand.New(rand.NewPCG(uint64(k), 4))})
				return errCrash
			}
			seen++
			return nil
		}})
		err := purge(inj)
		if crashed == nil {
			if err != nil {
				t.Fatalf("run without crash: %v", err)
			}
			break
		}
		crashes++
		finish(crashed, fmt.Sprintf("crash before write operation %d", k))
	}
	if crashes < 10 {
		t.Fatalf("only %d crash points", crashes)
	}
	return crashes
}

// memCopy copies the files of the directories subs of src (on disk) into
// a new memory file system under dst, synced.
func memCopy(t *testing.T, src, dst string, subs ...string) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	for _, sub := range subs {
		names, err := vfs.Default.List(filepath.Join(src, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.MkdirAll(dst + "/" + sub); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, err := vfs.ReadFile(vfs.Default, filepath.Join(src, sub, n))
			if err != nil {
				t.Fatal(err)
			}
			f, err := mem.Create(dst + "/" + sub + "/" + n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(b, 0); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	return mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
}

// The crash sweep on real Aeron files: a copy of three-members member 0
// (its own live source) in memory, crashed before every write operation
// of its purge; after each crash it gathers as a normal restart with its
// recovery plan accepted, and a new purge completes it (A = C = 786,432,
// recordings 1 and 2 deleted).
func TestPurgeThreeMembersCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep")
	}
	src := filepath.Join(fixtures.AeronThreeMembers(t), "member-0")
	base := memCopy(t, src, "m0", "cluster", "archive")
	m := Member{ID: 0, Dir: "m0"}
	gopts := Options{Services: 1, Live: "m0/archive", Commit: -1}
	popts := func(ms int64) PurgeOptions {
		return PurgeOptions{Gather: gopts, Plan: PlanOptions{Cutoff: -1}, Clock: fixedClock(ms)}
	}
	later := gopts
	later.NowMs = testEpochMs + 3_600_000
	n := crashSweep(t, base, func(fsys vfs.FS) error { _, err := Purge(fsys, []Member{m}, popts(testEpochMs)); return err },
		func(fsys *vfs.MemFS, what string) {
			checkRestartable(t, fsys, m, later, what)
			res, err := Purge(fsys, []Member{m}, popts(later.NowMs))
			if err != nil {
				t.Fatalf("%s: the purge after it: %v\n%+v", what, err, res)
			}
			checkPurged(t, fsys, "m0", 786432, []int64{1, 2}, what+", purged again")
			checkRestartable(t, fsys, m, later, what+", purged again")
		})
	t.Logf("%d crash points", n)
}

func (mp *MemberPurge) hasStep(name string) bool {
	return slices.ContainsFunc(mp.Steps, func(s PurgeStep) bool { return s.Step == name })
}

func sorted(ids []int64) []int64 { return slices.Sorted(slices.Values(ids)) }

func mustGather(t *testing.T, fsys vfs.FS, m Member) *Facts {
	t.Helper()
	f, err := Gather(fsys, m, Options{Services: 1, Commit: -1, NowMs: testEpochMs})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Several members go one at a time, in order: members 0 and 1 of
// three-members (member 0 the live source) are both purged; when member
// 1's purge fails (its first write fails), member 0 is purged, member 1 is
// as it was, and the purge after it completes member 1.
func TestPurgeMembersInTurn(t *testing.T) {
	src := fixtures.AeronThreeMembers(t)
	mem := memCopy(t, filepath.Join(src, "member-0"), "m0", "cluster", "archive")
	m1 := memCopy(t, filepath.Join(src, "member-1"), "m1", "cluster", "archive")
	for _, sub := range []string{"cluster", "archive"} {
		names, _ := m1.List("m1/" + sub)
		mem.MkdirAll("m1/" + sub)
		for _, n := range names {
			b, _ := vfs.ReadFile(m1, "m1/"+sub+"/"+n)
			f, _ := mem.Create("m1/" + sub + "/" + n)
			f.WriteAt(b, 0)
			f.Close()
		}
	}
	base := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	members := []Member{{0, "m0"}, {1, "m1"}}
	opts := PurgeOptions{Gather: Options{Services: 1, Live: "m0/archive", Commit: -1}, Plan: PlanOptions{Cutoff: -1}, Clock: fixedClock(testEpochMs)}

	fsys := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	res, err := Purge(fsys, members, opts)
	if err != nil || res.Members[0].Status != StatusPurged || res.Members[1].Status != StatusPurged {
		t.Fatalf("purge: %v %+v", err, res)
	}
	for _, m := range members {
		checkPurged(t, fsys, m.Dir, 786432, []int64{1, 2}, m.Dir)
	}

	fsys = base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
	want := digests(t, fsys, "m1")
	failed := false
	inj := vfs.NewInjector(fsys, 0, -1).Hook(vfs.Hook{Ops: vfs.WriteOps, Before: func(op vfs.Op, path string) error {
		if !failed && len(path) > 3 && path[:3] == "m1/" {
			failed = true
			return vfs.ErrInjected
		}
		return nil
	}})
	res, err = Purge(inj, members, opts)
	if !errors.Is(err, vfs.ErrInjected) || res.Members[0].Status != StatusPurged || res.Members[1].Status != StatusFailed {
		t.Fatalf("purge with member 1 failing: %v %+v", err, res.Members)
	}
	checkPurged(t, fsys, "m0", 786432, []int64{1, 2}, "m0")
	if d := diff(want, digests(t, fsys, "m1")); len(d) > 0 {
		t.Fatalf("member 1 changed: %v", d)
	}
	res, err = Purge(fsys, members, opts)
	if err != nil || res.Members[0].Status != StatusNothing || res.Members[1].Status != StatusPurged {
		t.Fatalf("the purge after it: %v %+v", err, res.Members)
	}
	checkPurged(t, fsys, "m1", 786432, []int64{1, 2}, "m1")
}
