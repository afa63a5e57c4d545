package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
)

// Automatic retention
//
// A node embedded in a service must not fill its disk, and must never
// delete what its recovery needs. Options.Retention turns on a loop that,
// every CheckInterval, whenever the log enters a new segment (with a size
// or free-disk rule: that is when the archive directory grows) and after
// every completed snapshot, does what seeds/000 asks of automatic
// retention: time and space rules only propose, the positions approve.
//
//  1. Proposals. Each rule proposes a new start of the log recording
//     (a candidate cutoff): by age, the first segment whose largest
//     timestamp is not older than MaxAge (archive.Archive.AgeCutoff,
//     Kafka's largestTimestamp rule, in cluster time); by size, the
//     fewest oldest segments whose removal brings the archive directory
//     (every file in it, at its length) to MaxBytes; by free disk, the
//     fewest oldest segments whose removal leaves MinFreeBytes free
//     (archive.FreeBytes). Files already waiting to be unlinked, segments
//     already detached and the snapshot generations this check deletes
//     count as freed.
//  2. Approval ([ApproveCutoff], a pure function): the largest proposal is
//     rounded down to a segment boundary and lowered to at most C, the
//     greatest segment boundary ≤ S of the oldest snapshot generation
//     kept (the Keep newest complete sets, default 2), and to at most
//     the base of the active segment. What is left must detach at least
//     one segment, else the proposal is refused: no complete snapshot
//     set (every byte of the log is needed), the cutoff would pass C, or
//     only the active segment is there.
//  3. Execution, on the node's goroutine, one step per DoWork: the
//     recovery plan is recomputed on the state the detach would leave
//     (the catalog's descriptors with the new start) and must pass
//     CheckPlan, then archive Detach, then the plan is computed again on
//     the real, detached state; next DoWork, the first phase of the
//     two-phase delete (archive DeleteDetached: the files renamed to
//     *.deleted, after the catalog start is durable); then one file
//     unlinked per DoWork by archive DeleteStep once DeleteDelay has
//     passed. A refused second validation stops automatic retention for
//     the node's run and deletes nothing (it cannot happen unless the
//     files change under the node). A crash between the detach and the
//     renames leaves segment files below the start (no reader uses them;
//     Verify calls them orphans): the next check renames them.
//  4. Snapshot generations: every generation older than the oldest kept
//     one is deleted whole — its recording.log entries invalidated (the
//     consensus module's first, so that it is no set at once), then each
//     of its recordings deleted (archive PurgeRecording, two-phase like
//     the segments), each a step of its own. Recordings a crash left in
//     no recording.log entry (an interrupted snapshot) go too, when no
//     snapshot is being taken; a delete a crash interrupted is finished
//     by the next check.
//
// Every proposal, approval, refusal (with its reason) and deletion is
// logged on Options.Logger and counted in Stats (Retention*), which
// server/metrics exports.
//
// Concurrency: all of it runs on the node's goroutine, inside DoWork,
// after the cycle's log is recorded — the goroutine that also drives the
// log recording, so no detach races an append, and recording.log is only
// written there. The pauseless snapshot writer, on its own goroutine,
// touches only its own recordings; the archive's catalog mutex orders its
// catalog updates with Detach, DeleteDetached and PurgeRecording, and the
// validation reads the catalog through the archive's locked Descriptor and
// ListRecordings, never the Catalog itself. A generation is deleted only
// once its SNAPSHOT entries are in recording.log, which happens on the
// node's goroutine after the writer has stopped its recordings; orphans
// only while no snapshot is in progress.
//
// Cost: the steady state (no check due) is a few integer comparisons and
// allocates nothing; a check lists and stats the archive directory and
// reads recording.log's entries (it allocates, once per check). Each later
// step holds at most one catalog or recording.log change and its syncs
// (the detach with two recovery-plan checks, the renames, the
// invalidation of one generation's entries, the delete of one recording)
// or one unlink, which may take milliseconds for a large file: the longest
// a DoWork spends on retention is one such step (Stats.MaxRetentionWork;
// TestRetentionBudgetUnderLoad logs it with the duty cycle's durations).

