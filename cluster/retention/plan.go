package retention

import (
	"fmt"
	"slices"
	"time"
)

// Retention models (seeds/000).
const (
	// ModelA: any configured member may restart normally; never purge past
	// a protected member's position.
	ModelA = "A"
	// ModelB: members outside the window are rebuilt from a verified
	// backup.
	ModelB = "B"
)

// DefaultKeep is how many complete snapshot generations a plan keeps.
const DefaultKeep = 2

// DefaultMaxDrillAge is how old the last restore drill of the backup may
// be under model B (PlanOptions.MaxDrillAge).
const DefaultMaxDrillAge = 7 * 24 * time.Hour

// Refusal rules (JSON names, stable).
const (
	RefuseNoCompleteSet    = "no-complete-set-retained"
	RefuseCutoffAfterS     = "cutoff-after-snapshot"
	RefuseCutoffDropsKept  = "cutoff-drops-kept-generation"
	RefuseCutoffBeforeA    = "cutoff-before-start"
	RefuseProtectedBehind  = "protected-member-behind-cutoff"
	RefuseModelBNoBackup   = "model-b-without-backup"
	RefuseRecordingActive  = "recording-active"
	RefuseMemberRunning    = "member-running"
	RefuseFilesDisagree    = "catalog-recording-log-files-disagree"
	RefuseCountsDisagree   = "counts-disagree"
	RefuseUnknownWithdrawn = "unknown-member"
)

// Model B's drill rules (JSON names, stable): the backup was never
// drilled, its last drill failed, or its last drill is older than
// PlanOptions.MaxDrillAge; and the cutoff would remove the log after B
// that a member rebuilt from the image needs to catch up.
const (
	RefuseModelBUntested      = "model-b-backup-untested"
	RefuseModelBDrillFailed   = "model-b-drill-failed"
	RefuseModelBDrillStale    = "model-b-drill-stale"
	RefuseModelBBackupBehindC = "model-b-backup-behind-cutoff"
)

// RefusalRules lists every rule MakePlan refuses a member's plan with,
// model B's included. Whatever enumerates the rules (the scenario coverage
// test, documentation checks) reads this list; a new rule is added here.
// PurgeRefusalRules are the executor's own, added by Purge.
var RefusalRules = []string{RefuseNoCompleteSet, RefuseCutoffAfterS, RefuseCutoffDropsKept, RefuseCutoffBeforeA,
	RefuseProtectedBehind, RefuseRecordingActive, RefuseMemberRunning, RefuseFilesDisagree, RefuseCountsDisagree,
	RefuseUnknownWithdrawn, RefuseModelBNoBackup, RefuseModelBUntested, RefuseModelBDrillFailed, RefuseModelBDrillStale,
	RefuseModelBBackupBehindC}

// PlanOptions configure MakePlan.
type PlanOptions struct {
	// Model is ModelA (default) or ModelB.
	Model string
	// Keep is the number of complete generations kept (default
	// DefaultKeep; fewer when fewer exist).
	Keep int
	// Cutoff, when >= 0, is the new start asked for: rounded down to a
	// segment boundary, refused when a rule forbids it.
	Cutoff int64
	// Postpone: a protected member behind the cutoff postpones the purge
	// (nothing is proposed) instead of refusing it.
	Postpone bool
	// Withdraw lists members whose promise of a normal restart is
	// withdrawn: they are marked for rebuild and no longer protected.
	Withdraw []int32
	// MaxDrillAge is how old the backup's last drill may be under model B
	// (default DefaultMaxDrillAge).
	MaxDrillAge time.Duration
	// NowMs is the time the drill's age is measured at (epoch ms; 0: now).
	NowMs int64
}

// Refusal is one reason a plan is refused.
type Refusal struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	Fix    string `json:"fix"`
}

// Deletion is a snapshot generation (or orphaned recording) proposed for
// deletion: always every recording of it.
type Deletion struct {
	LogPosition int64       `json:"log_position" doc:"-1 for an orphaned recording"`
	Why         string      `json:"why"`
	Recordings  []Recording `json:"recordings"`
	Bytes       int64       `json:"bytes"`
}

