package retention

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster/backup"
)

// set returns a complete set at pos (consensus module and one service),
// loadable unless broken.
func set(pos int64, broken bool) Set {
	r := []Recording{{RecordingID: 100 + pos, ServiceID: -1, Exists: true, Loadable: true, Bytes: 352},
		{RecordingID: 200 + pos, ServiceID: 0, Exists: true, Loadable: !broken, Bytes: 1000}}
	if broken {
		r[1].Problem = "does not load"
	}
	return Set{LogPosition: pos, Complete: true, Loadable: !broken, Recordings: r, MissingServices: []int32{}}
}

// facts is a stopped member with its log [a, p] in segments of 64 KiB.
func facts(a, p int64, sets ...Set) *Facts {
	f := &Facts{ID: 0, Services: 1, LocalState: true, LogRecordingID: 0, LogInCatalog: true, SegmentLength: 65536,
		A: a, P: p, L: -1, H: -1, B: -1, SetServiceCount: 1, MarkMemberID: -1, ClusterID: 0, Sets: sets}
	for base := a - a%65536; base < p; base += 65536 {
		f.LogFiles = append(f.LogFiles, SegmentFile{Name: "0-x.rec", Base: base, Size: 65536})
	}
	for i := range f.Sets {
		f.Sets[i].Usable = a <= f.Sets[i].LogPosition && f.Sets[i].LogPosition <= p
	}
	return f
}

func live(f *Facts, l, h int64) *Facts { f.L, f.H, f.LiveGiven = l, h, true; return f }

// Every row of seeds/000's table, from facts built by hand, with the
// numbers that decide it.
func TestDecideTable(t *testing.T) {
	incomplete := set(300000, false)
	incomplete.Complete, incomplete.Recordings, incomplete.MissingServices = false, incomplete.Recordings[:1], []int32{0}
	empty := func() *Facts {
		return &Facts{ID: 3, Services: 1, LogRecordingID: -1, A: -1, P: -1, B: -1, SetServiceCount: -1, MarkMemberID: -1}
	}
	for _, c := range []struct {
		name     string
		f        *Facts
		verdict  string
		fallback int64
		failed   []string
	}{
		{"normal", live(facts(0, 400000, set(200000, false)), 0, 500000), NormalRestart, -1, nil},
		{"normal, no live source", facts(0, 400000, set(200000, false)), NormalRestart, -1, nil},
		{"L > P", live(facts(0, 400000, set(200000, false)), 450000, 500000), Rebuild, -1, []string{CheckCatchUp}},
		{"log purged past S", live(facts(262144, 400000, set(200000, false)), 0, 500000), Rebuild, -1, []string{CheckReplayRange}},
		{"no snapshot, log from 0", live(facts(0, 400000), 0, 500000), FullReplay, -1, []string{CheckSetCovers}},
		{"a set missing a service is nothing", live(facts(0, 400000, incomplete), 0, 400000), FullReplay, -1, []string{CheckSetCovers}},
		{"no snapshot, log from 0, L > P", live(facts(0, 400000), 450000, 500000), Rebuild, -1, []string{CheckSetCovers, CheckCatchUp}},
		{"no snapshot, log after 0", live(facts(131072, 400000), 0, 500000), RebuildUnlessRebased, -1, []string{CheckSetCovers, CheckReplayRange}},
		{"latest does not load, prior retained", live(facts(0, 400000, set(300000, true), set(100000, false)), 0, 400000), InvalidateLatestSnapshot, 100000, []string{CheckSnapshotLoads}},
		{"latest does not load, no prior, log from 0", live(facts(0, 400000, set(300000, true)), 0, 400000), InvalidateLatestSnapshot, 0, []string{CheckSnapshotLoads}},
		{"latest does not load, prior's log purged", live(facts(196608, 400000, set(300000, true), set(100000, false)), 0, 400000), Rebuild, -1, []string{CheckSnapshotLoads, CheckReplayRange}},
		{"empty disk, live from 0", live(empty(), 0, 500000), EmptyDiskRestart, -1, nil},
		{"empty disk, live purged", live(empty(), 655360, 500000), RebuildFromImage, -1, nil},
		{"empty disk, no live source", empty(), RebuildFromImage, -1, nil},
	} {
		v := Decide(c.f)
		var failed []string
		for _, ch := range v.Checks {
			if !ch.Passed {
				failed = append(failed, ch.Name)
			}
		}
		if v.Verdict != c.verdict || v.Fallback != c.fallback || !slices.Equal(failed, c.failed) || len(v.Reasons) == 0 || len(v.Costs) != 4 {
			t.Errorf("%s: verdict %s fallback %d failed %v reasons %v; want %s %d %v", c.name, v.Verdict, v.Fallback, failed, v.Reasons, c.verdict, c.fallback, c.failed)
		}
	}
	// Costs: P-S, P-A, H-P, H-B.
	v := Decide(live(facts(0, 400000, set(200000, false)), 0, 500000))
	want := []Cost{{Path: "local-replay", Bytes: 200000, Valid: true, Seconds: -1}, {Path: "full-local-replay", Bytes: 400000, Valid: true, Seconds: -1},
		{Path: "catch-up", Bytes: 100000, Valid: true, Seconds: -1}}
	if !slices.Equal(v.Costs[:3], want) || v.Costs[3].Valid || v.Costs[3].Bytes != -1 {
		t.Errorf("costs %+v", v.Costs)
	}
}