// DefaultRetentionKeep is RetentionOptions.Keep's default: the complete
// snapshot generations automatic retention keeps (as `retention plan
// --keep`).
const DefaultRetentionKeep = 2

// RetentionOptions configure automatic retention (Options.Retention). It
// is on when any rule (MaxAge, MaxBytes, MinFreeBytes) or Keep is set; the
// zero value is off: nothing is deleted.
type RetentionOptions struct {
	// CheckInterval is how often the rules are evaluated (0:
	// archive.DefaultRetentionCheckInterval, 5 minutes, Kafka's
	// log.retention.check.interval.ms). A check also runs when the log
	// enters a new segment (with MaxBytes or MinFreeBytes) and after every
	// completed snapshot.
	CheckInterval time.Duration
	// MaxAge: segments whose largest timestamp (cluster time) is older
	// than this are proposed (0: no age rule).
	MaxAge time.Duration
	// MaxBytes: the budget of the archive directory (every file, at its
	// length): the oldest log segments are proposed until it is met (0:
	// no size rule). Only the positional rules decide how much may go: a
	// budget smaller than the snapshots kept and the log after C is
	// refused, logged and counted, and is exceeded.
	MaxBytes int64
	// MinFreeBytes: when the file system holding the archive has less free
	// than this, the oldest log segments are proposed until enough would
	// be freed (0: no free-disk rule). The file system must tell its free
	// space (archive.FreeSpaceFS, or vfs.Default); Open fails otherwise.
	MinFreeBytes uint64
	// Keep is how many complete snapshot generations are kept (0:
	// DefaultRetentionKeep): C is the greatest segment boundary ≤ the
	// oldest kept one's position, and older generations are deleted.
	Keep int
	// DeleteDelay is how long a renamed (*.deleted) file waits before it is
	// unlinked (archive.Options.DeleteDelay; 0: the archive's 60 s,
	// negative: no wait).
	DeleteDelay time.Duration
}

// Enabled reports whether automatic retention is on.
func (r RetentionOptions) Enabled() bool {
	return r.MaxAge > 0 || r.MaxBytes > 0 || r.MinFreeBytes > 0 || r.Keep > 0
}

func (r *RetentionOptions) check() error {
	if r.CheckInterval < 0 || r.MaxAge < 0 || r.MaxBytes < 0 || r.Keep < 0 {
		return fmt.Errorf("cluster: Options.Retention: values must not be negative: %+v", *r)
	}
	return nil
}

// RetentionRule names a rule that proposes cutoffs (Stats.RetentionProposed
// index).
type RetentionRule int

const (
	RuleAge RetentionRule = iota
	RuleSize
	RuleFreeDisk
	NumRetentionRules
)

func (r RetentionRule) String() string {
	switch r {
	case RuleAge:
		return "age"
	case RuleSize:
		return "size"
	case RuleFreeDisk:
		return "free-disk"
	}
	return fmt.Sprintf("RetentionRule(%d)", int(r))
}

// RetentionRefusal is why a proposed cutoff was refused
// (Stats.RetentionRefused index).
type RetentionRefusal int

const (
	// RefusedNone: not refused.
	RefusedNone RetentionRefusal = iota
	// RefusedNoSnapshot: no complete snapshot set: a restart replays the
	// whole log.
	RefusedNoSnapshot
	// RefusedPastSnapshot: everything the proposal would detach lies at or
	// after C, the greatest boundary ≤ the oldest kept snapshot.
	RefusedPastSnapshot
	// RefusedActiveSegment: the only segment left to detach is the one
	// being recorded.
	RefusedActiveSegment
	// RefusedValidation: the recovery plan on the detached state would
	// not be accepted.
	RefusedValidation
	// RefusedArchive: the archive refused the detach (a replay below the
	// cutoff) or failed.
	RefusedArchive
	NumRetentionRefusals
)

