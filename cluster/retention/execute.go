package retention

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Executing a plan (Purge). The plan is MakePlan's over the facts Gather
// finds now; Purge carries it out only when every member's plan is
// approved, one member at a time, each member in these steps:
//
//  1. hash-before (a matchlog node whose service is the engine): the node
//     is started on a copy-on-write view of its directory (cowFS: the
//     start's writes stay in memory), which loads the latest snapshot and
//     replays the log to P; its engine state hash is kept.
//  2. backup: recording.log is copied to recording.log<BackupMarker><ms>
//     and the catalog and the archive's mark file to
//     archive.catalog<BackupMarker><ms> and archive-mark.dat<BackupMarker><ms>
//     (archive.NewCheckpoint), written and synced before anything changes.
//  3. detach: the archive is opened as a restart would open it
//     (archive.Open), the log recording's start is moved to the plan's new
//     start (Archive.Detach) and the archive is closed. No file is deleted.
//  4. validate: Gather, Decide and cluster.CheckPlan (Facts.PlanIssues) on
//     the detached directory: the start must be the new one, S and P
//     unchanged, the verdict the one the plan promised, the recovery plan
//     accepted; for a matchlog node, a restart (as in step 1) must reach
//     the same state hash. A failed validation puts the directory back
//     (archive.Checkpoint.Restore, the recording.log backup) as it was
//     before step 2, byte for byte, and stops the purge with the reason.
//  5. delete: the archive is opened again; the segment files below the new
//     start are renamed to *.deleted (Archive.DeleteDetached), and the
//     snapshot recordings the plan lists (whole generations older than
//     every kept set, and orphans) are purged (Archive.PurgeRecording:
//     catalog entry DELETED, files renamed to *.deleted). With Delay 0
//     every renamed file is unlinked before the archive is closed
//     (Archive.DrainDeletes: an offline member has no reader in flight);
//     otherwise the *.deleted files stay, and the archive's next Open (the
//     node's next start) schedules them and unlinks them after its
//     delete delay.
//  6. check: step 4's checks again, on the final directory.
//  7. remove-backups: the copies of step 2 are removed, with any an
//     interrupted earlier purge of the member left (they describe a state
//     before a purge that has now completed and been checked).
//
// A failure in steps 5 to 7 cannot be undone (files are renamed or gone)
// and keeps the backups; the error says so. A crash at any point leaves a
// member whose verdict and recovery plan are those of before or after the
// detach (the catalog's start is written and synced before any file below
// it is renamed, a recording's DELETED state before its files), and a new
// Purge completes the work: the detached files are still below the start,
// a DELETED recording's remaining files are renamed, files an earlier run
// renamed are unlinked (with Delay 0, or when the archive would otherwise
// refuse a delete of the same recording as in progress).
//
// recording.log is not changed: Aeron's RecordingLog keeps the entries of
// snapshots whose recordings were purged (it invalidates entries only for
// invalidate-latest-snapshot), and so does Purge; their sets then show as
// not existing, older than every kept set, which neither the verdict nor
// the recovery plan consults.

// BackupMarker starts the suffix of a purge's backup copies
// (recording.log.purge-<ms>, archive.catalog.purge-<ms>).
const BackupMarker = ".purge-"

// Member kinds of a purge.
const (
	KindMatchlog = "matchlog-node"
	KindAeron    = "aeron"
)

// Purge statuses.
const (
	StatusPurged     = "purged"
	StatusNothing    = "nothing-to-do"
	StatusRestored   = "failed-restored"
	StatusFailed     = "failed"
	StatusNotStarted = "not-started"
)

// ErrPurgeRefused is returned by Purge when a member's plan is refused;
// nothing was changed.
var ErrPurgeRefused = errors.New("retention: the purge is refused (see refusals); nothing was changed")

// PurgeOptions configure Purge.
type PurgeOptions struct {
	// Gather and Plan are the options of Gather and MakePlan.
	Gather Options
	Plan   PlanOptions
	// Delay: 0 unlinks the renamed files at the end of each member's
	// purge; otherwise they are left as *.deleted for the archive's next
	// Open to unlink after its delete delay.
	Delay time.Duration
	// Clock is the time in epoch ms (backup names, mark files, liveness);
	// nil: now.
	Clock func() int64
}

