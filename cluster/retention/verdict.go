package retention

import (
	"fmt"

	"github.com/matchlog/matchlog/cluster/backup"
)

// The verdicts of seeds/000, one per row of its table (the JSON names are
// part of the CLI's stable output).
const (
	NormalRestart            = "normal-restart"
	Rebuild                  = "rebuild"
	FullReplay               = "full-replay"
	RebuildUnlessRebased     = "rebuild-unless-rebased"
	InvalidateLatestSnapshot = "invalidate-latest-snapshot"
	EmptyDiskRestart         = "empty-disk-restart"
	RebuildFromImage         = "rebuild-from-image"
)

// Verdicts lists every verdict Decide returns, in the order of the rows of
// seeds/000. Whatever enumerates the verdicts (the scenario coverage test,
// documentation checks) reads this list; a new verdict is added here.
var Verdicts = []string{NormalRestart, Rebuild, FullReplay, RebuildUnlessRebased,
	InvalidateLatestSnapshot, EmptyDiskRestart, RebuildFromImage}

// Check names (JSON).
const (
	CheckRecordingsExist = "selected-recordings-exist"
	CheckSetCovers       = "set-covers-every-service"
	CheckReplayRange     = "replay-range-contiguous"
	CheckCountsAgree     = "counts-agree"
	CheckSnapshotLoads   = "snapshot-loads"
	CheckCatchUp         = "catch-up-possible"
)

// Positions are a member's positions (-1: none).
type Positions struct {
	ID int32 `json:"id"`
	S  int64 `json:"S"`
	A  int64 `json:"A"`
	P  int64 `json:"P"`
	L  int64 `json:"L"`
	H  int64 `json:"H"`
	B  int64 `json:"B"`
	C  int64 `json:"C"`
	// Snapshots are the retained sets, newest first.
	Snapshots []Set `json:"snapshots"`
}

// Boundary is the greatest segment boundary ≤ pos (pos itself when it is
// one), -1 for pos < 0 or no segment length.
func Boundary(pos, segmentLength int64) int64 {
	if pos < 0 || segmentLength <= 0 {
		return -1
	}
	return pos - pos%segmentLength
}

// latestLoadable is the index in f.Sets of the newest complete, loadable
// set, -1 if none.
func latestLoadable(f *Facts) int {
	for i, s := range f.Sets {
		if s.Complete && s.Loadable {
			return i
		}
	}
	return -1
}

// latestComplete is the index of the newest complete set, -1 if none.
func latestComplete(f *Facts) int {
	for i, s := range f.Sets {
		if s.Complete {
			return i
		}
	}
	return -1
}

// PositionsOf computes the positions of f.
func PositionsOf(f *Facts) Positions {
	p := Positions{ID: f.ID, S: -1, A: f.A, P: f.P, L: f.L, H: f.H, B: f.B, C: -1, Snapshots: f.Sets}
	if p.Snapshots == nil {
		p.Snapshots = []Set{}
	}
	if i := latestLoadable(f); i >= 0 {
		p.S = f.Sets[i].LogPosition
		p.C = Boundary(p.S, f.SegmentLength)
	}
	return p
}

// Check is one check behind a verdict.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}

// Cost is the work of one recovery path, in bytes of log and, where a
// restore drill recorded throughputs, in seconds.
type Cost struct {
	Path  string `json:"path" doc:"local-replay (P-S), full-local-replay (P-A), catch-up (H-P), backup-tail (H-B)"`
	Bytes int64  `json:"bytes" doc:"-1 when a position it needs does not exist"`
	Valid bool   `json:"valid" doc:"the path can be taken"`
	Why   string `json:"why,omitempty" doc:"why it cannot"`
	// ImageBytes is what backup-tail restores before it replays (the
	// backup image's size); 0 for the other paths.
	ImageBytes int64 `json:"image_bytes" doc:"backup-tail: the image restored first; else 0"`
	// Seconds is Bytes at the last passed drill's replay positions/s (for
	// backup-tail, plus ImageBytes at its restore bytes/s).
	Seconds float64 `json:"seconds" doc:"estimated from the last passed restore drill's throughputs; -1 when none recorded them or Bytes is -1"`
}