func (r RetentionRefusal) String() string {
	switch r {
	case RefusedNone:
		return "none"
	case RefusedNoSnapshot:
		return "no-complete-snapshot"
	case RefusedPastSnapshot:
		return "past-snapshot"
	case RefusedActiveSegment:
		return "active-segment"
	case RefusedValidation:
		return "validation"
	case RefusedArchive:
		return "archive"
	}
	return fmt.Sprintf("RetentionRefusal(%d)", int(r))
}

// CutoffInput is what ApproveCutoff decides on, for the log recording.
type CutoffInput struct {
	// Proposed is the candidate new start (any position).
	Proposed int64
	// Start is the recording's current start (A) and Recorded its
	// recorded position (P; the active segment holds it).
	Start, Recorded int64
	// Snapshot is S of the oldest snapshot generation kept, -1 for none.
	Snapshot int64
	// TermLength and SegmentLength are the recording's.
	TermLength, SegmentLength int32
}

// CutoffDecision is ApproveCutoff's verdict.
type CutoffDecision struct {
	// Cutoff is the approved new start, a segment boundary; -1 when
	// refused.
	Cutoff int64
	// C is the greatest segment boundary ≤ Snapshot (-1: none);
	// ActiveBase the base of the segment holding Recorded.
	C, ActiveBase int64
	// LimitedBy says what lowered the rounded proposal ("" nothing,
	// "snapshot" C, "active-segment").
	LimitedBy string
	Refusal   RetentionRefusal
	Reason    string
}

// ApproveCutoff applies the positional rules to a proposed cutoff: the
// proposal is rounded DOWN to a segment boundary, never past C (the
// greatest boundary ≤ S of the oldest kept generation) and never past the
// base of the active segment; an approved cutoff detaches at least one
// segment. It is a pure function: Cutoff ≤ C ≤ Snapshot and Cutoff ≤
// ActiveBase whenever Cutoff ≥ 0.
func ApproveCutoff(in CutoffInput) CutoffDecision {
	base := func(p int64) int64 {
		return archive.SegmentFileBasePosition(in.Start, p, in.TermLength, in.SegmentLength)
	}
	startBase := base(in.Start)
	d := CutoffDecision{Cutoff: -1, C: -1, ActiveBase: base(max(in.Recorded, in.Start))}
	want := base(max(in.Proposed, in.Start))
	refuse := func(r RetentionRefusal, format string, args ...any) CutoffDecision {
		d.Refusal, d.Reason = r, fmt.Sprintf(format, args...)
		return d
	}
	if want <= startBase {
		return refuse(RefusedPastSnapshot, "the proposal %d detaches nothing: the log starts in the segment at %d", in.Proposed, startBase)
	}
	if in.Snapshot < 0 {
		return refuse(RefusedNoSnapshot, "no complete snapshot set: a restart replays the whole log from its start %d, so none of it may go", in.Start)
	}
	if in.Snapshot < in.Start {
		return refuse(RefusedPastSnapshot, "the oldest kept snapshot at %d is before the log's start %d", in.Snapshot, in.Start)
	}
	d.C = base(in.Snapshot)
	cut := want
	if cut > d.C {
		cut, d.LimitedBy = d.C, "snapshot"
	}
	if cut > d.ActiveBase {
		cut, d.LimitedBy = d.ActiveBase, "active-segment"
	}
	if cut <= startBase {
		if d.LimitedBy == "active-segment" {
			return refuse(RefusedActiveSegment, "the proposal %d would detach the active segment at %d (recorded to %d): the log before it starts at %d",
				in.Proposed, d.ActiveBase, in.Recorded, startBase)
		}
		return refuse(RefusedPastSnapshot, "the proposal %d (boundary %d) is past C = %d, the greatest segment boundary ≤ S = %d of the oldest snapshot kept, "+
			"and the log already starts there (%d): a restart loads that snapshot and replays the log from S", in.Proposed, want, d.C, in.Snapshot, startBase)
	}
	d.Cutoff = cut
	return d
}