// FileBytes is a file and its length.
type FileBytes struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// PurgeStep is one step of a member's purge, in order.
type PurgeStep struct {
	Step   string `json:"step" doc:"hash-before, backup, detach, validate, delete, unlink, check, remove-backups, restore"`
	Detail string `json:"detail" doc:"what was done, in words"`
}

// MemberPurge is what Purge did on one member.
type MemberPurge struct {
	ID     int32  `json:"id"`
	Kind   string `json:"kind" doc:"matchlog-node or aeron"`
	Status string `json:"status" doc:"purged, nothing-to-do, failed-restored (validation failed, directory put back as it was), failed, not-started (an earlier member failed)"`
	Error  string `json:"error,omitempty"`
	// RestartChecked: the state hash was compared (a matchlog node whose
	// service is the engine); RestartNote says why not otherwise.
	RestartChecked    bool        `json:"restart_checked"`
	RestartNote       string      `json:"restart_note,omitempty"`
	HashBefore        string      `json:"state_hash_before,omitempty" doc:"engine state hash of a restart before the purge (snapshot + replay to P)"`
	HashAfter         string      `json:"state_hash_after,omitempty" doc:"the same after the purge; equal to state_hash_before"`
	Backups           []string    `json:"backups" doc:"copies made before the change (removed at the end unless the purge failed)"`
	DetachedFrom      int64       `json:"detached_from" doc:"log recording start before; -1 when nothing was detached"`
	DetachedTo        int64       `json:"detached_to" doc:"log recording start after; -1 when nothing was detached"`
	Validated         string      `json:"validated_verdict" doc:"the verdict recomputed on the detached directory"`
	Renamed           []FileBytes `json:"renamed" doc:"segment files renamed to <name>.deleted (the names before the rename)"`
	Unlinked          []string    `json:"unlinked" doc:"*.deleted files unlinked (--delay 0), those earlier runs left included"`
	Pending           []string    `json:"pending_deletion" doc:"*.deleted files left for the archive's next open"`
	DeletedRecordings []int64     `json:"deleted_recordings" doc:"snapshot (and orphaned) recordings purged: catalog entry DELETED, files renamed"`
	RemovedBackups    []string    `json:"removed_backups"`
	Steps             []PurgeStep `json:"steps"`
}

// PurgeResult is a purge's plan and what was done.
type PurgeResult struct {
	Plan    Plan
	Members []MemberPurge
	// Refused: a member's plan was refused and nothing was done.
	Refused bool
}

// Purge carries out the plan MakePlan makes of the members' facts now
// (see the steps above). Every member must be stopped. On a refusal
// (ErrPurgeRefused) nothing on disk changed; the plan's refusals name
// each reason. Any other error stops the purge at the member that failed;
// the members before it are purged.
func Purge(fsys vfs.FS, members []Member, opts PurgeOptions) (*PurgeResult, error) {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	gopts := opts.Gather
	gopts.NowMs = opts.Clock()
	var facts []*Facts
	for _, m := range members {
		f, err := Gather(fsys, m, gopts)
		if err != nil {
			return nil, err
		}
		facts = append(facts, f)
	}
	plan := MakePlan(facts, opts.Plan)
	res := &PurgeResult{Plan: plan}
	jobs := make([]*purgeJob, len(members))
	for i, m := range members {
		mp := &res.Plan.Members[i]
		j := &purgeJob{fs: fsys, m: m, f: facts[i], mp: mp, opts: opts,
			out: MemberPurge{ID: m.ID, Kind: KindAeron, Status: StatusNotStarted, DetachedFrom: -1, DetachedTo: -1,
				Backups: []string{}, Renamed: []FileBytes{}, Unlinked: []string{}, Pending: []string{}, DeletedRecordings: []int64{},
				RemovedBackups: []string{}, Steps: []PurgeStep{}}}
		jobs[i] = j
		if mf, err := cluster.ReadMarkFile(fsys, j.cdir()); err == nil && mf.IsMatchlog() {
			j.out.Kind = KindMatchlog
		}
		if mp.Approved {
			j.preflight()
		}
		res.Refused = res.Refused || !mp.Approved
	}
	if res.Refused {
		for _, j := range jobs {
			res.Members = append(res.Members, j.out)
		}
		return res, ErrPurgeRefused
	}
	var err error
	for _, j := range jobs {
		if err == nil {
			err = j.run()
		}
		res.Members = append(res.Members, j.out)
	}
	return res, err
}

