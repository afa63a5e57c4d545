package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Checking a recovery plan against the files it needs, and computing the
// fix for what is wrong. recordinglog.PlanRecovery checks the recording
// log's entries; CheckPlan checks that the archive can deliver what the
// plan reads: every recording in the catalog and VALID, every segment file
// of the ranges read present and long enough, the replay starting on a
// frame. Each issue names the fix that applies to it: invalidating the
// latest snapshot set is suggested only when that set is what fails and
// an earlier complete set (or the whole log from position 0) with its log
// can be used instead — never for a damaged log, a wrong service count or a
// damaged catalog, which no fall-back cures.

// Issue kinds.
const (
	IssueIncompleteSet     = "incomplete-snapshot-set"
	IssueWrongServiceCount = "wrong-service-count"
	IssueUnknownRecording  = "unknown-recording"
	IssueInvalidRecording  = "invalid-recording"
	IssueMissingSegment    = "missing-segment"
	IssueDetachedLog       = "detached-log"
	IssueOffFrameGrid      = "off-frame-grid"
	IssueDamagedCatalog    = "damaged-catalog"
	IssueSnapshotLoad      = "snapshot-does-not-load"
	IssueLostEntries       = "recording-log-lost-entries"
)

// PlanIssue is one reason a recovery plan cannot be carried out.
type PlanIssue struct {
	Kind        string `json:"kind"`
	RecordingID int64  `json:"recordingId"`
	// Position is the log or recording position involved, -1 if none.
	Position int64  `json:"position"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
}

func (i PlanIssue) String() string { return i.Problem + "; fix: " + i.Fix }

// ErrPlanNotFeasible is wrapped by PlanError.
var ErrPlanNotFeasible = errors.New("cluster: the recovery plan (recording.log with the archive catalog) cannot be carried out")

// PlanError returns nil for no issues, else an error wrapping
// ErrPlanNotFeasible that lists each issue with its fix.
func PlanError(issues []PlanIssue) error {
	if len(issues) == 0 {
		return nil
	}
	var b strings.Builder
	for i, is := range issues {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(is.String())
	}
	return fmt.Errorf("%w: %s", ErrPlanNotFeasible, b.String())
}

// catalogReader is what CheckPlan needs of a catalog.
type catalogReader interface {
	recordinglog.Recordings
	Entries() []archive.CatalogEntry
}

// CheckPlan returns what stops plan (made from rl with serviceCount
// services) from being carried out on the node directory dir, whose archive
// catalog is cat, each issue with its fix; none when it can be. A file that
// cannot be read (other than a missing one) is an error, not an issue. It
// only reads.
func CheckPlan(fsys vfs.FS, dir string, cat catalogReader, rl *recordinglog.Log, plan *recordinglog.RecoveryPlan) ([]PlanIssue, error) {
	return checkPlan(fsys, dir, cat, rl, plan, nil)
}

// checkPlan is CheckPlan, recording in memo the scans it takes of active
// recordings' last segments (for the start's archive recovery to take).
func checkPlan(fsys vfs.FS, dir string, cat catalogReader, rl *recordinglog.Log, plan *recordinglog.RecoveryPlan, memo *archive.ScanMemo) ([]PlanIssue, error) {
	c := planChecker{fsys: fsys, dir: dir, adir: fsys.Join(dir, ArchiveDirName), cat: cat, rl: rl, memo: memo}
	issues := c.check(plan)
	for i := range issues {
		if issues[i].Fix == "" {
			issues[i].Fix = c.fallbackFix(plan)
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return issues, nil
}

type planChecker struct {
	fsys vfs.FS
	dir  string
	adir string
	cat  catalogReader
	rl   *recordinglog.Log
	memo *archive.ScanMemo // nil: scans are not recorded
	err  error             // the first read error
	// entries is the catalog's entries, decoded at the first lookup.
	entries []archive.CatalogEntry
}

func (c *planChecker) readErr(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("cluster: check the recovery plan: %w", err)
	}
}

// check lists the issues of plan; those whose fix is a fall-back to an
// earlier set get an empty Fix, filled in by the caller.
func (c *planChecker) check(plan *recordinglog.RecoveryPlan) []PlanIssue {
	var issues []PlanIssue
	if len(plan.Problems) > 0 {
		cm := plan.Snapshots[0]
		have := c.rl.SetServiceCount()
		var b strings.Builder
		for i, p := range plan.Problems {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(p.String())
		}
		switch {
		case have >= 0 && have != plan.ServiceCount:
			issues = append(issues, PlanIssue{Kind: IssueWrongServiceCount, RecordingID: cm.RecordingID, Position: cm.LogPosition,
				Problem: fmt.Sprintf("the latest snapshot set (log position %d) holds the snapshots of %d service(s), the plan was made for %d (%s)", cm.LogPosition, have, plan.ServiceCount, b.String()),
				Fix:     fmt.Sprintf("plan for the node's %d service(s) (--services %d); the set itself is whole", have, have)})
		case detachedLog(plan):
			issues = append(issues, PlanIssue{Kind: IssueDetachedLog, RecordingID: plan.Log.RecordingID, Position: cm.LogPosition,
				Problem: fmt.Sprintf("log recording %d holds [%d, %d): the log from the snapshot at %d was detached or purged", plan.Log.RecordingID, plan.Log.RecordingStartPosition, plan.Log.StopPosition, cm.LogPosition),
				Fix:     "restore the detached segment files of the log recording (and its start position in the catalog) from a backup; no earlier snapshot set helps, its replay needs the same log"})
		default:
			issues = append(issues, PlanIssue{Kind: IssueIncompleteSet, RecordingID: cm.RecordingID, Position: cm.LogPosition,
				Problem: fmt.Sprintf("the latest snapshot set (log position %d) is incomplete: %s", cm.LogPosition, b.String())})
		}
		return issues
	}
	for _, s := range plan.Snapshots {
		issues = append(issues, c.recording(s.RecordingID, 0, -1, fmt.Sprintf("snapshot of service %d at log position %d", s.ServiceID, s.LogPosition), true)...)
	}
	issues = append(issues, c.crossCheck()...)
	if l := plan.Log; l != nil {
		log := c.recording(l.RecordingID, plan.ReplayFrom, plan.ReplayTo, "log", false)
		issues = append(issues, log...)
		if len(log) == 0 && plan.ReplayFrom < plan.ReplayTo {
			if is := c.frameAt(l, plan.ReplayFrom, plan.ReplayTo); is != nil {
				if len(plan.Snapshots) > 0 {
					is.Fix = "" // the snapshot's position is what is off: an earlier set may do
				}
				issues = append(issues, *is)
			}
		}
	}
	return issues
}

// crossCheck compares recording.log with the catalog. A torn last append
// loses one entry (recordinglog cuts the partial entry); losing more is
// not a crash and is refused: a last TERM entry whose range ends (its
// logPosition is committed, which happens only when the next TERM is
// appended) while its log recording runs past that position means the
// entries after it are gone. Snapshot recordings that no entry names are
// not evidence: a crash during or right after a snapshot leaves them
// (several, when snapshots follow each other), before their SNAPSHOT
// entries are appended.
func (c *planChecker) crossCheck() []PlanIssue {
	entries := c.rl.Entries()
	if len(entries) == 0 {
		return nil
	}
	var issues []PlanIssue
	fix := "restore recording.log from a backup (its entries were lost); the catalog and the segment files name recordings it no longer lists"
	var lastTerm *recordinglog.Entry
	for i := range entries {
		e := &entries[i]
		if e.Type == recordinglog.TypeTerm && e.Valid {
			lastTerm = e
		}
	}
	if lastTerm != nil && lastTerm.LogPosition != recordinglog.NullValue {
		if d, err := c.cat.Descriptor(lastTerm.RecordingID); err == nil && d.StopPosition > lastTerm.LogPosition {
			issues = append(issues, PlanIssue{Kind: IssueLostEntries, RecordingID: d.RecordingID, Position: lastTerm.LogPosition,
				Problem: fmt.Sprintf("%s: the last TERM entry (term %d) ends at log position %d, but log recording %d runs to %d: the entries after it are missing",
					recordinglog.FileName, lastTerm.LeadershipTermID, lastTerm.LogPosition, d.RecordingID, d.StopPosition),
				Fix: fix})
		}
	}
	return issues
}

func detachedLog(plan *recordinglog.RecoveryPlan) bool {
	return plan.Log != nil && len(plan.Snapshots) > 0 && plan.Snapshots[0].LogPosition < plan.Log.RecordingStartPosition
}

// recording checks that recording id is in the catalog, VALID, and that
// the segment files of [from, to) (to < 0: its stop) are there. snapshot:
// an issue is the latest set's (Fix left empty for the fall-back).
func (c *planChecker) recording(id, from, to int64, what string, snapshot bool) []PlanIssue {
	fix := func(f string) string {
		if snapshot {
			return ""
		}
		return f
	}
	if issues := c.recordingState(id, what); len(issues) > 0 {
		if snapshot {
			issues[0].Fix = ""
		}
		return issues
	}
	found := c.entry(id)
	d := found.Descriptor
	if from < d.StartPosition {
		from = d.StartPosition
	}
	if to < 0 || to == archive.NullPosition {
		to = d.StopPosition
		if to == archive.NullPosition {
			stop, _, err := c.memo.ComputeStopPosition(c.fsys, c.adir, d)
			if err != nil {
				c.readErr(fmt.Errorf("recording %d (%s) has no stop position and none can be computed: %w", id, what, err))
				return nil
			}
			to = stop
		}
	}
	if err := archive.CheckSegmentLength(d.SegmentFileLength, d.TermBufferLength); err != nil {
		return []PlanIssue{{Kind: IssueDamagedCatalog, RecordingID: id, Position: -1,
			Problem: fmt.Sprintf("recording %d (%s): catalog entry: %v", id, what, err),
			Fix:     fix("restore the archive catalog (archive.catalog) from a backup")}}
	}
	sl := int64(d.SegmentFileLength)
	for base := archive.SegmentFileBasePosition(d.StartPosition, from, d.TermBufferLength, d.SegmentFileLength); base < to; base += sl {
		name := archive.SegmentFileName(id, base)
		size, err := c.fsys.Stat(c.fsys.Join(c.adir, name))
		need := min(sl, to-base)
		var problem string
		switch {
		case err != nil && !errors.Is(err, vfs.ErrNotExist):
			c.readErr(err)
			return nil
		case err != nil:
			problem = fmt.Sprintf("segment file %s of recording %d (%s), positions [%d, %d), is missing", name, id, what, base, base+need)
		case size < need:
			problem = fmt.Sprintf("segment file %s of recording %d (%s) holds %d bytes, positions up to %d need %d", name, id, what, size, base+need, need)
		case size > sl:
			problem = fmt.Sprintf("segment file %s of recording %d (%s) holds %d bytes, more than the segment length %d: the bytes after %d were not written by the archive", name, id, what, size, sl, sl)
		default:
			continue
		}
		return []PlanIssue{{Kind: IssueMissingSegment, RecordingID: id, Position: base, Problem: problem,
			Fix: fix(fmt.Sprintf("restore %s from a backup; no earlier snapshot set helps, its replay reads this segment too", name))}}
	}
	return nil
}

// entry returns the catalog entry of id: the VALID one, else the last.
func (c *planChecker) entry(id int64) *archive.CatalogEntry {
	var found *archive.CatalogEntry
	if c.entries == nil {
		// Decoded once a check: the catalog holds an entry for every
		// recording ever made (deleted ones too), and the check looks up
		// several.
		c.entries = c.cat.Entries()
	}
	entries := c.entries
	for i := range entries {
		if e := &entries[i]; e.Descriptor.RecordingID == id && (found == nil || e.State == archive.StateValid || found.State != archive.StateValid) {
			found = e
		}
	}
	return found
}

// recordingState checks that recording id is in the catalog and VALID.
func (c *planChecker) recordingState(id int64, what string) []PlanIssue {
	found := c.entry(id)
	if found == nil {
		return []PlanIssue{{Kind: IssueUnknownRecording, RecordingID: id, Position: -1,
			Problem: fmt.Sprintf("recording %d (%s) is not in the archive catalog", id, what),
			Fix:     "restore the archive catalog (archive.catalog) from a backup; the log is needed by every snapshot set"}}
	}
	if found.State != archive.StateValid {
		return []PlanIssue{{Kind: IssueInvalidRecording, RecordingID: id, Position: -1,
			Problem: fmt.Sprintf("recording %d (%s) is %s in the archive catalog", id, what, found.State),
			Fix: fmt.Sprintf("find why it was marked (`matchlog archive verify --dir %s --id %d`), restore its files from a backup if they are damaged, "+
				"then mark it VALID again; the log is needed by every snapshot set", c.adir, id)}}
	}
	return nil
}

// frameAt checks, with archive.RecordingReader, that a frame of the log
// starts at pos and that this frame, which ends at or before to, is whole.
func (c *planChecker) frameAt(l *recordinglog.LogRecording, pos, to int64) *PlanIssue {
	bad := func(why string) *PlanIssue {
		return &PlanIssue{Kind: IssueOffFrameGrid, RecordingID: l.RecordingID, Position: pos,
			Problem: fmt.Sprintf("replay position %d of log recording %d is not at a frame: %s", pos, l.RecordingID, why),
			Fix:     "the recording.log entry naming that position, or the log, is damaged: restore them from a backup"}
	}
	if pos%archive.FrameAlignment != 0 {
		return bad(fmt.Sprintf("not a multiple of the %d-byte frame alignment", archive.FrameAlignment))
	}
	d, err := c.cat.Descriptor(l.RecordingID)
	if err != nil {
		return nil // reported by recording()
	}
	r, err := archive.OpenRecordingReader(c.fsys, c.adir, d, pos, to)
	switch {
	case errors.Is(err, archive.ErrInvalidPosition) || errors.Is(err, archive.ErrCorrupt):
		return bad(err.Error())
	case err != nil:
		c.readErr(err)
		return nil
	}
	defer r.Close()
	if _, _, _, ok := r.Next(); !ok {
		switch err := r.Err(); {
		case errors.Is(err, archive.ErrCorrupt):
			return bad(err.Error())
		case err != nil:
			c.readErr(err)
		default:
			return bad(fmt.Sprintf("no whole frame before %d", to))
		}
	}
	return nil
}

// fallbackFix is the fix for a latest snapshot set that cannot be used:
// invalidate it when the plan that leaves can be carried out, else say
// there is nothing to fall back to.
func (c *planChecker) fallbackFix(plan *recordinglog.RecoveryPlan) string {
	restore := "restore the latest snapshot set's recordings from a backup"
	fb, err := c.rl.PlanAfterInvalidation(c.cat, plan.ServiceCount)
	if err != nil || fb == nil {
		return restore + " (there is no earlier snapshot set to fall back to)"
	}
	if len(fb.Snapshots) == 0 {
		if fb.Log == nil || fb.Log.RecordingStartPosition != 0 || fb.Log.TermBaseLogPosition != 0 {
			return restore + " (there is no earlier snapshot set, and the log no longer starts at position 0 to replay it whole)"
		}
	}
	if issues := c.check(fb); len(issues) > 0 {
		return fmt.Sprintf("%s (the earlier set cannot be used either: %s)", restore, issues[0].Problem)
	}
	to := "replay the whole log from position 0"
	if len(fb.Snapshots) > 0 {
		to = fmt.Sprintf("fall back to the snapshot set at log position %d", fb.Snapshots[0].LogPosition)
	}
	return fmt.Sprintf("run `matchlog cluster invalidate-latest-snapshot --dir %s` to %s (`matchlog cluster revalidate-snapshot` undoes it), or %s", c.dir, to, restore)
}

// ExplainPlanError adds the fix to an error of
// recordinglog.Log.CreateRecoveryPlan: when the log's recording is not a
// VALID recording of cat, the error becomes a PlanError saying whether it is
// missing from the catalog or marked INVALID there, and what to do. Other
// errors are returned as they are.
func ExplainPlanError(dir string, cat catalogReader, err error) error {
	var ue *recordinglog.UnknownRecordingError
	if !errors.As(err, &ue) {
		return err
	}
	c := planChecker{fsys: nil, dir: dir, adir: dir + "/" + ArchiveDirName, cat: cat}
	issues := c.recordingState(ue.Entry.RecordingID, fmt.Sprintf("log of term %d", ue.Entry.LeadershipTermID))
	if len(issues) == 0 {
		return err
	}
	return fmt.Errorf("%w (%v)", PlanError(issues), err)
}
