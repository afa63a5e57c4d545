package retention

import (
	"slices"
	"testing"
)

// The executor's own refusals (PurgeRefusalRules) re-check, just before
// anything is written, what MakePlan has already ensured on the same
// files: the archive's detach rules on the boundary the plan chose
// (RefuseArchiveRefusesDetach) and the node's geometry read from its
// latest engine snapshot and log descriptor (RefuseNoRestartGeometry). A
// directory the plan approves does not reach them (only files changed
// between the plan and the purge do), so they are tested here on a plan
// that disagrees with the files: a start past the log's stop, a log
// recording the catalog does not hold.
func TestPurgePreflightRefusals(t *testing.T) {
	mem := nodeFS(t)
	m := Member{ID: 0, Dir: "n"}
	job := func(tamper func(f *Facts, mp *MemberPlan)) *purgeJob {
		t.Helper()
		f := mustGather(t, mem, m)
		mp := MakePlan([]*Facts{f}, PlanOptions{Cutoff: -1}).Members[0]
		if !mp.Approved {
			t.Fatalf("the test node's plan is refused: %+v", mp.Refusals)
		}
		tamper(f, &mp)
		j := &purgeJob{fs: mem, m: m, f: f, mp: &mp, opts: nodePurgeOptions(testEpochMs), out: MemberPurge{Kind: KindMatchlog}}
		j.preflight()
		return j
	}
	refused := func(j *purgeJob) []string {
		var out []string
		for _, r := range j.mp.Refusals {
			out = append(out, r.Rule)
		}
		return out
	}
	if j := job(func(*Facts, *MemberPlan) {}); len(j.mp.Refusals) != 0 || !j.mp.Approved || j.geometry == nil {
		t.Fatalf("the plan as made: refusals %v, geometry %v", refused(j), j.geometry)
	}
	j := job(func(f *Facts, mp *MemberPlan) {
		mp.Manifest.ProposedStart = Boundary(f.P, f.SegmentLength) + 4*f.SegmentLength
	})
	if got := refused(j); !slices.Equal(got, []string{RefuseArchiveRefusesDetach}) || j.mp.Approved {
		t.Fatalf("a start past the stop: refusals %v, approved %v", got, j.mp.Approved)
	}
	j = job(func(f *Facts, _ *MemberPlan) { f.LogRecordingID = 999 })
	if got := refused(j); !slices.Contains(got, RefuseNoRestartGeometry) || j.mp.Approved {
		t.Fatalf("a log recording the catalog does not hold: refusals %v, approved %v", got, j.mp.Approved)
	}
}
