package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/internal/vfs"
)

const retentionUsage = `usage: matchlog retention <command> --member ID=CLUSTER_DIR,ARCHIVE_DIR [--member ...] [flags]

Commands, over stopped members (each --member: its id, its cluster directory
holding recording.log and its archive directory holding archive.catalog, the
cluster/ and archive/ of one member directory; ID=DIR names that directory),
for matchlog's and real Aeron's directories alike. Every command but purge
only reads:
  positions  S (latest complete, proven-loadable snapshot set), A (log start),
             P (log end), L and H (the live source's log start and stop, or
             --commit), B (the position of the verified backup image in
             --backup BDIR; -1 none), C (greatest segment boundary <= S), and
             every snapshot set with its recordings, newest first
  verdict    the restart-vs-rebuild verdict of each member: normal-restart,
             rebuild, full-replay, rebuild-unless-rebased,
             invalidate-latest-snapshot, empty-disk-restart,
             rebuild-from-image; the checks behind it and the cost in bytes
             of each path (P-S, P-A, H-P, H-B), and in seconds at the
             throughputs of the backup's last passed restore drill
  plan       the dry run of a purge: per member the cutoff keeping --keep
             complete generations (never past S, never past a member promised
             a normal restart), the segment files it would detach, the
             snapshot generations and orphaned recordings it would delete,
             and each refusal by name; exit 1 when a member's plan is refused.
             Model B (--model B) also needs --backup BDIR: a verified image
             (matchlog backup create) whose last drill (matchlog backup
             drill) passed within --max-drill-age, and B >= the cutoff
  purge      executes the same plan (same flags, and --delay), one member at a
             time, only when every member's plan is approved: back up
             recording.log and the catalog, detach the log to the new start,
             validate (verdict, recovery plan, and for a matchlog node a
             restart's state hash), delete two-phase (*.deleted), check again,
             remove the backups; a refusal or a failed validation leaves the
             directories as they were; exit 1 when refused

Every command takes --json; its fields are listed by 'matchlog help retention
<command>'.
`

type retentionFlags struct {
	members  memberList
	live     string
	commit   int64
	model    string
	services int
	cutoff   int64
	keep     int
	postpone bool
	withdraw idList
	delay    time.Duration
	jsonOut  bool
	backup   string
	maxDrill time.Duration
}

// memberList is the repeated --member flag.
type memberList []retention.Member

func (l *memberList) String() string { return fmt.Sprint(*l) }

func (l *memberList) Set(s string) error {
	id, dirs, ok := strings.Cut(s, "=")
	n, err := strconv.ParseInt(id, 10, 32)
	if !ok || err != nil || n < 0 || dirs == "" {
		return fmt.Errorf("want ID=CLUSTER_DIR,ARCHIVE_DIR (or ID=DIR), a non-negative id, got %q", s)
	}
	dir := dirs
	if c, a, two := strings.Cut(dirs, ","); two {
		if dir, err = retention.SplitDirs(c, a); err != nil {
			return err
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("member %d: %s is not a directory (an empty disk is an existing, empty directory)", n, dir)
	}
	for _, m := range *l {
		if m.ID == int32(n) {
			return fmt.Errorf("member %d given twice", n)
		}
	}
	*l = append(*l, retention.Member{ID: int32(n), Dir: dir})
	return nil
}

// idList is a repeated member-id flag.
type idList []int32

func (l *idList) String() string { return fmt.Sprint(*l) }

func (l *idList) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("want a member id (a non-negative integer), got %q", s)
	}
	*l = append(*l, int32(n))
	return nil
}

// verdictJSON is one member's verdict (`retention verdict --json`).
type verdictJSON struct {
	ID       int32             `json:"id"`
	Verdict  string            `json:"verdict" doc:"normal-restart, rebuild, full-replay, rebuild-unless-rebased, invalidate-latest-snapshot, empty-disk-restart or rebuild-from-image"`
	Reasons  []string          `json:"reasons" doc:"the numbers that decided it, in words"`
	Checks   []retention.Check `json:"checks"`
	Costs    []retention.Cost  `json:"costs"`
	S        int64             `json:"S"`
	A        int64             `json:"A"`
	P        int64             `json:"P"`
	L        int64             `json:"L"`
	H        int64             `json:"H"`
	B        int64             `json:"B"`
	C        int64             `json:"C"`
	Fallback int64             `json:"fallback_position" doc:"invalidate-latest-snapshot: the set it falls back to (0: the whole log); else -1"`
}