// retainer is the node's automatic retention state.
type retainer struct {
	opts     RetentionOptions
	interval int64 // ms
	lastMs   int64 // epoch ms of the last check
	nextPos  int64 // check when the log reaches it (the next segment)
	snaps    int64 // Stats.Snapshots at the last check
	pending  int   // files waiting to be unlinked (archive DeleteStep)
	// steps are the approved work of the last check, one per DoWork.
	steps []func() int
	// stepErr: the last unlink failed; retried after the next check.
	stepErr bool
	// stopped: a validation after a detach failed; no more cutoffs.
	stopped error
}

// initRetention starts automatic retention once the archive is open.
func (n *Node) initRetention() error {
	ro := n.opts.Retention
	if !ro.Enabled() {
		return nil
	}
	if ro.Keep == 0 {
		ro.Keep = DefaultRetentionKeep
	}
	if ro.CheckInterval == 0 {
		ro.CheckInterval = archive.DefaultRetentionCheckInterval
	}
	if ro.MinFreeBytes > 0 {
		if _, err := archive.FreeBytes(n.fs, n.adir); err != nil {
			return fmt.Errorf("cluster: Options.Retention.MinFreeBytes: %w", err)
		}
	}
	n.ret = &retainer{opts: ro, interval: ro.CheckInterval.Milliseconds(), pending: len(n.arc.a.PendingDeletes()),
		lastMs: n.opts.EpochClock(), snaps: -1}
	return nil
}

// retentionTick runs in every DoWork with retention on and does at most
// one piece of work: a step of the last check's approved work (each holds
// at most the syncs of one catalog or recording.log change), else one
// unlink of a file whose delete delay has passed, else a check when one
// is due. It allocates nothing unless a check runs. A
// failure is logged and counted (Stats.RetentionErrors), never the node's.
func (n *Node) retentionTick(nowMs int64) int {
	r := n.ret
	work := 0
	switch {
	case len(r.steps) > 0:
		step := r.steps[0]
		r.steps[0] = nil
		r.steps = r.steps[1:]
		work += step()
	case r.pending > 0 && !r.stepErr:
		k, err := n.arc.a.DeleteStep()
		if err != nil {
			r.stepErr = true
			n.stats.RetentionErrors++
			n.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "retention unlink failed", slog.String("error", err.Error()))
		}
		if k > 0 {
			r.pending -= k
			n.stats.RetentionUnlinked += int64(k)
			work += k
		}
	}
	n.stats.RetentionPendingUnlinks = int64(r.pending)
	if len(r.steps) > 0 || work > 0 {
		return work
	}
	pos := n.pub.Position()
	due := nowMs-r.lastMs >= r.interval || nowMs < r.lastMs || n.stats.Snapshots != r.snaps ||
		((r.opts.MaxBytes > 0 || r.opts.MinFreeBytes > 0) && pos >= r.nextPos)
	if !due {
		return work
	}
	r.lastMs, r.snaps, r.stepErr = nowMs, n.stats.Snapshots, false
	if err := n.retentionCheck(); err != nil {
		// Retention never stops the node: the next check tries again.
		n.retentionFailed("retention check failed", err)
	}
	return work + 1
}

// generation is one snapshot set of recording.log: its entries (valid or
// not) at one term and log position.
type generation struct {
	term, pos int64
	entries   []recordinglog.Entry
	complete  bool // valid consensus-module and service-0 entries
}

// generations groups recording.log's SNAPSHOT entries, newest first.
func generations(entries []recordinglog.Entry) []generation {
	var gens []generation
	for _, e := range entries {
		if e.Type != recordinglog.TypeSnapshot {
			continue
		}
		i := slices.IndexFunc(gens, func(g generation) bool { return g.term == e.LeadershipTermID && g.pos == e.LogPosition })
		if i < 0 {
			gens = append(gens, generation{term: e.LeadershipTermID, pos: e.LogPosition})
			i = len(gens) - 1
		}
		gens[i].entries = append(gens[i].entries, e)
	}
	for i := range gens {
		var cm, svc bool
		for _, e := range gens[i].entries {
			cm = cm || (e.Valid && e.ServiceID == recordinglog.ConsensusModuleServiceID)
			svc = svc || (e.Valid && e.ServiceID == 0)
		}
		gens[i].complete = cm && svc
	}
	slices.SortStableFunc(gens, func(a, b generation) int {
		if a.pos != b.pos {
			return cmp.Compare(b.pos, a.pos)
		}
		return cmp.Compare(b.term, a.term)
	})
	return gens
}