// purgeJob is one member's purge.
type purgeJob struct {
	fs   vfs.FS
	m    Member
	f    *Facts
	mp   *MemberPlan
	opts PurgeOptions
	out  MemberPurge

	newStart  int64   // the plan's start (A when nothing is detached)
	recs      []int64 // recordings to purge
	geometry  *restartGeometry
	suffix    string
	rlBackup  string
	ckpt      *archive.Checkpoint
	hashStart uint64
}

func (j *purgeJob) cdir() string { return j.fs.Join(j.m.Dir, cluster.ClusterDirName) }
func (j *purgeJob) adir() string { return j.fs.Join(j.m.Dir, cluster.ArchiveDirName) }

func (j *purgeJob) step(name, format string, args ...any) {
	j.out.Steps = append(j.out.Steps, PurgeStep{name, fmt.Sprintf(format, args...)})
}

func (j *purgeJob) refuse(rule, fix, format string, args ...any) {
	j.mp.Refusals = append(j.mp.Refusals, Refusal{rule, fmt.Sprintf(format, args...), fix})
	j.mp.Approved = false
}

// Refusals Purge adds to MakePlan's.
const (
	RefuseArchiveRefusesDetach = "archive-refuses-detach"
	RefuseNoRestartGeometry    = "restart-check-impossible"
)

// PurgeRefusalRules lists the rules Purge refuses a member with beyond
// MakePlan's RefusalRules.
var PurgeRefusalRules = []string{RefuseArchiveRefusesDetach, RefuseNoRestartGeometry}

// preflight makes, before anything is written, the checks the purge
// needs beyond the plan's, and works out what it will do.
func (j *purgeJob) preflight() {
	m := &j.mp.Manifest
	j.newStart = m.ProposedStart
	if m.Postponed {
		j.newStart = j.f.A
	}
	if j.newStart > j.f.A {
		if err := archive.CheckRemoval(j.fs, j.adir(), j.f.LogRecordingID, j.newStart, true, false, true); err != nil {
			j.refuse(RefuseArchiveRefusesDetach, "plan again (the archive's own detach rules apply: `matchlog archive describe`)", "%v", err)
		}
	}
	if !m.Postponed {
		for _, d := range m.DeleteSnapshots {
			for _, r := range d.Recordings {
				if r.Exists && !slices.Contains(j.recs, r.RecordingID) {
					j.recs = append(j.recs, r.RecordingID)
				}
			}
		}
	}
	// A recording an interrupted purge left DELETED with files: finish it.
	if desc, err := archive.Describe(j.fs, j.adir()); err == nil {
		for _, r := range desc.Recordings {
			if r.State == archive.StateDeleted && len(r.Segments) > 0 && !slices.Contains(j.recs, r.Descriptor.RecordingID) {
				j.recs = append(j.recs, r.Descriptor.RecordingID)
			}
		}
	}
	if j.out.Kind == KindMatchlog {
		g, err := geometryOf(j.fs, j.m.Dir, j.f.LogRecordingID)
		switch {
		case errors.Is(err, enginesvc.ErrNotEngineSnapshot):
			j.out.RestartNote = "the node's service is not the matching engine: no restart check (validation is Gather, Decide and CheckPlan)"
		case err != nil:
			j.refuse(RefuseNoRestartGeometry, "repair the node first (`matchlog cluster recovery-plan`)", "the restart check cannot read the node: %v", err)
		default:
			j.geometry = g
		}
	} else {
		j.out.RestartNote = "not a matchlog node directory: no restart (we cannot run its service); validation is Gather, Decide and CheckPlan"
	}
}