// planMemberJSON is one member's plan (`retention plan --json`).
type planMemberJSON struct {
	verdictJSON
	Manifest retention.Manifest  `json:"manifest"`
	Refusals []retention.Refusal `json:"refusals" doc:"each rule that refuses the purge, with its fix; empty: approved"`
	Approved bool                `json:"approved"`
}

type positionsListJSON struct {
	Members []retention.Positions `json:"members"`
}

type verdictListJSON struct {
	Members []verdictJSON `json:"members" doc:"one object per member (one member: its fields at the top level)"`
}

type planListJSON struct {
	Model   string           `json:"model"`
	Keep    int              `json:"keep"`
	Members []planMemberJSON `json:"members" doc:"one object per member (one member: its fields at the top level, beside model and keep)"`
}

type planOneJSON struct {
	Model string `json:"model"`
	Keep  int    `json:"keep"`
	planMemberJSON
}

// purgeMemberJSON is one member's plan and purge (`retention purge --json`).
type purgeMemberJSON struct {
	planMemberJSON
	Purge retention.MemberPurge `json:"purge" doc:"what was done, step by step"`
}

type purgeListJSON struct {
	Model   string            `json:"model"`
	Keep    int               `json:"keep"`
	DelayMs int64             `json:"delay_ms" doc:"--delay: 0 unlinked the renamed files at once; otherwise they wait as *.deleted for the archive's next open"`
	Members []purgeMemberJSON `json:"members" doc:"one object per member, in --member order (one member: its fields at the top level): the fields of a member of retention plan --json (verdict, reasons, checks, costs, S ... C, manifest, refusals, approved), and purge"`
}

type purgeOneJSON struct {
	Model   string `json:"model"`
	Keep    int    `json:"keep"`
	DelayMs int64  `json:"delay_ms"`
	purgeMemberJSON
}

var retentionCommands = map[string]any{
	"positions": positionsListJSON{},
	"verdict":   verdictListJSON{},
	"plan":      planListJSON{},
	"purge":     purgeListJSON{},
}

// errRefused is plan's exit status when a member's plan is refused.
var errRefused = errors.New("the purge plan is refused (see refusals)")