// Verdict is the restart-vs-rebuild verdict of a stopped member.
type Verdict struct {
	ID        int32     `json:"id"`
	Verdict   string    `json:"verdict"`
	Reasons   []string  `json:"reasons"`
	Checks    []Check   `json:"checks"`
	Costs     []Cost    `json:"costs"`
	Positions Positions `json:"positions"`
	// Fallback is the log position of the set invalidate-latest-snapshot
	// falls back to (-1: none, or the whole log from 0 when no set).
	Fallback int64 `json:"fallback_position"`
}

// Decide computes the verdict of a stopped member from its facts: the
// table of seeds/000. It is a pure function.
func Decide(f *Facts) (v Verdict) {
	pos := PositionsOf(f)
	v = Verdict{ID: f.ID, Positions: pos, Reasons: []string{}, Checks: []Check{}, Fallback: -1}
	add := func(name string, ok bool, format string, args ...any) {
		v.Checks = append(v.Checks, Check{name, ok, fmt.Sprintf(format, args...)})
	}
	reason := func(format string, args ...any) { v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...)) }
	catchUp := pos.L >= 0 && pos.P >= 0 && pos.L <= pos.P
	catchUpWhy := func() string {
		switch {
		case !f.LiveGiven:
			return "no live source given (--live)"
		case pos.P < 0:
			return "no local log"
		case pos.L > pos.P:
			return fmt.Sprintf("the live source retains the log from L = %d, after P = %d: %d bytes exist nowhere this member can reach", pos.L, pos.P, pos.L-pos.P)
		}
		return ""
	}
	// The catch-up check is made only against a live source.
	addCatchUp := func() {
		if f.LiveGiven {
			add(CheckCatchUp, catchUp, "L = %d, P = %d%s", pos.L, pos.P, suffix(catchUpWhy()))
		}
	}
	defer func() { v.Costs = costs(f, pos, v.Verdict, catchUp) }()

	if f.Running != "" {
		reason("the member is running (%s): this verdict is for a stopped member, and its positions move while it runs", f.Running)
	}
	// Counts: the configured services against recording.log's set.
	if f.MarkMemberID >= 0 {
		add(CheckCountsAgree+"/member", f.MarkMemberID == f.ID, "cluster-mark.dat names member %d; member %d given", f.MarkMemberID, f.ID)
	}
	if f.SetServiceCount >= 0 {
		add(CheckCountsAgree, f.SetServiceCount == f.Services, "recording.log's latest set holds %d service snapshot(s); %d configured", f.SetServiceCount, f.Services)
	}

	if !f.LocalState {
		if f.LiveGiven && pos.L == 0 {
			v.Verdict = EmptyDiskRestart
			reason("no local state (no TERM entry in recording.log); the live source retains its log from L = 0: a restart replays it whole (H = %d bytes)", pos.H)
		} else {
			v.Verdict = RebuildFromImage
			if f.LiveGiven {
				reason("no local state; the live source's log starts at L = %d, after 0: rebuild from a verified image", pos.L)
			} else {
				reason("no local state and no live source given: rebuild from a verified image")
			}
			reason("%s", imageReason(f, pos))
		}
		return v
	}

	logOK := f.LogInCatalog && pos.P >= 0
	add(CheckRecordingsExist+"/log", logOK, "log recording %d in the catalog and VALID", f.LogRecordingID)
	// contiguous reports whether [from, P) lies in [A, P] with every
	// segment present.
	contiguous := func(from int64) (bool, string) {
		switch {
		case !logOK:
			return false, fmt.Sprintf("log recording %d is not a VALID recording of the catalog", f.LogRecordingID)
		case from < pos.A:
			return false, fmt.Sprintf("replay from %d needs the log before its start A = %d", from, pos.A)
		case from > pos.P:
			return false, fmt.Sprintf("replay from %d is after the log's end P = %d", from, pos.P)
		case len(f.MissingSegments) > 0:
			return false, fmt.Sprintf("segment files missing in [A, P) = [%d, %d): %v", pos.A, pos.P, f.MissingSegments)
		}
		return true, fmt.Sprintf("[%d, %d] inside [A, P] = [%d, %d], every segment file present", from, pos.P, pos.A, pos.P)
	}

	lc := latestComplete(f)
	for i, s := range f.Sets {
		if !s.Complete && (lc < 0 || i < lc) {
			reason("the set at log position %d misses the snapshot(s) of service(s) %v: not a set", s.LogPosition, s.MissingServices)
		}
	}
	if lc < 0 {
		add(CheckSetCovers, false, "no snapshot set with the consensus module and all %d service(s)", f.Services)
		ok, why := contiguous(0)
		add(CheckReplayRange, ok, "%s", why)
		if pos.A != 0 {
			v.Verdict = RebuildUnlessRebased
			reason("no snapshot, and the local log starts at A = %d, not 0: not a valid initial state unless this is a deliberately rebased, tested image", pos.A)
			return v
		}
		addCatchUp()
		switch {
		case !ok:
			v.Verdict = Rebuild
			reason("no snapshot and the log from 0 is not whole: %s", why)
		case !catchUp && f.LiveGiven:
			v.Verdict = Rebuild
			reason("no snapshot; %s", catchUpWhy())
		default:
			v.Verdict = FullReplay
			reason("no snapshot; the local log is contiguous from 0 to P = %d: a full local replay (%d bytes)", pos.P, pos.P)
		}
		return v
	}

	latest := f.Sets[lc]
	add(CheckSetCovers, true, "the set at log position %d holds the consensus module and all %d service(s)", latest.LogPosition, f.Services)
	exist := true
	for _, r := range latest.Recordings {
		if !r.Exists {
			exist = false
			add(CheckRecordingsExist, false, "%s", r.Problem)
		}
	}
	if exist {
		add(CheckRecordingsExist, true, "every recording of the set at %d is in the catalog, VALID, with its files", latest.LogPosition)
	}
	if !latest.Loadable {
		for _, r := range latest.Recordings {
			if !r.Loadable && r.Problem != "" {
				add(CheckSnapshotLoads, false, "%s", r.Problem)
			}
		}
		// Fall back: the next complete, loadable set with its log, or the
		// whole log from 0.
		fb := -1
		for i := lc + 1; i < len(f.Sets); i++ {
			if f.Sets[i].Complete && f.Sets[i].Loadable {
				fb = i
				break
			}
		}
		fbPos := int64(0)
		if fb >= 0 {
			fbPos = f.Sets[fb].LogPosition
		}
		ok, why := contiguous(fbPos)
		add(CheckReplayRange, ok, "%s", why)
		addCatchUp()
		if ok && (catchUp || !f.LiveGiven) {
			v.Verdict = InvalidateLatestSnapshot
			v.Fallback = fbPos
			if fb >= 0 {
				reason("the latest set (log position %d) does not load; the set at %d and its log [%d, %d] are retained: invalidate the latest set, then decide again", latest.LogPosition, fbPos, fbPos, pos.P)
			} else {
				reason("the latest set (log position %d) does not load; no earlier set, but the log is whole from 0 to %d: invalidate the latest set (a full replay follows), then decide again", latest.LogPosition, pos.P)
			}
			return v
		}
		v.Verdict = Rebuild
		reason("the latest set (log position %d) does not load and no earlier set with its log can replace it: %s%s", latest.LogPosition, why, suffix(catchUpWhy()))
		return v
	}
	add(CheckSnapshotLoads, true, "every recording of the set at %d was read back and proven", latest.LogPosition)
	ok, why := contiguous(pos.S)
	add(CheckReplayRange, ok, "%s", why)
	addCatchUp()
	switch {
	case !exist || !ok:
		v.Verdict = Rebuild
		reason("normal start rejected: %s", why)
	case !catchUp && f.LiveGiven:
		v.Verdict = Rebuild
		reason("%s: catch-up has a gap no restart closes", catchUpWhy())
	default:
		v.Verdict = NormalRestart
		reason("complete set at S = %d, local log contiguous over [S, P] = [%d, %d] (A = %d)", pos.S, pos.S, pos.P, pos.A)
		if f.LiveGiven {
			reason("the live source retains from L = %d ≤ P = %d", pos.L, pos.P)
		} else {
			reason("no live source given: catch-up not checked")
		}
	}
	return v
}