// work reports whether anything is to be done on the member.
func (j *purgeJob) work() (bool, error) {
	if j.newStart > j.f.A || len(j.recs) > 0 {
		return true, nil
	}
	files, err := archive.DeletedSegments(j.fs, j.adir())
	if err != nil {
		return false, err
	}
	if len(files) > 0 && j.opts.Delay == 0 {
		return true, nil
	}
	for _, f := range j.f.LogFiles {
		if f.Base+j.f.SegmentLength <= Boundary(j.f.A, j.f.SegmentLength) {
			return true, nil // detached by an earlier run, not yet renamed
		}
	}
	// Backups an interrupted purge left: it is finished (checked, and its
	// backups removed).
	left, err := archive.CheckpointBackups(j.fs, j.adir(), BackupMarker)
	if err != nil || len(left) > 0 {
		return len(left) > 0, err
	}
	cnames, err := j.fs.List(j.cdir())
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(cnames, func(n string) bool { return strings.HasPrefix(n, recordinglog.FileName+BackupMarker) }), nil
}

func (j *purgeJob) run() (err error) {
	j.out.Status = StatusFailed
	defer func() {
		if err != nil {
			err = fmt.Errorf("retention: purge of member %d: %w", j.m.ID, err)
			j.out.Error = err.Error()
		}
	}()
	todo, err := j.work()
	if err != nil {
		return err
	}
	if !todo {
		j.out.Status = StatusNothing
		j.step("check", "nothing to detach or delete: the log starts at %d, the plan's new start", j.f.A)
		return nil
	}
	if j.geometry != nil {
		h, err := restartHash(j.fs, j.m.Dir, j.geometry, j.opts.Clock)
		if err != nil {
			return fmt.Errorf("restart before the purge (nothing changed): %w", err)
		}
		j.hashStart = h
		j.out.HashBefore = fmt.Sprintf("%016x", h)
		j.out.RestartChecked = true
		j.step("hash-before", "a restart (snapshot at %d + replay to P = %d, in memory) reaches state hash %s", j.mp.Positions.S, j.f.P, j.out.HashBefore)
	}
	if err := j.backup(); err != nil {
		return fmt.Errorf("back up (nothing changed): %w", err)
	}
	err = j.detachAndValidate()
	if err == nil {
		err = j.delete()
	}
	if err != nil {
		// Put the directory back, unless a file is already renamed or
		// unlinked (the checkpoint then refuses and changes nothing).
		if rerr := j.restore(); errors.Is(rerr, archive.ErrCheckpointLost) {
			return fmt.Errorf("%w (files are renamed or unlinked, it cannot be undone: the backups %v are kept)", err, j.out.Backups)
		} else if rerr != nil {
			return errors.Join(err, fmt.Errorf("the directory could not be put back as it was (backups kept: %v): %w", j.out.Backups, rerr))
		}
		j.out.Status = StatusRestored
		j.out.Backups = j.out.Backups[:0]
		j.step("restore", "the catalog, the mark file and recording.log were put back from the backups, which are removed: the directory is as it was")
		return fmt.Errorf("%w (the directory is as it was before the purge)", err)
	}
	if err := j.validate("check"); err != nil {
		return fmt.Errorf("%w (after the deletion: the backups %v are kept)", err, j.out.Backups)
	}
	if err := j.removeBackups(); err != nil {
		return err
	}
	j.out.Status = StatusPurged
	return nil
}