// Manifest is the dry-run manifest of one member's purge.
type Manifest struct {
	ClusterID      int32 `json:"cluster_id" doc:"from cluster-mark.dat; -1 unknown"`
	MemberID       int32 `json:"member_id"`
	LogRecordingID int64 `json:"log_recording_id"`
	StartPosition  int64 `json:"start_position"`
	StopPosition   int64 `json:"stop_position"`
	ProposedStart  int64 `json:"proposed_start_position" doc:"the start after the purge; equal to start_position when nothing is detached"`
	// CMember is the greatest boundary ≤ the oldest kept set's position;
	// CLive the greatest boundary ≤ the oldest protected member's P.
	CMember                 int64         `json:"c_member"`
	CLive                   int64         `json:"c_live"`
	RetainedSets            []int64       `json:"retained_sets" doc:"log positions of the kept generations, newest first"`
	OldestProtectedPosition int64         `json:"oldest_protected_position" doc:"min P over the members promised a normal restart; -1 none"`
	ProtectedMembers        []int32       `json:"protected_members"`
	WithdrawnMembers        []int32       `json:"withdrawn_members" doc:"marked for rebuild by --withdraw"`
	BehindMembers           []int32       `json:"behind_members" doc:"members whose verdict is already not a normal restart: not protected"`
	BackupPosition          int64         `json:"backup_position" doc:"-1: no backup"`
	LastDrill               string        `json:"last_restore_drill" doc:"date of the last restore drill that passed; empty: none"`
	BackupDir               string        `json:"backup_dir" doc:"the --backup directory; empty: none given"`
	LastDrillFailed         string        `json:"last_restore_drill_failed" doc:"when the newest drill failed: its date and why; else empty"`
	Postponed               bool          `json:"postponed"`
	Detach                  []SegmentFile `json:"detach" doc:"the segment files the purge would detach"`
	DetachBytes             int64         `json:"detach_bytes"`
	DeleteSnapshots         []Deletion    `json:"delete_snapshots"`
}

// MemberPlan is one member's verdict, manifest and refusals.
type MemberPlan struct {
	Verdict
	Manifest Manifest  `json:"manifest"`
	Refusals []Refusal `json:"refusals"`
	Approved bool      `json:"approved"`
}

// Plan is a dry run over every member.
type Plan struct {
	Model   string       `json:"model"`
	Keep    int          `json:"keep"`
	Members []MemberPlan `json:"members"`
}

// protects reports whether a verdict promises a normal restart.
func protects(verdict string) bool { return verdict == NormalRestart || verdict == FullReplay }