// randomFacts is a member with random positions, sets and segment size.
func randomFacts(r *rand.Rand, id int32) *Facts {
	seg := int64(65536) << r.IntN(4)
	p := r.Int64N(20 * seg)
	a := int64(0)
	if r.IntN(3) > 0 && p > 0 {
		a = Boundary(r.Int64N(p+1), seg)
	}
	var sets []Set
	for range r.IntN(5) {
		pos := r.Int64N(p + seg) // some past P, some before A
		s := set(pos, r.IntN(6) == 0)
		if r.IntN(8) == 0 {
			s.Complete, s.Loadable = false, false
		}
		sets = append(sets, s)
	}
	slices.SortFunc(sets, func(x, y Set) int { return int(sign(y.LogPosition - x.LogPosition)) })
	f := facts(a, p, sets...)
	f.ID = id
	if r.IntN(10) == 0 {
		f.MissingSegments = []string{"0-0.rec"}
	}
	return f
}

// FuzzPlan: over random members (positions, sets, segment sizes), live
// source, cutoff and choices, an approved plan never has C > S, never
// cuts a member promised a normal restart, and always lands on a segment
// boundary; a requested cutoff is rounded down, never up.
func FuzzPlan(f *testing.F) {
	for i := range 8 {
		f.Add(uint64(i), int64(-1), uint8(2), false)
	}
	f.Add(uint64(99), int64(300000), uint8(1), true)
	f.Fuzz(func(t *testing.T, seed uint64, cutoff int64, keep uint8, postpone bool) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		n := 1 + r.IntN(4)
		var members []*Facts
		for i := range n {
			members = append(members, randomFacts(r, int32(i)))
		}
		l := int64(0)
		if r.IntN(2) == 0 {
			l = members[0].A
		}
		for _, m := range members {
			live(m, l, members[0].P)
		}
		opts := PlanOptions{Keep: int(keep % 4), Cutoff: cutoff, Postpone: postpone}
		if r.IntN(4) == 0 {
			opts.Withdraw = []int32{int32(r.IntN(n))}
		}
		// Model B: random backups and drills.
		now := drillNow.UnixMilli()
		if r.IntN(3) == 0 {
			opts.Model, opts.NowMs = ModelB, now
			for _, m := range members {
				if r.IntN(4) > 0 {
					age := time.Duration(r.IntN(10*24)) * time.Hour
					var d *backup.DrillRecord
					if r.IntN(4) > 0 {
						d = drillAt(drillNow.Add(-age), r.IntN(4) > 0)
					}
					withBackup(m, r.Int64N(m.P+2)-1, d, d)
				}
			}
		}
		plan := MakePlan(members, opts)
		for i, mp := range plan.Members {
			f := members[i]
			m := mp.Manifest
			if mp.Approved && opts.Model == ModelB {
				d := f.LastDrill
				if f.B < 0 || d == nil || !d.OK || now-d.UnixMs > DefaultMaxDrillAge.Milliseconds() || (m.ProposedStart != f.A && m.ProposedStart > f.B) {
					t.Fatalf("member %d: approved under model B with B %d, drill %+v, proposed start %d (A %d)", i, f.B, d, m.ProposedStart, f.A)
				}
			}
			if !mp.Approved {
				if len(mp.Refusals) == 0 {
					t.Fatalf("member %d: not approved, no refusal", i)
				}
				continue
			}
			if len(mp.Refusals) > 0 {
				t.Fatalf("member %d: approved with refusals %+v", i, mp.Refusals)
			}
			C := m.ProposedStart
			if C == f.A {
				if len(m.Detach) != 0 {
					t.Fatalf("member %d: nothing moves but %v detached", i, m.Detach)
				}
				continue
			}
			S := PositionsOf(f).S
			if S < 0 || C > S || len(m.RetainedSets) == 0 || C > m.RetainedSets[len(m.RetainedSets)-1] {
				t.Fatalf("member %d: C %d, S %d, retained %v", i, C, S, m.RetainedSets)
			}
			if C%f.SegmentLength != 0 || C < f.A {
				t.Fatalf("member %d: C %d not a boundary of %d after A %d", i, C, f.SegmentLength, f.A)
			}
			if cutoff >= 0 && C > cutoff {
				t.Fatalf("member %d: C %d rounded up from --cutoff %d", i, C, cutoff)
			}
			for j, q := range members {
				d := Decide(q)
				if protects(d.Verdict) && !slices.Contains(opts.Withdraw, q.ID) && q.P < C {
					t.Fatalf("member %d: C %d cuts protected member %d at P %d", i, C, j, q.P)
				}
			}
			for _, file := range m.Detach {
				if file.Base >= C {
					t.Fatalf("member %d: detaches %+v at or after C %d", i, file, C)
				}
			}
			kept := map[int64]bool{}
			for _, p := range m.RetainedSets {
				kept[p] = true
			}
			for _, d := range m.DeleteSnapshots {
				if kept[d.LogPosition] {
					t.Fatalf("member %d: deletes retained set %d", i, d.LogPosition)
				}
			}
		}
	})
}
