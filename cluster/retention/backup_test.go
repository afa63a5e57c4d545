package retention

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/backup"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

var drillNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func drillAt(t time.Time, ok bool) *backup.DrillRecord {
	d := &backup.DrillRecord{Date: t.UTC().Format(time.RFC3339), UnixMs: t.UnixMilli(), OK: ok,
		ReplayPositionsPerSec: 1e6, RestoreBytesPerSec: 1e7}
	if !ok {
		d.Why = "the restored node's state hash differs"
	}
	return d
}

// withBackup gives f a verified backup at b with last drill d (the last
// good one good).
func withBackup(f *Facts, b int64, d, good *backup.DrillRecord) *Facts {
	f.BackupDir, f.B, f.BackupBytes, f.LastDrill, f.LastGoodDrill = "bk", b, 5_000_000, d, good
	return f
}

func rulesOf(mp MemberPlan) []string {
	var out []string
	for _, r := range mp.Refusals {
		out = append(out, r.Rule)
	}
	return out
}

// Model B's backup and drill rules, on facts built by hand.
func TestModelBRules(t *testing.T) {
	fresh := drillAt(drillNow.Add(-time.Hour), true)
	failed := drillAt(drillNow.Add(-time.Hour), false)
	old := drillAt(drillNow.Add(-8*24*time.Hour), true)
	base := func() *Facts { return live(facts(0, 400000, set(300000, false), set(200000, false)), 0, 400000) }
	noDir := base()
	noImage := base()
	noImage.BackupDir, noImage.BackupProblem = "bk", "backup: no manifest"
	for _, c := range []struct {
		name   string
		f      *Facts
		model  string
		maxAge time.Duration
		rules  []string
	}{
		{"fresh good drill", withBackup(base(), 350000, fresh, fresh), ModelB, 0, nil},
		{"no backup given", noDir, ModelB, 0, []string{RefuseModelBNoBackup}},
		{"no verified image", noImage, ModelB, 0, []string{RefuseModelBNoBackup}},
		{"never drilled", withBackup(base(), 350000, nil, nil), ModelB, 0, []string{RefuseModelBUntested}},
		{"last drill failed", withBackup(base(), 350000, failed, old), ModelB, 0, []string{RefuseModelBDrillFailed}},
		{"stale drill", withBackup(base(), 350000, old, old), ModelB, 0, []string{RefuseModelBDrillStale}},
		{"stale by default, fresh within 30 days", withBackup(base(), 350000, old, old), ModelB, 30 * 24 * time.Hour, nil},
		{"backup before the cutoff", withBackup(base(), 150000, fresh, fresh), ModelB, 0, []string{RefuseModelBBackupBehindC}},
		{"model A ignores the backup", withBackup(base(), 350000, failed, nil), ModelA, 0, nil},
	} {
		plan := MakePlan([]*Facts{c.f}, PlanOptions{Model: c.model, Cutoff: -1, MaxDrillAge: c.maxAge, NowMs: drillNow.UnixMilli()})
		mp := plan.Members[0]
		if got := rulesOf(mp); !slices.Equal(got, c.rules) || mp.Approved != (len(c.rules) == 0) {
			t.Errorf("%s: refusals %v (approved %v), want %v; %+v", c.name, got, mp.Approved, c.rules, mp.Refusals)
		}
		if mp.Manifest.BackupPosition != c.f.B {
			t.Errorf("%s: manifest backup position %d, want %d", c.name, mp.Manifest.BackupPosition, c.f.B)
		}
	}
	// The manifest names the last passed drill and a failed newest one.
	mp := MakePlan([]*Facts{withBackup(base(), 350000, failed, old)}, PlanOptions{Model: ModelB, Cutoff: -1, NowMs: drillNow.UnixMilli()}).Members[0]
	if mp.Manifest.LastDrill != old.Date || !strings.Contains(mp.Manifest.LastDrillFailed, failed.Why) || mp.Manifest.BackupDir != "bk" {
		t.Errorf("manifest: last drill %q, failed %q, dir %q", mp.Manifest.LastDrill, mp.Manifest.LastDrillFailed, mp.Manifest.BackupDir)
	}
}

// The costs in seconds at the last passed drill's throughputs.
func TestCostSeconds(t *testing.T) {
	good := drillAt(drillNow, true)
	v := Decide(withBackup(live(facts(0, 400000, set(300000, false)), 0, 500000), 350000, good, good))
	want := map[string][2]float64{ // bytes, seconds
		"local-replay":      {100000, 0.1},
		"full-local-replay": {400000, 0.4},
		"catch-up":          {100000, 0.1},
		"backup-tail":       {150000, 0.15 + 0.5},
	}
	for _, c := range v.Costs {
		w := want[c.Path]
		if float64(c.Bytes) != w[0] || c.Seconds < w[1]-1e-9 || c.Seconds > w[1]+1e-9 || !c.Valid {
			t.Errorf("%s: %d bytes, %v s, valid %v (%s); want %v", c.Path, c.Bytes, c.Seconds, c.Valid, c.Why, w)
		}
	}
	v = Decide(live(facts(0, 400000, set(300000, false)), 0, 500000))
	for _, c := range v.Costs {
		if c.Seconds != -1 {
			t.Errorf("%s without a drill: %v s", c.Path, c.Seconds)
		}
	}
	// Rebuild from an image names the backup.
	e := withBackup(&Facts{ID: 0, Services: 1, LogRecordingID: -1, A: -1, P: -1, B: -1, SetServiceCount: -1, MarkMemberID: -1}, 350000, good, good)
	live(e, 200000, 500000)
	if v := Decide(e); v.Verdict != RebuildFromImage || !strings.Contains(strings.Join(v.Reasons, "\n"), "backup image in bk (B = 350000") {
		t.Errorf("rebuild from image: %s %v", v.Verdict, v.Reasons)
	}
}