// MakePlan computes the purge plan of every member (a dry run: it is a
// pure function of the facts). A member's plan is approved only when no
// refusal applies; then C ≤ S, C is a segment boundary, and no protected
// member's P is before C.
func MakePlan(members []*Facts, opts PlanOptions) Plan {
	if opts.Model == "" {
		opts.Model = ModelA
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.MaxDrillAge <= 0 {
		opts.MaxDrillAge = DefaultMaxDrillAge
	}
	now := opts.NowMs
	if now == 0 {
		now = time.Now().UnixMilli()
	}
	plan := Plan{Model: opts.Model, Keep: opts.Keep, Members: []MemberPlan{}}
	verdicts := make([]Verdict, len(members))
	protected, behind, withdrawn := []int32{}, []int32{}, []int32{}
	minP := int64(-1)
	var unknown []int32
	for _, w := range opts.Withdraw {
		if !slices.ContainsFunc(members, func(f *Facts) bool { return f.ID == w }) {
			unknown = append(unknown, w)
		}
	}
	for i, f := range members {
		verdicts[i] = Decide(f)
		switch {
		case slices.Contains(opts.Withdraw, f.ID):
			withdrawn = append(withdrawn, f.ID)
		case protects(verdicts[i].Verdict) && f.P >= 0:
			protected = append(protected, f.ID)
			if minP < 0 || f.P < minP {
				minP = f.P
			}
		default:
			behind = append(behind, f.ID)
		}
	}
	for i, f := range members {
		mp := MemberPlan{Verdict: verdicts[i], Refusals: []Refusal{}}
		m := &mp.Manifest
		*m = Manifest{ClusterID: f.ClusterID, MemberID: f.ID, LogRecordingID: f.LogRecordingID, StartPosition: f.A, StopPosition: f.P,
			ProposedStart: f.A, CMember: -1, CLive: -1, RetainedSets: []int64{}, OldestProtectedPosition: minP,
			ProtectedMembers: protected, WithdrawnMembers: withdrawn, BehindMembers: behind, BackupPosition: f.B,
			Detach: []SegmentFile{}, DeleteSnapshots: []Deletion{}}
		refuse := func(rule, fix, format string, args ...any) {
			mp.Refusals = append(mp.Refusals, Refusal{rule, fmt.Sprintf(format, args...), fix})
		}
		for _, w := range unknown {
			refuse(RefuseUnknownWithdrawn, "name a member given with --member", "--withdraw %d names no member of the plan", w)
		}
		if f.Running != "" {
			refuse(RefuseMemberRunning, "stop the member first; a plan is made for stopped members", "%s", f.Running)
		}
		if f.LogActive {
			refuse(RefuseRecordingActive, "stop the member cleanly (a crash leaves the recording open: restart and stop it, or `matchlog archive verify --truncate`)",
				"log recording %d has no stop position in the catalog: it is being recorded", f.LogRecordingID)
		}
		for _, s := range f.Sets {
			for _, r := range s.Recordings {
				if r.Active {
					refuse(RefuseRecordingActive, "stop the member cleanly, or settle the recording by opening the archive (a restart)",
						"snapshot recording %d (service %d, set at %d) has no stop position in the catalog: it is being recorded", r.RecordingID, r.ServiceID, s.LogPosition)
				}
			}
		}
		for _, r := range f.Orphans {
			if r.Active {
				refuse(RefuseRecordingActive, "stop the member cleanly; a snapshot may be being taken",
					"recording %d, in no recording.log entry, has no stop position in the catalog: it is being recorded", r.RecordingID)
			}
		}
		if f.LocalState && (!f.LogInCatalog || len(f.MissingSegments) > 0 || len(f.PlanIssues) > 0) {
			var why []string
			if !f.LogInCatalog {
				why = append(why, fmt.Sprintf("log recording %d of recording.log is not a VALID recording of the catalog", f.LogRecordingID))
			}
			why = append(why, f.MissingSegments...)
			why = append(why, f.PlanIssues...)
			refuse(RefuseFilesDisagree, "repair the member first (see `matchlog cluster recovery-plan` and `matchlog archive verify`); nothing is purged from a directory whose files disagree",
				"%v", why)
		}
		for _, c := range mp.Checks {
			if !c.Passed && (c.Name == CheckCountsAgree || c.Name == CheckCountsAgree+"/member") {
				refuse(RefuseCountsDisagree, "give the member's own id and service count (--member, --services)", "%s", c.Detail)
			}
		}
		if f.LastGoodDrill != nil {
			m.LastDrill = f.LastGoodDrill.Date
		}
		m.BackupDir = f.BackupDir
		if d := f.LastDrill; d != nil && !d.OK {
			m.LastDrillFailed = d.Date + ": " + d.Why
		}
		if opts.Model == ModelB {
			modelB(f, opts, now, refuse)
		}
		var kept []Set
		for _, s := range f.Sets {
			if s.Complete && s.Loadable && s.Usable && len(kept) < opts.Keep {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			refuse(RefuseNoCompleteSet, "take a snapshot (`matchlog cluster snapshot`) and plan again",
				"no complete, proven-loadable snapshot set with its log is retained on member %d", f.ID)
			plan.Members = append(plan.Members, mp)
			continue
		}
		for _, s := range kept {
			m.RetainedSets = append(m.RetainedSets, s.LogPosition)
		}
		S := kept[0].LogPosition
		oldest := kept[len(kept)-1].LogPosition
		m.CMember = Boundary(oldest, f.SegmentLength)
		m.CLive = Boundary(minP, f.SegmentLength)
		C := m.CMember
		if opts.Cutoff >= 0 {
			c := Boundary(opts.Cutoff, f.SegmentLength)
			switch {
			case opts.Cutoff > S:
				refuse(RefuseCutoffAfterS, fmt.Sprintf("ask for at most %d (the greatest boundary ≤ the oldest kept set)", m.CMember),
					"--cutoff %d is after S = %d: the log from the latest snapshot would be gone", opts.Cutoff, S)
			case c > m.CMember:
				refuse(RefuseCutoffDropsKept, fmt.Sprintf("ask for at most %d, or keep fewer generations", m.CMember),
					"--cutoff %d (boundary %d) is after the kept set at %d, whose log starts at boundary %d", opts.Cutoff, c, oldest, m.CMember)
			case c < f.A:
				refuse(RefuseCutoffBeforeA, fmt.Sprintf("ask for a boundary after the start %d", f.A),
					"--cutoff %d (boundary %d) is before the log's start A = %d: nothing to detach", opts.Cutoff, c, f.A)
			}
			C = min(C, c)
		}
		if C > S {
			refuse(RefuseCutoffAfterS, "keep the log from S", "cutoff %d is after S = %d", C, S)
		}
		for j, q := range members {
			if slices.Contains(protected, q.ID) && q.P < C {
				if opts.Postpone {
					m.Postponed = true
					continue
				}
				refuse(RefuseProtectedBehind, fmt.Sprintf("choose: --postpone (no purge now) or --withdraw %d (mark it for rebuild)", q.ID),
					"member %d (%s, P = %d) is promised a normal restart and sits before the cutoff %d", q.ID, verdicts[j].Verdict, q.P, C)
			}
		}
		if opts.Model == ModelB && f.B >= 0 && C > f.A && C > f.B {
			refuse(RefuseModelBBackupBehindC, fmt.Sprintf("create a newer backup (`matchlog backup create`), or ask for at most --cutoff %d", Boundary(f.B, f.SegmentLength)),
				"the cutoff %d is after the backup's B = %d: a member rebuilt from the image could not catch up over [B, C)", C, f.B)
		}
		if m.Postponed {
			C = -1
		}
		if C > f.A {
			m.ProposedStart = C
			for _, file := range f.LogFiles {
				if file.Base < C {
					m.Detach = append(m.Detach, file)
					m.DetachBytes += file.Size
				}
			}
		}
		for _, s := range f.Sets {
			if s.LogPosition < oldest {
				// Only what is still in the catalog: a generation a purge
				// deleted keeps its recording.log entries (as Aeron's do)
				// and is not proposed again.
				recs := slices.DeleteFunc(slices.Clone(s.Recordings), func(r Recording) bool { return !r.Exists })
				if len(recs) == 0 {
					continue
				}
				d := Deletion{LogPosition: s.LogPosition, Recordings: recs,
					Why: fmt.Sprintf("a generation older than every retained fallback (oldest kept: %d)", oldest)}
				if !s.Complete {
					d.Why = fmt.Sprintf("an incomplete set (no snapshot of service(s) %v) older than every retained fallback", s.MissingServices)
				}
				for _, r := range recs {
					d.Bytes += r.Bytes
				}
				m.DeleteSnapshots = append(m.DeleteSnapshots, d)
			}
		}
		for _, r := range f.Orphans {
			m.DeleteSnapshots = append(m.DeleteSnapshots, Deletion{LogPosition: -1, Recordings: []Recording{r}, Bytes: r.Bytes,
				Why: "orphaned: in the catalog, in no recording.log entry"})
		}
		mp.Approved = len(mp.Refusals) == 0
		plan.Members = append(plan.Members, mp)
	}
	return plan
}

// modelB applies model B's backup rules to member f: a verified backup
// image must be there, drilled, its last drill passed and no older than
// opts.MaxDrillAge at now (epoch ms).
func modelB(f *Facts, opts PlanOptions, now int64, refuse func(rule, fix, format string, args ...any)) {
	const create = "create a backup of a healthy member (`matchlog backup create --from DIR --to BDIR`), drill it (`matchlog backup drill --backup BDIR`) and give it with --backup BDIR"
	switch {
	case f.BackupDir == "":
		refuse(RefuseModelBNoBackup, create+"; or use model A",
			"model B rebuilds members outside the window from a verified backup, and none was given (--backup; B = -1)")
		return
	case f.B < 0:
		refuse(RefuseModelBNoBackup, create+"; or use model A",
			"model B rebuilds members outside the window from a verified backup, and %s holds none (B = -1): %s", f.BackupDir, f.BackupProblem)
		return
	}
	drill := fmt.Sprintf("`matchlog backup drill --backup %s`", f.BackupDir)
	switch d := f.LastDrill; {
	case f.DrillProblem != "":
		refuse(RefuseModelBUntested, "repair or move aside the drill log, then drill again: "+drill,
			"the drill log of %s cannot be read: %s", f.BackupDir, f.DrillProblem)
	case d == nil:
		refuse(RefuseModelBUntested, "drill it: "+drill,
			"the backup in %s (B = %d) has never been restored in a drill: an untested backup is no backup", f.BackupDir, f.B)
	case !d.OK:
		refuse(RefuseModelBDrillFailed, "find why (the drill log says), create a new backup and drill it: "+drill,
			"the last restore drill of %s (%s) failed: %s", f.BackupDir, d.Date, d.Why)
	case now-d.UnixMs > opts.MaxDrillAge.Milliseconds():
		refuse(RefuseModelBDrillStale, "drill it again: "+drill,
			"the last restore drill of %s (%s) is %s old, more than --max-drill-age %s", f.BackupDir, d.Date,
			time.Duration(now-d.UnixMs)*time.Millisecond, opts.MaxDrillAge)
	}
}