func runRetention(args []string, stdout, stderr io.Writer) error {
	name, ok, err := subcommand("retention", args, func(n string) bool { _, ok := retentionCommands[n]; return ok }, retentionUsage, stderr)
	if !ok {
		return err
	}
	f := &retentionFlags{}
	fs := flag.NewFlagSet("retention "+name, flag.ContinueOnError)
	fs.Var(&f.members, "member", "ID=CLUSTER_DIR,ARCHIVE_DIR (or ID=DIR holding cluster/ and archive/); repeat for each member (required)")
	fs.StringVar(&f.live, "live", "", "archive directory of the live source: L is its log start, H its log stop (default: none, catch-up not checked)")
	fs.Int64Var(&f.commit, "commit", -1, "H, the cluster's commit position (default: the live source's log stop)")
	fs.IntVar(&f.services, "services", 1, "configured services per member")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object instead of tables")
	fs.StringVar(&f.backup, "backup", "", "backup directory (matchlog backup create): B is its verified image's position, its drill log gives the last restore drill (default: none, B = -1)")
	if name == "plan" || name == "purge" {
		fs.DurationVar(&f.maxDrill, "max-drill-age", retention.DefaultMaxDrillAge, "model B: the oldest the backup's last passed restore drill may be")
		fs.StringVar(&f.model, "model", retention.ModelA, "retention model: A (any member may restart normally) or B (members outside the window are rebuilt from a backup)")
		fs.Int64Var(&f.cutoff, "cutoff", -1, "ask for this new start: rounded down to a segment boundary, refused when a rule forbids it")
		fs.IntVar(&f.keep, "keep", retention.DefaultKeep, "complete snapshot generations to keep")
		fs.BoolVar(&f.postpone, "postpone", false, "a protected member behind the cutoff postpones the purge instead of refusing it")
		fs.Var(&f.withdraw, "withdraw", "member id whose normal restart is no longer promised (marked for rebuild); repeatable")
	}
	if name == "purge" {
		fs.DurationVar(&f.delay, "delay", archive.DefaultDeleteDelay, "delay before unlinking; 0 unlinks at once (otherwise the *.deleted files wait for the archive's next open)")
	}
	fs.Usage = usageWithJSON(fs, fmt.Sprintf("usage: matchlog retention %s --member ID=CLUSTER_DIR,ARCHIVE_DIR [--member ...] [flags]\n\n", name), retentionCommands[name])
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	bad := func(msg string) error {
		fmt.Fprintf(stderr, "retention %s: %s\n", name, msg)
		fs.Usage()
		return errUsage
	}
	switch {
	case len(f.members) == 0:
		return bad("--member is required")
	case f.services < 1:
		return bad("--services must be at least 1")
	case (name == "plan" || name == "purge") && f.model != retention.ModelA && f.model != retention.ModelB:
		return bad("--model is A or B")
	case (name == "plan" || name == "purge") && f.keep < 1:
		return bad("--keep must be at least 1")
	case flagGiven(fs, "delay") && f.delay < 0:
		return bad("--delay must not be negative")
	case flagGiven(fs, "cutoff") && f.cutoff < 0:
		return bad("--cutoff must not be negative")
	case flagGiven(fs, "commit") && f.commit < 0:
		return bad("--commit must not be negative")
	case name == "plan" && f.maxDrill <= 0:
		return bad("--max-drill-age must be positive")
	}
	if f.backup != "" {
		if st, err := os.Stat(f.backup); err != nil || !st.IsDir() {
			return fmt.Errorf("--backup %s is not a directory: give the backup directory 'matchlog backup create --to' wrote", f.backup)
		}
	}
	if f.live != "" {
		if f.live, err = resolveDir(f.live, "archive", "archive.catalog"); err != nil {
			return err
		}
	}
	if name == "purge" {
		return retentionPurge(f, stdout)
	}
	var facts []*retention.Facts
	for _, m := range f.members {
		fa, err := retention.Gather(vfs.Default, m, retention.Options{Services: f.services, Live: f.live, Commit: f.commit, Backup: f.backup})
		if err != nil {
			return err
		}
		facts = append(facts, fa)
	}
	switch name {
	case "positions":
		return retentionPositions(f, facts, stdout)
	case "verdict":
		return retentionVerdict(f, facts, stdout)
	}
	return retentionPlan(f, facts, stdout)
}

func verdictOf(v retention.Verdict) verdictJSON {
	p := v.Positions
	return verdictJSON{ID: v.ID, Verdict: v.Verdict, Reasons: v.Reasons, Checks: v.Checks, Costs: v.Costs,
		S: p.S, A: p.A, P: p.P, L: p.L, H: p.H, B: p.B, C: p.C, Fallback: v.Fallback}
}

// positionsTable writes the positions of every member, and their sets.
func positionsTable(b *strings.Builder, ps []retention.Positions) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "member\tS\tA\tP\tL\tH\tB\tC\tsets\t")
	for _, p := range ps {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", p.ID, p.S, p.A, p.P, p.L, p.H, p.B, p.C, len(p.Snapshots))
	}
	tw.Flush()
	for _, p := range ps {
		for _, s := range p.Snapshots {
			var recs []string
			for _, r := range s.Recordings {
				st := "loadable"
				switch {
				case !r.Loadable:
					st = "NOT LOADABLE: " + r.Problem
				case r.Engine:
					st = "loadable, engine hash " + r.StateHash
				}
				recs = append(recs, fmt.Sprintf("service %d recording %d (%d bytes, %s)", r.ServiceID, r.RecordingID, r.Bytes, st))
			}
			state := "complete"
			if !s.Complete {
				state = fmt.Sprintf("INCOMPLETE (missing services %v)", s.MissingServices)
			}
			usable := "log retained"
			if !s.Usable {
				usable = "log not retained"
			}
			fmt.Fprintf(b, "member %d set at %d (term %d): %s, %s: %s\n", p.ID, s.LogPosition, s.LeadershipTermID, state, usable, strings.Join(recs, "; "))
		}
	}
}