// imageReason names the backup a rebuild from an image would use, or why
// there is none to use.
func imageReason(f *Facts, p Positions) string {
	switch {
	case f.BackupDir == "":
		return "no backup directory given (--backup): create one from a healthy member with `matchlog backup create`"
	case p.B < 0:
		return fmt.Sprintf("the backup directory %s holds no verified image: %s", f.BackupDir, f.BackupProblem)
	}
	drill := "never drilled"
	if d := f.LastDrill; d != nil {
		drill = "last drill " + d.Date + " passed"
		if !d.OK {
			drill = "last drill " + d.Date + " FAILED: " + d.Why
		}
	}
	s := fmt.Sprintf("the verified backup image in %s (B = %d, %d bytes, created %s; %s): restore it with `matchlog backup drill --backup %s --work-dir MEMBER_DIR` (an empty member directory)",
		f.BackupDir, p.B, f.BackupBytes, f.BackupCreated, drill, f.BackupDir)
	switch {
	case f.LiveGiven && p.L > p.B:
		s += fmt.Sprintf("; but the live source retains its log from L = %d, after B: the image cannot catch up, a newer backup is needed", p.L)
	case f.LiveGiven:
		s += fmt.Sprintf(", then catch up from the live source over [B, H] = [%d, %d]", p.B, p.H)
	}
	return s
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// costs are the four paths of seeds/000 with their byte counts.
func costs(f *Facts, p Positions, verdict string, catchUp bool) []Cost {
	diff := func(a, b int64) int64 {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	local := verdict == NormalRestart || verdict == FullReplay || verdict == InvalidateLatestSnapshot
	out := []Cost{
		{Path: "local-replay", Bytes: diff(p.P, p.S), Valid: p.S >= 0 && verdict == NormalRestart},
		{Path: "full-local-replay", Bytes: diff(p.P, p.A), Valid: p.A == 0 && p.P >= 0 && local && len(f.MissingSegments) == 0},
		{Path: "catch-up", Bytes: diff(p.H, p.P), Valid: catchUp && p.H >= 0},
		{Path: "backup-tail", Bytes: diff(p.H, p.B), ImageBytes: f.BackupBytes},
	}
	switch bt := &out[3]; {
	case p.B < 0 && f.BackupDir == "":
		bt.Why = "no backup directory given (--backup)"
	case p.B < 0:
		bt.Why = "no verified backup image: " + f.BackupProblem
	case !f.LiveGiven:
		bt.Why = "no live source given (--live) to catch up from B"
	case p.L > p.B:
		bt.Why = fmt.Sprintf("the live source retains its log from L = %d, after B = %d", p.L, p.B)
	case p.H < p.B:
		bt.Why = fmt.Sprintf("H = %d is before B = %d", p.H, p.B)
	default:
		bt.Valid = true
	}
	if !out[0].Valid {
		out[0].Why = "no usable snapshot set with its log"
	}
	if !out[1].Valid {
		out[1].Why = "the local log is not whole from position 0"
	}
	if !out[2].Valid {
		switch {
		case p.L < 0:
			out[2].Why = "no live source"
		case p.P < 0:
			out[2].Why = "no local log: the whole log is transferred"
			if p.L == 0 && p.H >= 0 {
				out[2].Valid, out[2].Bytes, out[2].Why = true, p.H, ""
			}
		default:
			out[2].Why = fmt.Sprintf("starts at P = %d, before L = %d", p.P, p.L)
		}
	}
	for i := range out {
		out[i].Seconds = drillSeconds(f.LastGoodDrill, out[i].Bytes, out[i].ImageBytes)
	}
	return out
}

// drillSeconds is the time of replaying bytes of log (and restoring
// image bytes first) at drill d's throughputs, -1 when d recorded none or
// bytes is -1.
func drillSeconds(d *backup.DrillRecord, bytes, image int64) float64 {
	if d == nil || d.ReplayPositionsPerSec <= 0 || bytes < 0 || (image > 0 && d.RestoreBytesPerSec <= 0) {
		return -1
	}
	s := float64(bytes) / d.ReplayPositionsPerSec
	if image > 0 {
		s += float64(image) / d.RestoreBytesPerSec
	}
	return s
}