// dirUsage is what a check found in the archive directory.
type dirUsage struct {
	total, pending int64
	byRecording    map[int64]int64 // segment bytes (*.rec) per recording
	belowStart     int64           // log segment files wholly below the start
}

func (n *Node) archiveUsage(logID, startBase int64, segLen int64) (dirUsage, error) {
	u := dirUsage{byRecording: map[int64]int64{}}
	names, err := n.fs.List(n.adir)
	if err != nil {
		return u, err
	}
	for _, name := range names {
		size, err := n.fs.Stat(n.fs.Join(n.adir, name))
		if err != nil {
			continue // gone meanwhile (a prepared segment renamed)
		}
		u.total += size
		if strings.HasSuffix(name, archive.DeletedSuffix) {
			u.pending += size
			continue
		}
		if id, base, err := archive.ParseSegmentFileName(name); err == nil {
			u.byRecording[id] += size
			if id == logID && base+segLen <= startBase {
				u.belowStart += size
			}
		}
	}
	return u, nil
}

// retentionCheck evaluates the rules once and queues the approved work.
func (n *Node) retentionCheck() error {
	r := n.ret
	n.stats.RetentionChecks++
	r.pending = len(n.arc.a.PendingDeletes())
	ctx := context.Background()
	lg := n.opts.Logger
	id := n.recID
	d, err := n.arc.a.Descriptor(id)
	if err != nil {
		return fmt.Errorf("cluster: retention: log recording %d: %w", id, err)
	}
	P := n.rec.Position()
	tl, sl := d.TermBufferLength, d.SegmentFileLength
	base := func(p int64) int64 { return archive.SegmentFileBasePosition(d.StartPosition, p, tl, sl) }
	startBase := base(d.StartPosition)
	r.nextPos = base(P) + int64(sl)

	entries := n.rlog.Entries()
	gens := generations(entries)
	var kept []generation
	for _, g := range gens {
		if g.complete && g.pos >= d.StartPosition && g.pos <= P && len(kept) < r.opts.Keep {
			kept = append(kept, g)
		}
	}
	S := int64(-1)
	if len(kept) > 0 {
		S = kept[len(kept)-1].pos
	}
	u, err := n.archiveUsage(id, startBase, int64(sl))
	if err != nil {
		return fmt.Errorf("cluster: retention: %w", err)
	}
	doomed, orphans := n.doomedRecordings(entries, gens, S, u)
	n.stats.RetentionArchiveBytes = u.total
	going := u.pending + u.belowStart
	for _, g := range doomed {
		for _, e := range g.entries {
			going += u.byRecording[e.RecordingID]
		}
	}
	for _, o := range orphans {
		going += u.byRecording[o]
	}

	// Detached files not yet renamed (a cutoff whose delete waited for
	// earlier unlinks, or a crash between detach and delete).
	if u.belowStart > 0 {
		r.steps = append(r.steps, func() int { return n.retentionDeleteDetached(id) })
	}

	// 1. Proposals.
	proposed := int64(-1)
	var rules []string
	propose := func(rule RetentionRule, cut int64, attrs ...slog.Attr) {
		if cut <= startBase {
			return
		}
		n.stats.RetentionProposed[rule]++
		rules = append(rules, rule.String())
		proposed = max(proposed, cut)
		lg.LogAttrs(ctx, slog.LevelInfo, "retention proposed", append([]slog.Attr{slog.String("rule", rule.String()),
			slog.Int64("recording", id), slog.Int64("cutoff", cut), slog.Int64("start", d.StartPosition)}, attrs...)...)
	}
	segs := func(bytes int64) int64 { return (bytes + int64(sl) - 1) / int64(sl) * int64(sl) }
	if r.opts.MaxAge > 0 {
		before := n.nowMs() - r.opts.MaxAge.Milliseconds()
		cut, err := n.arc.a.AgeCutoff(id, before)
		if err != nil {
			return fmt.Errorf("cluster: retention by age: %w", err)
		}
		propose(RuleAge, cut, slog.Float64("max_age_s", r.opts.MaxAge.Seconds()), slog.Int64("before_ms", before))
	}
	if r.opts.MaxBytes > 0 {
		if excess := u.total - going - r.opts.MaxBytes; excess > 0 {
			propose(RuleSize, startBase+segs(excess), slog.Int64("archive_bytes", u.total), slog.Int64("budget_bytes", r.opts.MaxBytes),
				slog.Int64("freeing_bytes", going))
		}
	}
	if r.opts.MinFreeBytes > 0 {
		free, err := archive.FreeBytes(n.fs, n.adir)
		if err != nil {
			return fmt.Errorf("cluster: retention by free disk: %w", err)
		}
		if have := int64(free) + going; have < int64(r.opts.MinFreeBytes) {
			propose(RuleFreeDisk, startBase+segs(int64(r.opts.MinFreeBytes)-have), slog.Uint64("free_bytes", free),
				slog.Uint64("min_free_bytes", r.opts.MinFreeBytes), slog.Int64("freeing_bytes", going))
		}
	}

	// 2. Approval; 3. execution, one step per DoWork.
	if proposed >= 0 {
		dec := ApproveCutoff(CutoffInput{Proposed: proposed, Start: d.StartPosition, Recorded: P, Snapshot: S, TermLength: tl, SegmentLength: sl})
		if dec.Cutoff >= 0 && r.stopped != nil {
			dec.Cutoff, dec.Refusal, dec.Reason = -1, RefusedValidation, "automatic retention stopped after a failed validation: "+r.stopped.Error()
		}
		attrs := []slog.Attr{slog.String("rules", strings.Join(rules, "|")), slog.Int64("recording", id), slog.Int64("proposed", proposed),
			slog.Int64("A", d.StartPosition), slog.Int64("P", P), slog.Int64("S", S), slog.Int64("C", dec.C), slog.Int64("active_segment", dec.ActiveBase)}
		if dec.Cutoff < 0 {
			n.retentionRefused(dec.Refusal, dec.Reason, attrs)
		} else {
			r.steps = append(r.steps, func() int { return n.retentionCut(id, startBase, int64(sl), dec, attrs, len(kept)) })
		}
	}

	// 4. Snapshot generations older than the oldest kept, and orphans.
	for _, g := range doomed {
		r.steps = append(r.steps, func() int { return n.retentionInvalidate(g) })
		for _, e := range g.entries {
			r.steps = append(r.steps, func() int {
				return n.retentionDeleteRecording(e.RecordingID, g.pos, S, false, u.byRecording[e.RecordingID] > 0)
			})
		}
	}
	for _, o := range orphans {
		r.steps = append(r.steps, func() int { return n.retentionDeleteRecording(o, -1, S, true, true) })
	}
	// 5. Compaction of what the deletions left behind (compact.go).
	r.steps = append(r.steps, n.retentionCompactLog, n.retentionCompactCatalog)
	return nil
}