func verdictText(b *strings.Builder, vs []retention.Verdict) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "member\tverdict\tlocal-replay (P-S)\tfull-local-replay (P-A)\tcatch-up (H-P)\tbackup-tail (H-B)")
	for _, v := range vs {
		cost := func(c retention.Cost) string {
			if !c.Valid {
				if c.Bytes < 0 {
					return "-"
				}
				return fmt.Sprintf("(%d, not possible)", c.Bytes)
			}
			if c.Seconds >= 0 {
				return fmt.Sprintf("%d (%.3gs)", c.Bytes, c.Seconds)
			}
			return fmt.Sprint(c.Bytes)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Verdict, cost(v.Costs[0]), cost(v.Costs[1]), cost(v.Costs[2]), cost(v.Costs[3]))
	}
	tw.Flush()
	for _, v := range vs {
		for _, r := range v.Reasons {
			fmt.Fprintf(b, "member %d: %s\n", v.ID, r)
		}
		for _, c := range v.Checks {
			mark := "ok  "
			if !c.Passed {
				mark = "FAIL"
			}
			fmt.Fprintf(b, "member %d: %s %s: %s\n", v.ID, mark, c.Name, c.Detail)
		}
	}
}

func retentionPositions(f *retentionFlags, facts []*retention.Facts, stdout io.Writer) error {
	out := positionsListJSON{Members: []retention.Positions{}}
	for _, fa := range facts {
		out.Members = append(out.Members, retention.PositionsOf(fa))
	}
	if f.jsonOut {
		return writeJSON(stdout, out)
	}
	var b strings.Builder
	positionsTable(&b, out.Members)
	_, err := io.WriteString(stdout, b.String())
	return err
}

func retentionVerdict(f *retentionFlags, facts []*retention.Facts, stdout io.Writer) error {
	var vs []retention.Verdict
	var ps []retention.Positions
	for _, fa := range facts {
		v := retention.Decide(fa)
		vs = append(vs, v)
		ps = append(ps, v.Positions)
	}
	if f.jsonOut {
		if len(vs) == 1 {
			return writeJSON(stdout, verdictOf(vs[0]))
		}
		out := verdictListJSON{}
		for _, v := range vs {
			out.Members = append(out.Members, verdictOf(v))
		}
		return writeJSON(stdout, out)
	}
	var b strings.Builder
	positionsTable(&b, ps)
	b.WriteByte('\n')
	verdictText(&b, vs)
	_, err := io.WriteString(stdout, b.String())
	return err
}

func retentionPlan(f *retentionFlags, facts []*retention.Facts, stdout io.Writer) error {
	plan := retention.MakePlan(facts, retention.PlanOptions{Model: f.model, Keep: f.keep, Cutoff: f.cutoff, Postpone: f.postpone, Withdraw: f.withdraw, MaxDrillAge: f.maxDrill})
	refused := false
	var members []planMemberJSON
	for _, mp := range plan.Members {
		members = append(members, planMemberJSON{verdictOf(mp.Verdict), mp.Manifest, mp.Refusals, mp.Approved})
		refused = refused || !mp.Approved
	}
	var err error
	if f.jsonOut {
		if len(members) == 1 {
			err = writeJSON(stdout, planOneJSON{plan.Model, plan.Keep, members[0]})
		} else {
			err = writeJSON(stdout, planListJSON{plan.Model, plan.Keep, members})
		}
	} else {
		var b strings.Builder
		planText(&b, plan, "plan (dry run, nothing changed)")
		_, err = io.WriteString(stdout, b.String())
	}
	if err == nil && refused {
		err = errRefused
	}
	return err
}