// backup copies recording.log and checkpoints the archive.
func (j *purgeJob) backup() error {
	j.suffix = fmt.Sprintf("%s%d", BackupMarker, j.opts.Clock())
	src := j.fs.Join(j.cdir(), recordinglog.FileName)
	j.rlBackup = src + j.suffix
	if err := vfs.CopyFile(j.fs, src, j.rlBackup); err != nil {
		return err
	}
	if err := j.fs.SyncDir(j.cdir()); err != nil {
		return errors.Join(err, j.removeRLBackup())
	}
	ck, err := archive.NewCheckpoint(j.fs, j.adir(), j.suffix)
	if err != nil {
		return errors.Join(err, j.removeRLBackup())
	}
	j.ckpt = ck
	j.out.Backups = append(j.out.Backups, j.fs.Join(cluster.ClusterDirName, recordinglog.FileName+j.suffix))
	for _, b := range ck.Backups() {
		j.out.Backups = append(j.out.Backups, j.fs.Join(cluster.ArchiveDirName, b))
	}
	j.step("backup", "copied %s", strings.Join(j.out.Backups, ", "))
	return nil
}

func (j *purgeJob) removeRLBackup() error {
	if err := j.fs.Remove(j.rlBackup); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return err
	}
	return j.fs.SyncDir(j.cdir())
}

// restore puts the directory back as backup found it.
func (j *purgeJob) restore() error {
	if j.ckpt == nil {
		return nil
	}
	err := j.ckpt.Restore()
	if errors.Is(err, archive.ErrCheckpointLost) {
		return err // nothing was changed; every backup stays
	}
	// recording.log is never written by a purge; if it was changed
	// anyway, its backup goes back.
	if same, cerr := sameBytes(j.fs, j.rlBackup, j.fs.Join(j.cdir(), recordinglog.FileName)); cerr != nil || !same {
		if rerr := j.fs.Rename(j.rlBackup, j.fs.Join(j.cdir(), recordinglog.FileName)); rerr != nil {
			return errors.Join(err, cerr, rerr)
		}
	}
	return errors.Join(err, j.removeRLBackup())
}

// openArchive opens the member's stopped archive as a restart would.
func (j *purgeJob) openArchive() (*archive.Archive, error) {
	// The mark file is left as found: it may be real Aeron's, and the
	// member stays stopped while the purge runs.
	opts := archive.Options{FileSyncLevel: 1, CatalogSyncLevel: 1, Clock: j.opts.Clock, DeleteDelay: j.opts.Delay, LeaveMarkFile: true}
	if j.opts.Delay <= 0 {
		opts.DeleteDelay = -1
	}
	if cat, err := archive.OpenCatalogFile(j.fs, j.adir(), archive.CatalogOptions{ReadOnly: true}); err == nil {
		opts.CatalogCapacity = max(cat.Capacity(), archive.MinCatalogCapacity)
		cat.Close()
	}
	return archive.Open(j.fs, j.adir(), opts)
}

func (j *purgeJob) detachAndValidate() error {
	if j.newStart > j.f.A {
		a, err := j.openArchive()
		if err != nil {
			return err
		}
		err = a.Detach(j.f.LogRecordingID, j.newStart)
		if cerr := a.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		j.out.DetachedFrom, j.out.DetachedTo = j.f.A, j.newStart
		j.step("detach", "log recording %d: start %d -> %d (detached %d segment file(s), %d bytes, kept on disk until validated)",
			j.f.LogRecordingID, j.f.A, j.newStart, len(j.mp.Manifest.Detach), j.mp.Manifest.DetachBytes)
	}
	return j.validate("validate")
}