func (n *Node) retentionRefused(why RetentionRefusal, detail string, attrs []slog.Attr) {
	n.stats.RetentionRefused[why]++
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "retention refused",
		append(attrs, slog.String("reason", why.String()), slog.String("detail", detail))...)
}

func (n *Node) retentionFailed(msg string, err error, attrs ...slog.Attr) {
	n.stats.RetentionErrors++
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, msg, append(attrs, slog.String("error", err.Error()))...)
}

// doomedRecordings returns the generations older than S (the oldest kept)
// that still have a valid entry, a VALID recording in the catalog or
// segment files (a delete a crash interrupted after the catalog change), and,
// when no snapshot is being written, the orphaned snapshot recordings
// (VALID, stopped, in no recording.log entry, not the log).
func (n *Node) doomedRecordings(entries []recordinglog.Entry, gens []generation, S int64, u dirUsage) ([]generation, []int64) {
	if S < 0 {
		return nil, nil
	}
	named := map[int64]bool{}
	keep := map[int64]bool{n.recID: true}
	for _, e := range entries {
		named[e.RecordingID] = true
		if e.Type != recordinglog.TypeSnapshot || e.LogPosition >= S {
			keep[e.RecordingID] = true
		}
	}
	var doomed []generation
	for _, g := range gens {
		if g.pos >= S {
			continue
		}
		var es []recordinglog.Entry
		for _, e := range g.entries {
			if keep[e.RecordingID] {
				continue
			}
			if _, err := n.arc.a.Descriptor(e.RecordingID); err == nil || e.Valid || u.byRecording[e.RecordingID] > 0 {
				es = append(es, e)
			}
		}
		if len(es) > 0 {
			g.entries = es
			doomed = append(doomed, g)
		}
	}
	var orphans []int64
	if n.job == nil {
		active := n.arc.a.ActiveRecordings()
		for _, d := range n.arc.a.ListRecordings() {
			if !named[d.RecordingID] && !keep[d.RecordingID] && !slices.Contains(active, d.RecordingID) && d.StopPosition != archive.NullPosition {
				orphans = append(orphans, d.RecordingID)
			}
		}
	}
	return doomed, orphans
}