// nodeWithSnapshots writes a stopped node with two snapshot sets and log
// after the second.
func nodeWithSnapshots(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	g := enginetest.NewGen(5, enginetest.GenConfig{})
	var clock int64
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: svc, TermLength: 64 * 1024, SegmentLength: 128 * 1024, FileSyncLevel: 1,
		SnapshotMode: cluster.StopTheWorld, FileIoMaxLength: 1 << 20, MaxBatch: 64, Clock: func() int64 { clock += 1000; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := n.Connect("aeron:ipc", 102)
	if err != nil {
		t.Fatal(err)
	}
	var c engine.Command
	var buf []byte
	submit := func(k int) {
		for range k {
			g.Next(&c)
			for c.Kind < engine.CmdDefineInstrument || c.Kind > engine.CmdMarkPrice {
				g.Next(&c)
			}
			if buf, err = wire.AppendCommand(buf[:0], &c); err != nil {
				t.Fatal(err)
			}
			if err := n.Offer(sess, buf); err != nil {
				t.Fatal(err)
			}
		}
		for {
			w, err := n.DoWork()
			if err != nil {
				t.Fatal(err)
			}
			if w == 0 && n.Pending() == 0 {
				return
			}
			runtime.Gosched()
		}
	}
	submit(2000)
	if err := cluster.TakeSnapshot(n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	submit(2000)
	if err := cluster.TakeSnapshot(n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	submit(500)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Model B over real directories: Gather reads B from the manifest and the
// drills from the drill log; the plan is approved after a fresh good
// drill and refused without a backup, after a failed drill and with a
// stale one.
func TestModelBFromDirectories(t *testing.T) {
	dir := nodeWithSnapshots(t)
	bdir := filepath.Join(t.TempDir(), "bk")
	m, err := backup.Create(backup.Options{From: dir, To: bdir})
	if err != nil {
		t.Fatal(err)
	}
	gather := func(b string) *Facts {
		t.Helper()
		f, err := Gather(vfs.Default, Member{ID: 0, Dir: dir}, Options{Services: 1, Live: filepath.Join(dir, "archive"), Commit: -1, Backup: b})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	plan := func(f *Facts, now time.Time) MemberPlan {
		return MakePlan([]*Facts{f}, PlanOptions{Model: ModelB, Cutoff: -1, NowMs: now.UnixMilli()}).Members[0]
	}
	// Created, never drilled.
	f := gather(bdir)
	if f.B != m.B || f.BackupBytes != m.Bytes || f.LastDrill != nil {
		t.Fatalf("gathered B %d bytes %d drill %+v; manifest B %d bytes %d", f.B, f.BackupBytes, f.LastDrill, m.B, m.Bytes)
	}
	if got := rulesOf(plan(f, time.Now())); !slices.Equal(got, []string{RefuseModelBUntested}) {
		t.Fatalf("never drilled: %v", got)
	}
	if got := rulesOf(plan(gather(""), time.Now())); !slices.Equal(got, []string{RefuseModelBNoBackup}) {
		t.Fatalf("no backup: %v", got)
	}
	// A good drill: approved now, refused eight days later.
	d, err := backup.Drill(backup.DrillOptions{Backup: bdir, WorkDir: filepath.Join(t.TempDir(), "restore")})
	if err != nil {
		t.Fatal(err)
	}
	f = gather(bdir)
	if mp := plan(f, d.Time().Add(time.Minute)); !mp.Approved || mp.Manifest.LastDrill != d.Date || mp.Manifest.BackupPosition != m.B {
		t.Fatalf("after a good drill: approved %v %+v, manifest %+v", mp.Approved, mp.Refusals, mp.Manifest)
	}
	if got := rulesOf(plan(f, d.Time().Add(8*24*time.Hour))); !slices.Equal(got, []string{RefuseModelBDrillStale}) {
		t.Fatalf("stale drill: %v", got)
	}
	v := Decide(f)
	if v.Costs[0].Seconds <= 0 || v.Costs[3].Seconds <= 0 || !v.Costs[3].Valid {
		t.Errorf("costs in seconds after a drill: %+v", v.Costs)
	}
	// A damaged image: the drill fails, the plan is refused.
	names, _ := os.ReadDir(filepath.Join(bdir, "cluster"))
	if len(names) == 0 {
		t.Fatal("no cluster/ in the image")
	}
	p := filepath.Join(bdir, "cluster", "recording.log")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Drill(backup.DrillOptions{Backup: bdir, WorkDir: filepath.Join(t.TempDir(), "restore2")}); !errors.Is(err, backup.ErrDrillFailed) {
		t.Fatalf("drill of a damaged image: %v", err)
	}
	mp := plan(gather(bdir), time.Now())
	if got := rulesOf(mp); !slices.Equal(got, []string{RefuseModelBDrillFailed}) || mp.Manifest.LastDrill != d.Date || mp.Manifest.LastDrillFailed == "" {
		t.Fatalf("after a failed drill: %v, manifest %+v", got, mp.Manifest)
	}
	// A file of the image gone: no B.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if f := gather(bdir); f.B != -1 || !strings.Contains(f.BackupProblem, "recording.log") {
		t.Fatalf("image without its recording.log: B %d, %q", f.B, f.BackupProblem)
	}
}