// validate recomputes the facts, the verdict and the recovery plan's
// check, and for a matchlog node the restart's state hash.
func (j *purgeJob) validate(stage string) error {
	gopts := j.opts.Gather
	gopts.NowMs = j.opts.Clock()
	f, err := Gather(j.fs, j.m, gopts)
	if err != nil {
		return fmt.Errorf("%s: %w", stage, err)
	}
	v := Decide(f)
	want := j.mp.Verdict
	var bad []string
	if f.Running != "" {
		bad = append(bad, "the member is running: "+f.Running)
	}
	if f.A != j.newStart {
		bad = append(bad, fmt.Sprintf("the log starts at A = %d, not at the plan's %d", f.A, j.newStart))
	}
	if f.P != j.f.P {
		bad = append(bad, fmt.Sprintf("P = %d, was %d", f.P, j.f.P))
	}
	if v.Positions.S != want.Positions.S {
		bad = append(bad, fmt.Sprintf("S = %d, was %d", v.Positions.S, want.Positions.S))
	}
	if v.Verdict != want.Verdict {
		bad = append(bad, fmt.Sprintf("the verdict is %s (%s), the plan promised %s", v.Verdict, strings.Join(v.Reasons, "; "), want.Verdict))
	}
	for _, p := range f.PlanIssues {
		bad = append(bad, "recovery plan: "+p)
	}
	if len(f.MissingSegments) > 0 {
		bad = append(bad, fmt.Sprintf("segment files missing: %v", f.MissingSegments))
	}
	detail := fmt.Sprintf("verdict %s (S = %d, A = %d, P = %d), recovery plan accepted by CheckPlan", v.Verdict, v.Positions.S, f.A, f.P)
	if len(bad) == 0 && j.geometry != nil {
		h, err := restartHash(j.fs, j.m.Dir, j.geometry, j.opts.Clock)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("the restart fails: %v", err))
		case h != j.hashStart:
			bad = append(bad, fmt.Sprintf("a restart reaches state hash %016x, not %s", h, j.out.HashBefore))
		default:
			detail += fmt.Sprintf("; a restart (in memory) reaches state hash %016x", h)
			if stage == "check" {
				j.out.HashAfter = fmt.Sprintf("%016x", h)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s failed: %s", stage, strings.Join(bad, "; "))
	}
	if stage == "validate" {
		j.out.Validated = v.Verdict
	}
	j.step(stage, "%s", detail)
	return nil
}

// delete renames the detached files and the purged recordings' files and,
// with Delay 0, unlinks them.
func (j *purgeJob) delete() (err error) {
	a, err := j.openArchive()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.Close(); err == nil {
			err = cerr
		}
		if j.opts.Delay > 0 {
			j.out.Pending = append(j.out.Pending[:0], pendingNames(j.fs, j.adir())...)
			if len(j.out.Pending) > 0 {
				j.step("unlink", "left %d file(s) as *.deleted: the archive's next open (the node's next start) unlinks them after its delete delay", len(j.out.Pending))
			}
		}
	}()
	inProgress := a.DeleteInProgress(j.f.LogRecordingID) || slices.ContainsFunc(j.recs, a.DeleteInProgress)
	if len(a.PendingDeletes()) > 0 && (j.opts.Delay == 0 || inProgress) {
		// Files an earlier run (or a stopped node) renamed: the member is
		// stopped, no reader holds them. With --delay 0 they go too; with
		// a delay only when a delete below must not be refused as in
		// progress (the archive runs one delete per recording at a time).
		left := names(a.PendingDeletes())
		n, err := a.DrainDeletes(true)
		j.out.Unlinked = append(j.out.Unlinked, left[:n]...)
		if err != nil {
			return err
		}
		j.step("unlink", "unlinked %d file(s) an earlier run renamed: %s", len(left), strings.Join(left, ", "))
	}
	// rename runs one rename phase and records the files it renamed, also
	// when it fails part way.
	rename := func(fn func() (int, error)) ([]archive.PendingDelete, error) {
		before := len(a.PendingDeletes())
		_, err := fn()
		renamed := a.PendingDeletes()[before:]
		for _, p := range renamed {
			j.out.Renamed = append(j.out.Renamed, FileBytes{strings.TrimSuffix(p.Name, archive.DeletedSuffix), p.Size})
		}
		return renamed, err
	}
	renamed, err := rename(func() (int, error) { return a.DeleteDetached(j.f.LogRecordingID) })
	if err != nil {
		return err
	}
	if len(renamed) > 0 {
		j.step("delete", "log recording %d: renamed %s", j.f.LogRecordingID, fileList(renamed))
	}
	for _, id := range j.recs {
		renamed, err := rename(func() (int, error) { return a.PurgeRecording(id) })
		if err != nil {
			return err
		}
		j.out.DeletedRecordings = append(j.out.DeletedRecordings, id)
		j.step("delete", "recording %d: catalog entry DELETED, renamed %s", id, fileList(renamed))
	}
	if j.opts.Delay == 0 {
		pend := names(a.PendingDeletes())
		n, err := a.DrainDeletes(true)
		j.out.Unlinked = append(j.out.Unlinked, pend[:n]...)
		if err != nil {
			return err
		}
		if len(pend) > 0 {
			j.step("unlink", "unlinked %d file(s) (--delay 0: no reader of a stopped member is in flight)", len(pend))
		}
	}
	return nil
}