// retentionInvalidate invalidates a doomed generation's valid entries in
// recording.log, the consensus module's first (it is then no set).
func (n *Node) retentionInvalidate(g generation) int {
	es := slices.Clone(g.entries)
	slices.SortFunc(es, func(a, b recordinglog.Entry) int { return cmp.Compare(a.ServiceID, b.ServiceID) }) // -1 first
	k := 0
	for _, e := range es {
		if !e.Valid {
			continue
		}
		if err := n.rlog.InvalidateEntry(e.Index); err != nil {
			n.retentionFailed("retention delete failed", err, slog.Int64("snapshot_position", g.pos), slog.String("step", "invalidate recording.log entry"))
			return k
		}
		k++
	}
	if k == 0 {
		return 0 // invalidated before (a check interrupted by a crash): its recordings follow
	}
	n.stats.RetentionSnapshotsDeleted++
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "retention deleted snapshot", slog.Int64("snapshot_position", g.pos),
		slog.Int64("term", g.term), slog.Int("entries_invalidated", k), slog.Int("recordings", len(g.entries)),
		slog.String("why", "a whole generation older than every kept one"))
	return k
}

// retentionDeleteRecording deletes one recording of a doomed generation
// (after its entries are invalid) or an orphan.
func (n *Node) retentionDeleteRecording(id, pos, S int64, orphan, files bool) int {
	if _, err := n.arc.a.Descriptor(id); err != nil && !files {
		return 0 // deleted before
	}
	if !orphan {
		for _, e := range n.rlog.Entries() {
			if e.RecordingID == id && e.Valid {
				return 0 // its generation's invalidation failed: not yet
			}
		}
	}
	k, err := n.arc.a.PurgeRecording(id)
	n.ret.pending += k
	if err != nil {
		n.retentionFailed("retention delete failed", err, slog.Int64("recording", id))
		return k
	}
	n.stats.RetentionRecordingsDeleted++
	why := "a recording of the deleted snapshot generation"
	if orphan {
		why = "orphaned: in the catalog, in no recording.log entry (left by an interrupted snapshot)"
	}
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "retention deleted recording", slog.Int64("recording", id),
		slog.Int64("snapshot_position", pos), slog.Int("files", k), slog.Int64("oldest_kept", S), slog.String("why", why))
	return k + 1
}