// planText writes the positions, the verdicts and the plan of every
// member, headed by title.
func planText(b *strings.Builder, plan retention.Plan, title string) {
	var vs []retention.Verdict
	var ps []retention.Positions
	for _, mp := range plan.Members {
		vs = append(vs, mp.Verdict)
		ps = append(ps, mp.Positions)
	}
	positionsTable(b, ps)
	b.WriteByte('\n')
	verdictText(b, vs)
	fmt.Fprintf(b, "\n%s: model %s, keep %d generation(s)\n", title, plan.Model, plan.Keep)
	for _, mp := range plan.Members {
		m := mp.Manifest
		state := "APPROVED"
		if !mp.Approved {
			state = "REFUSED"
		}
		fmt.Fprintf(b, "member %d (cluster %d): %s; log recording %d [%d, %d]: proposed start %d (C_member %d, C_live %d); retained sets %v\n",
			m.MemberID, m.ClusterID, state, m.LogRecordingID, m.StartPosition, m.StopPosition, m.ProposedStart, m.CMember, m.CLive, m.RetainedSets)
		drill := m.LastDrill
		if drill == "" {
			drill = "none"
		}
		if m.LastDrillFailed != "" {
			drill += "; newest drill FAILED " + m.LastDrillFailed
		}
		fmt.Fprintf(b, "  protected members %v (oldest P %d), behind %v, withdrawn %v; backup position %d, last passed restore drill: %s\n",
			m.ProtectedMembers, m.OldestProtectedPosition, m.BehindMembers, m.WithdrawnMembers, m.BackupPosition, drill)
		if m.Postponed {
			b.WriteString("  postponed: a protected member sits before the cutoff\n")
		}
		var files []string
		for _, s := range m.Detach {
			files = append(files, fmt.Sprintf("%s (%d)", s.Name, s.Size))
		}
		if len(files) == 0 {
			files = []string{"none"}
		}
		fmt.Fprintf(b, "  detach: %s; %d bytes\n", strings.Join(files, ", "), m.DetachBytes)
		for _, d := range m.DeleteSnapshots {
			var ids []string
			for _, r := range d.Recordings {
				ids = append(ids, fmt.Sprint(r.RecordingID))
			}
			fmt.Fprintf(b, "  delete snapshot recordings %s (%d bytes), set at %d: %s\n", strings.Join(ids, ", "), d.Bytes, d.LogPosition, d.Why)
		}
		for _, r := range mp.Refusals {
			fmt.Fprintf(b, "  refused (%s): %s; fix: %s\n", r.Rule, r.Reason, r.Fix)
		}
	}
}

func retentionPurge(f *retentionFlags, stdout io.Writer) error {
	res, err := retention.Purge(vfs.Default, f.members, retention.PurgeOptions{
		Gather: retention.Options{Services: f.services, Live: f.live, Commit: f.commit, Backup: f.backup},
		Plan:   retention.PlanOptions{Model: f.model, Keep: f.keep, Cutoff: f.cutoff, Postpone: f.postpone, Withdraw: f.withdraw, MaxDrillAge: f.maxDrill},
		Delay:  f.delay,
	})
	if res == nil {
		return err
	}
	var members []purgeMemberJSON
	for i, mp := range res.Plan.Members {
		members = append(members, purgeMemberJSON{planMemberJSON{verdictOf(mp.Verdict), mp.Manifest, mp.Refusals, mp.Approved}, res.Members[i]})
	}
	var werr error
	if f.jsonOut {
		if len(members) == 1 {
			werr = writeJSON(stdout, purgeOneJSON{res.Plan.Model, res.Plan.Keep, f.delay.Milliseconds(), members[0]})
		} else {
			werr = writeJSON(stdout, purgeListJSON{res.Plan.Model, res.Plan.Keep, f.delay.Milliseconds(), members})
		}
	} else {
		var b strings.Builder
		title := "purge"
		if res.Refused {
			title = "purge REFUSED (nothing changed)"
		}
		planText(&b, res.Plan, title)
		if !res.Refused {
			b.WriteByte('\n')
			for _, m := range res.Members {
				fmt.Fprintf(&b, "member %d (%s): %s\n", m.ID, m.Kind, m.Status)
				if m.RestartNote != "" {
					fmt.Fprintf(&b, "  note: %s\n", m.RestartNote)
				}
				for _, s := range m.Steps {
					fmt.Fprintf(&b, "  %s: %s\n", s.Step, s.Detail)
				}
				if m.Error != "" {
					fmt.Fprintf(&b, "  error: %s\n", m.Error)
				}
			}
		}
		_, werr = io.WriteString(stdout, b.String())
	}
	switch {
	case errors.Is(err, retention.ErrPurgeRefused):
		err = errRefused
	case werr != nil && err == nil:
		err = werr
	}
	return err
}