// removeBackups removes this purge's copies and those an interrupted
// earlier purge of the member left.
func (j *purgeJob) removeBackups() error {
	removed, err := archive.RemoveCheckpointBackups(j.fs, j.adir(), BackupMarker)
	for _, r := range removed {
		j.out.RemovedBackups = append(j.out.RemovedBackups, j.fs.Join(cluster.ArchiveDirName, r))
	}
	if err != nil {
		return err
	}
	cnames, err := j.fs.List(j.cdir())
	if err != nil {
		return err
	}
	for _, n := range cnames {
		if strings.HasPrefix(n, recordinglog.FileName+BackupMarker) {
			if err := j.fs.Remove(j.fs.Join(j.cdir(), n)); err != nil && !errors.Is(err, vfs.ErrNotExist) {
				return err
			}
			j.out.RemovedBackups = append(j.out.RemovedBackups, j.fs.Join(cluster.ClusterDirName, n))
		}
	}
	if err := j.fs.SyncDir(j.cdir()); err != nil {
		return err
	}
	slices.Sort(j.out.RemovedBackups)
	j.step("remove-backups", "removed %s", strings.Join(j.out.RemovedBackups, ", "))
	return nil
}

func names(ps []archive.PendingDelete) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func fileList(ps []archive.PendingDelete) string {
	if len(ps) == 0 {
		return "no file (none left)"
	}
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s (%d bytes)", strings.TrimSuffix(p.Name, archive.DeletedSuffix), p.Size))
	}
	return strings.Join(parts, ", ") + " to *" + archive.DeletedSuffix
}

func pendingNames(fsys vfs.FS, adir string) []string {
	files, _ := archive.DeletedSegments(fsys, adir)
	out := []string{}
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

// restartGeometry is what a restart of a matchlog node needs to know of
// it: its log's term length, MTU and segment length, its engine's app
// version.
type restartGeometry struct {
	termLength, mtu int
	segmentLength   int32
	appVersion      int32
}

func geometryOf(fsys vfs.FS, dir string, logID int64) (*restartGeometry, error) {
	es, err := enginesvc.ReadSnapshot(fsys, dir, -1, false)
	if err != nil {
		return nil, err
	}
	cat, err := archive.OpenCatalogFile(fsys, fsys.Join(dir, cluster.ArchiveDirName), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	d, err := cat.Descriptor(logID)
	if err != nil {
		return nil, err
	}
	return &restartGeometry{termLength: int(d.TermBufferLength), mtu: int(d.MTULength), segmentLength: d.SegmentFileLength, appVersion: es.AppVersion}, nil
}

// restartHash starts the node of dir on a copy-on-write view (nothing
// reaches dir) and returns its engine's state hash after the start's
// snapshot load and replay.
func restartHash(fsys vfs.FS, dir string, g *restartGeometry, clock func() int64) (uint64, error) {
	svc := enginesvc.New(enginesvc.Options{AppVersion: g.appVersion})
	n, err := cluster.Open(cluster.Options{Dir: dir, FS: newCOW(fsys), Service: svc, TermLength: g.termLength, MTU: g.mtu,
		SegmentLength: g.segmentLength, AppVersion: g.appVersion, EpochClock: clock})
	if err != nil {
		return 0, err
	}
	h := svc.Engine().StateHash()
	if err := n.Close(); err != nil {
		return 0, err
	}
	return h, nil
}

func sameBytes(fsys vfs.FS, a, b string) (bool, error) {
	x, err := vfs.ReadFile(fsys, a)
	if err != nil {
		return false, err
	}
	y, err := vfs.ReadFile(fsys, b)
	if err != nil {
		return false, err
	}
	return string(x) == string(y), nil
}