// retentionCut executes an approved cutoff: validate the state the detach
// would leave, detach, validate the detached state, and rename the
// detached files (the two-phase delete's first phase).
func (n *Node) retentionCut(id, startBase, sl int64, dec CutoffDecision, attrs []slog.Attr, kept int) int {
	r := n.ret
	P := n.rec.Position()
	if err := n.validateCut(id, dec.Cutoff, P); err != nil {
		n.retentionRefused(RefusedValidation, err.Error(), attrs)
		return 0
	}
	prev := n.rec.desc.StartPosition
	if err := n.arc.a.Detach(id, dec.Cutoff); err != nil {
		n.retentionRefused(RefusedArchive, err.Error(), attrs)
		return 0
	}
	n.rec.desc.StartPosition = dec.Cutoff
	if err := n.validateCut(id, -1, P); err != nil {
		// Nothing is deleted: the files below the new start stay.
		r.stopped = err
		n.stats.RetentionErrors++
		n.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "retention validation failed after detach",
			slog.Int64("recording", id), slog.Int64("start", dec.Cutoff), slog.Int64("previous_start", prev), slog.String("error", err.Error()),
			slog.String("fix", "nothing was deleted: the detached segment files are still in the archive directory; automatic retention is stopped until the node restarts"))
		return 1
	}
	n.stats.RetentionApproved++
	if dec.LimitedBy != "" {
		n.stats.RetentionLimited++
	}
	segments := (dec.Cutoff - startBase) / sl
	n.stats.RetentionDetachedSegments += segments
	n.stats.RetentionDetachedBytes += segments * sl
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "retention approved", append(attrs, slog.Int64("cutoff", dec.Cutoff),
		slog.String("limited_by", dec.LimitedBy), slog.Int64("segments", segments), slog.Int("kept_sets", kept))...)
	r.steps = append(r.steps, func() int { return n.retentionDeleteDetached(id) })
	return 1
}

// retentionDeleteDetached renames the log's detached files (unlinked
// later, one per DoWork), unless earlier ones still wait: then a later
// check does it.
func (n *Node) retentionDeleteDetached(id int64) int {
	if n.arc.a.DeleteInProgress(id) {
		return 0
	}
	k, err := n.arc.a.DeleteDetached(id)
	n.ret.pending += k
	if err != nil {
		n.retentionFailed("retention delete failed", err, slog.Int64("recording", id))
	}
	return k
}

// validateCut recomputes the recovery plan as it would be with the log
// recording starting at cut (cut < 0: as the catalog is) and checks it
// against the files (CheckPlan): the plan must be accepted and start its
// replay at or after the log's start.
func (n *Node) validateCut(id, cut, P int64) error {
	cat := cutCatalog{a: n.arc.a, id: id, start: cut, recorded: P}
	plan, err := n.rlog.CreateRecoveryPlan(cat, 1)
	if err != nil {
		return fmt.Errorf("recovery plan: %w", err)
	}
	if plan.Log == nil || len(plan.Snapshots) == 0 {
		return errors.New("the recovery plan has no snapshot set: a restart would replay the whole log")
	}
	if len(plan.Problems) > 0 {
		return fmt.Errorf("the recovery plan is not accepted: %v", plan.Problems)
	}
	if plan.ReplayFrom < plan.Log.RecordingStartPosition {
		return fmt.Errorf("the recovery plan replays from %d, before the log's start %d", plan.ReplayFrom, plan.Log.RecordingStartPosition)
	}
	issues, err := CheckPlan(n.fs, n.opts.Dir, cat, n.rlog, plan)
	if err != nil {
		return err
	}
	return PlanError(issues)
}

// cutCatalog is the archive's catalog as validateCut sees it: the log
// recording's start moved to start (when >= 0) and, while it is being
// recorded, its stop at the recorded position (so that the check reads the
// files up to it without scanning for the end). It reads through the
// archive's locked methods only.
type cutCatalog struct {
	a         *archive.Archive
	id, start int64
	recorded  int64
}

func (c cutCatalog) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	d, err := c.a.Descriptor(id)
	if err == nil && id == c.id {
		if c.start >= 0 {
			d.StartPosition = c.start
		}
		if d.StopPosition == archive.NullPosition {
			d.StopPosition = c.recorded
		}
	}
	return d, err
}

func (c cutCatalog) Entries() []archive.CatalogEntry {
	var out []archive.CatalogEntry
	for _, d := range c.a.ListRecordings() {
		d, _ = c.Descriptor(d.RecordingID)
		out = append(out, archive.CatalogEntry{State: archive.StateValid, Descriptor: d})
	}
	return out
}
