package retention

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// gatherThree gathers the three members of the Aeron fixture with member
// 0's archive as the live source (FACTS.md: "Live source for L and H:
// member 0").
func gatherThree(t *testing.T) []*Facts {
	t.Helper()
	d := fixtures.AeronThreeMembers(t)
	var out []*Facts
	for i := range 3 {
		f, err := Gather(vfs.Default, Member{ID: int32(i), Dir: filepath.Join(d, fmt.Sprintf("member-%d", i))},
			Options{Services: 1, Live: filepath.Join(d, "member-0", "archive"), Commit: -1})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// The positions, snapshot sets, loadability and verdicts of FACTS.md's
// "Ground truth per member".
func TestThreeMembersPositionsAndVerdicts(t *testing.T) {
	members := gatherThree(t)
	want := []struct {
		pos     Positions
		sets    []int64
		usable  []bool
		hashes  []string
		verdict string
		costs   [3]int64 // P-S, P-A, H-P
	}{
		{Positions{ID: 0, S: 1101600, A: 655360, P: 1258560, L: 655360, H: 1258560, B: -1, C: 1048576},
			[]int64{1101600, 865568, 314464}, []bool{true, true, false}, []string{"c7faa191a330651a", "40561983e618ef0c", "6c84a1d4c4e9f078"},
			NormalRestart, [3]int64{156960, 603200, 0}},
		{Positions{ID: 1, S: 1101600, A: 655360, P: 1258560, L: 655360, H: 1258560, B: -1, C: 1048576},
			[]int64{1101600, 865568, 314464}, []bool{true, true, false}, []string{"c7faa191a330651a", "40561983e618ef0c", "6c84a1d4c4e9f078"},
			NormalRestart, [3]int64{156960, 603200, 0}},
		{Positions{ID: 2, S: 314464, A: 0, P: 551136, L: 655360, H: 1258560, B: -1, C: 262144},
			[]int64{314464}, []bool{true}, []string{"6c84a1d4c4e9f078"},
			Rebuild, [3]int64{236672, 551136, 707424}},
	}
	for i, f := range members {
		w := want[i]
		got := PositionsOf(f)
		snaps := got.Snapshots
		got.Snapshots = nil
		if fmt.Sprint(got) != fmt.Sprint(w.pos) {
			t.Errorf("member %d: positions %+v, want %+v", i, got, w.pos)
		}
		var sets []int64
		for j, s := range snaps {
			sets = append(sets, s.LogPosition)
			if !s.Complete || !s.Loadable || len(s.Recordings) != 2 {
				t.Errorf("member %d: set at %d: complete %v loadable %v, %d recordings", i, s.LogPosition, s.Complete, s.Loadable, len(s.Recordings))
				continue
			}
			if j < len(w.usable) && s.Usable != w.usable[j] {
				t.Errorf("member %d: set at %d: locally usable %v, want %v", i, s.LogPosition, s.Usable, w.usable[j])
			}
			svc := s.Recordings[1]
			if svc.ServiceID != 0 || !svc.Engine || j >= len(w.hashes) || svc.StateHash != w.hashes[j] {
				t.Errorf("member %d: set at %d: service recording %+v, want an engine snapshot with hash %v", i, s.LogPosition, svc, w.hashes)
			}
		}
		if !slices.Equal(sets, w.sets) {
			t.Errorf("member %d: sets %v, want %v", i, sets, w.sets)
		}
		v := Decide(f)
		if v.Verdict != w.verdict {
			t.Errorf("member %d: verdict %s (%v), want %s", i, v.Verdict, v.Reasons, w.verdict)
		}
		for _, c := range v.Checks {
			if !c.Passed && c.Name != CheckCatchUp {
				t.Errorf("member %d: check %s failed: %s", i, c.Name, c.Detail)
			}
			if c.Name == CheckCatchUp && c.Passed != (i != 2) {
				t.Errorf("member %d: catch-up check %+v", i, c)
			}
		}
		for j, path := range []string{"local-replay", "full-local-replay", "catch-up"} {
			if v.Costs[j].Path != path || v.Costs[j].Bytes != w.costs[j] {
				t.Errorf("member %d: cost %+v, want %s = %d", i, v.Costs[j], path, w.costs[j])
			}
		}
		if i == 2 && v.Costs[2].Valid {
			t.Errorf("member 2: catch-up marked valid: %+v", v.Costs[2])
		}
	}
}

// FACTS.md "A safe purge of member 0 now": keeping two generations C =
// 786,432, detaching 0-655360.rec (131,072 bytes), set 1 (recordings 1 and
// 2) proposed for deletion; the same for member 1; keeping one, C =
// 1,048,576 with three files; member 2's own C 262,144; member 2 reported
// behind the live source, not protected.
func TestThreeMembersPlan(t *testing.T) {
	members := gatherThree(t)
	for _, c := range []struct {
		keep   int
		member int
		c      int64
		files  []string
		bytes  int64
		delete []int64 // recording ids
	}{
		{2, 0, 786432, []string{"0-655360.rec"}, 131072, []int64{1, 2}},
		{2, 1, 786432, []string{"0-655360.rec"}, 131072, []int64{1, 2}},
		{1, 0, 1048576, []string{"0-655360.rec", "0-786432.rec", "0-917504.rec"}, 3 * 131072, []int64{1, 2, 3, 4}},
		{2, 2, 262144, []string{"0-0.rec", "0-131072.rec"}, 2 * 131072, nil},
	} {
		p := MakePlan(members, PlanOptions{Keep: c.keep, Cutoff: -1})
		mp := p.Members[c.member]
		m := mp.Manifest
		if !mp.Approved || len(mp.Refusals) > 0 {
			t.Errorf("keep %d member %d: refused: %+v", c.keep, c.member, mp.Refusals)
		}
		var names []string
		for _, f := range m.Detach {
			names = append(names, f.Name)
		}
		var del []int64
		for _, d := range m.DeleteSnapshots {
			for _, r := range d.Recordings {
				del = append(del, r.RecordingID)
			}
		}
		slices.Sort(del)
		if m.CMember != c.c || m.ProposedStart != c.c || !slices.Equal(names, c.files) || m.DetachBytes != c.bytes || !slices.Equal(del, c.delete) {
			t.Errorf("keep %d member %d: C %d, proposed %d, detach %v (%d bytes), delete %v; want C %d, %v (%d), delete %v",
				c.keep, c.member, m.CMember, m.ProposedStart, names, m.DetachBytes, del, c.c, c.files, c.bytes, c.delete)
		}
		if !slices.Equal(m.BehindMembers, []int32{2}) || !slices.Equal(m.ProtectedMembers, []int32{0, 1}) || m.OldestProtectedPosition != 1258560 {
			t.Errorf("member %d: protected %v (oldest %d), behind %v; want 0 1 (1258560), 2", c.member, m.ProtectedMembers, m.OldestProtectedPosition, m.BehindMembers)
		}
		if m.LogRecordingID != 0 || m.ClusterID != 0 || m.MemberID != int32(c.member) {
			t.Errorf("manifest ids %+v", m)
		}
	}
	// --cutoff: past S refused; after the kept generation refused; a
	// position inside a segment rounded down.
	for _, c := range []struct {
		cutoff int64
		rule   string
		start  int64
	}{
		{1200000, RefuseCutoffAfterS, 0},
		{1000000, RefuseCutoffDropsKept, 0},
		{800000, "", 786432},
		{700000, "", 655360},
	} {
		mp := MakePlan(members, PlanOptions{Cutoff: c.cutoff}).Members[0]
		switch {
		case c.rule == "" && (!mp.Approved || mp.Manifest.ProposedStart != c.start):
			t.Errorf("--cutoff %d: approved %v start %d refusals %+v, want start %d", c.cutoff, mp.Approved, mp.Manifest.ProposedStart, mp.Refusals, c.start)
		case c.rule != "" && (mp.Approved || !slices.ContainsFunc(mp.Refusals, func(r Refusal) bool { return r.Rule == c.rule })):
			t.Errorf("--cutoff %d: approved %v refusals %+v, want %s", c.cutoff, mp.Approved, mp.Refusals, c.rule)
		}
	}
	if mp := MakePlan(members, PlanOptions{Model: ModelB, Cutoff: -1}).Members[0]; mp.Approved || mp.Refusals[0].Rule != RefuseModelBNoBackup {
		t.Errorf("model B: %+v", mp.Refusals)
	}
}

// single-node-1 (its README): one set at 115,744, log [0, 231,264], the
// node its own live source: a normal restart; C = 0, nothing to detach.
func TestSingleNodePositions(t *testing.T) {
	d := fixtures.AeronSingleNode(t)
	f, err := Gather(vfs.Default, Member{ID: 0, Dir: d}, Options{Services: 1, Live: filepath.Join(d, "archive"), Commit: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := PositionsOf(f)
	if p.S != 115744 || p.A != 0 || p.P != 231264 || p.L != 0 || p.H != 231264 || p.B != -1 || p.C != 0 {
		t.Errorf("positions %+v", p)
	}
	if len(p.Snapshots) != 1 || !p.Snapshots[0].Loadable || p.Snapshots[0].Recordings[1].Engine {
		t.Errorf("sets %+v: want one loadable set whose service snapshot is not an engine snapshot", p.Snapshots)
	}
	if v := Decide(f); v.Verdict != NormalRestart {
		t.Errorf("verdict %s %v", v.Verdict, v.Reasons)
	}
	mp := MakePlan([]*Facts{f}, PlanOptions{Cutoff: -1}).Members[0]
	if !mp.Approved || mp.Manifest.ProposedStart != 0 || len(mp.Manifest.Detach) != 0 || len(mp.Manifest.DeleteSnapshots) != 0 {
		t.Errorf("plan %+v", mp)
	}
}

// Presence in recording.log is not proof: member 2's only set, with its
// service snapshot's recording cut short (the file ends inside a frame), is
// not loadable; S becomes -1; the verdict falls back to the whole log from
// 0 (invalidate-latest-snapshot) without a live source, and is a rebuild
// against member 0 (L > P). A frame header damaged in the consensus
// module's recording is found the same way. --commit sets H.
func TestThreeMembersDamagedSnapshot(t *testing.T) {
	src := filepath.Join(fixtures.AeronThreeMembers(t), "member-2")
	for _, c := range []struct {
		file   string
		damage func(b []byte) []byte
		want   string
	}{
		{"1-0.rec", func(b []byte) []byte { return b[:20000] }, "does not read back whole"},
		{"2-0.rec", func(b []byte) []byte { b[96+6] ^= 0xff; return b }, "does not read back whole"},
	} {
		d := filepath.Join(t.TempDir(), "member-2")
		fixtures.CopyDirs(t, src, d, "cluster", "archive")
		p := filepath.Join(d, "archive", c.file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, c.damage(b), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Gather(vfs.Default, Member{ID: 2, Dir: d}, Options{Services: 1, Commit: 1200000})
		if err != nil {
			t.Fatal(err)
		}
		pos := PositionsOf(f)
		var problems []string
		for _, r := range f.Sets[0].Recordings {
			if r.Problem != "" {
				problems = append(problems, r.Problem)
			}
		}
		if pos.S != -1 || pos.C != -1 || pos.H != 1200000 || f.Sets[0].Loadable || len(problems) != 1 || !strings.Contains(problems[0], c.want) {
			t.Errorf("%s damaged: S %d C %d H %d, problems %v", c.file, pos.S, pos.C, pos.H, problems)
		}
		if v := Decide(f); v.Verdict != InvalidateLatestSnapshot || v.Fallback != 0 {
			t.Errorf("%s damaged, no live source: %s (fallback %d) %v", c.file, v.Verdict, v.Fallback, v.Reasons)
		}
		f, err = Gather(vfs.Default, Member{ID: 2, Dir: d}, Options{Services: 1, Live: filepath.Join(src, "..", "member-0", "archive"), Commit: -1})
		if err != nil {
			t.Fatal(err)
		}
		if v := Decide(f); v.Verdict != Rebuild {
			t.Errorf("%s damaged, live member 0: %s %v", c.file, v.Verdict, v.Reasons)
		}
	}
}
