package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/liveness"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Start and restart: the recovery plan, the snapshot set, the replay of the
// log after it, and the new term.

// Recovery reports what a start found and repaired.
type Recovery struct {
	// Plan is the recovery plan the start followed.
	Plan *recordinglog.RecoveryPlan
	// Archive lists the recordings a crash had left active and the
	// archive settled (stop position computed, torn tail cut).
	Archive []archive.RecordingReport
	// CatalogRepaired: an entry a crash left half-added was dropped, or
	// nextRecordingId advanced (see catalogrepair.go).
	CatalogRepaired bool
	// RecordingLog is the torn tail dropped from recording.log, or nil.
	RecordingLog *recordinglog.Repair
	// SnapshotLoad is the time spent loading the snapshot set (both
	// recordings and the service's OnStart); Replay the time spent
	// replaying the log after it, ReplayedEntries and ReplayedBytes what
	// it replayed; Capture the time spent recording the directory's
	// state for a failed start to put back (its files: captureStart);
	// Total the whole Open.
	Capture         time.Duration
	SnapshotLoad    time.Duration
	Replay          time.Duration
	ReplayedEntries int64
	ReplayedBytes   int64
	Total           time.Duration
}

// Recovery returns what Open found and repaired.
func (n *Node) Recovery() Recovery { return n.recovery }

func (n *Node) open() error {
	fsys := n.fs
	n.timestamp()
	// Nothing is created or written before the directory is known to be a
	// stopped matchlog node's (or new).
	if err := checkMarkFile(fsys, n.cdir, n.adir, n.opts.EpochClock(), n.opts.MarkFileTimeout); err != nil &&
		!(n.opts.IgnoreLiveMarkFile && liveness.IsLive(err)) {
		return err
	}
	if err := checkArchiveMark(fsys, n.adir, n.opts.EpochClock(), n.opts.MarkFileTimeout); err != nil && !n.opts.IgnoreLiveMarkFile {
		return err
	}
	if p := fsys.Join(n.cdir, MarkFileName); markTornAtCreation(fsys, p) {
		// The one crash repair of a mark file: one cut while it was being
		// created holds no state (it is rewritten at every start).
		size, _ := fsys.Stat(p)
		n.opts.Logger.Warn("crash repair: the mark file was cut while it was created; it is written anew",
			slog.String("file", p), slog.Int64("bytes", size))
	}
	if gate := n.opts.StartGate; gate != nil {
		if err := gate(fsys, n.opts.Dir); err != nil {
			return err
		}
	}
	if err := n.preflight(); err != nil {
		return err
	}
	// From here on the start may write (mark files, crash repairs); when
	// it fails, Open puts back what it found.
	tc := time.Now()
	guard, err := captureStart(fsys, []string{n.cdir, n.adir})
	capture := time.Since(tc)
	if err != nil {
		return fmt.Errorf("cluster: record the directory's state before the start: %w", err)
	}
	n.guard = guard
	// New directories are durable once their parents are synced.
	for _, d := range []string{n.cdir, n.adir} {
		if err := fsys.MkdirAll(d); err != nil {
			return err
		}
	}
	for _, d := range []string{fsys.Join(n.opts.Dir, ".."), n.opts.Dir} {
		if err := fsys.SyncDir(d); err != nil {
			return err
		}
	}
	n.markMs = n.opts.EpochClock()
	if n.mark, err = writeMarkFile(fsys, n.cdir, n.markMs, n.cdir); err != nil {
		return fmt.Errorf("cluster: mark file: %w", err)
	}
	rlSize, err := fsys.Stat(fsys.Join(n.cdir, recordinglog.FileName))
	if err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return fmt.Errorf("cluster: %w", err)
	}
	n.arc, err = openArchive(fsys, n.adir, n.opts, n.nowMs, rlSize > 0, n.scans, func(c segmentCut) { n.cuts = append(n.cuts, c) })
	n.scans = nil // the archive has written: no scan of the plan check holds any more
	if err != nil {
		return err
	}
	rlOpts := recordinglog.Options{SyncLevel: max(1, n.opts.FileSyncLevel), Repair: true}
	n.rlog, err = recordinglog.Open(fsys, n.cdir, rlOpts)
	if errors.Is(err, vfs.ErrNotExist) {
		n.rlog, err = recordinglog.Create(fsys, n.cdir, rlOpts)
	}
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", fsys.Join(n.cdir, recordinglog.FileName), err)
	}
	plan, err := n.rlog.CreateRecoveryPlan(n.arc, 1)
	if err != nil {
		return fmt.Errorf("cluster: recovery plan: %w", ExplainPlanError(n.opts.Dir, n.arc.a.Catalog(), err))
	}
	n.recovery = Recovery{Plan: plan, Archive: n.arc.a.Recovered(), CatalogRepaired: n.arc.catalogRepaired, Capture: capture,
		RecordingLog: n.rlog.Repaired()}
	issues, err := CheckPlan(fsys, n.opts.Dir, n.arc.a.Catalog(), n.rlog, plan)
	if err != nil {
		return err
	}
	if len(issues) > 0 {
		return fmt.Errorf("cluster: cannot start: %w", PlanError(issues))
	}
	for _, tmp := range []string{n.arc.a.RemovedCompactTemp(), n.rlog.RemovedCompactTemp()} {
		if tmp != "" {
			n.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "removed the leftover of an interrupted compaction",
				slog.String("file", tmp), slog.String("why", "a crash before its rename: the file it was to replace is the old one, in place"))
		}
	}
	n.logPlan(plan)
	if err := n.recover(plan); err != nil {
		return err
	}
	if err := n.startTerm(plan); err != nil {
		return err
	}
	return n.initRetention()
}

// preflight checks the recovery plan of an existing node directory on the
// files as they are, read-only, before Open writes anything: a plan that
// cannot be carried out (a segment missing, a recording INVALID, a replay
// position off the frame grid, ...) is refused with its fix while the
// directory is still as the operator left it. A catalog or recording log
// that needs a crash repair is left to the start's own checks, which
// follow the repair.
func (n *Node) preflight() error {
	fsys := n.fs
	if _, err := fsys.Stat(fsys.Join(n.cdir, recordinglog.FileName)); err != nil {
		if errors.Is(err, vfs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cluster: %w", err)
	}
	if _, err := fsys.Stat(fsys.Join(n.adir, archive.CatalogFileName)); err != nil {
		if errors.Is(err, vfs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cluster: %w", err)
	}
	cat, err := archive.OpenCatalogFile(fsys, n.adir, archive.CatalogOptions{ReadOnly: true})
	if errors.Is(err, archive.ErrCorrupt) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer cat.Close()
	rl, err := recordinglog.Open(fsys, n.cdir, recordinglog.Options{ReadOnly: true, Repair: true})
	if errors.Is(err, recordinglog.ErrCorrupt) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", fsys.Join(n.cdir, recordinglog.FileName), err)
	}
	defer rl.Close()
	plan, err := rl.CreateRecoveryPlan(cat, 1)
	if err != nil {
		return nil // an unknown log recording: the start explains it after the archive's recovery
	}
	n.scans = &archive.ScanMemo{}
	issues, err := checkPlan(fsys, n.opts.Dir, cat, rl, plan, n.scans)
	if err != nil {
		return err
	}
	if len(issues) > 0 {
		return fmt.Errorf("cluster: cannot start: %w", PlanError(issues))
	}
	return nil
}

// snapshotFallback wraps a snapshot load failure with the way out that
// applies: a fall-back to an earlier set only when one can be used.
func (n *Node) snapshotFallback(s recordinglog.Snapshot, err error) error {
	c := planChecker{fsys: n.fs, dir: n.opts.Dir, adir: n.adir, cat: n.arc.a.Catalog(), rl: n.rlog}
	return fmt.Errorf("cluster: snapshot recording %d (service %d, log position %d, term %d) cannot be loaded: %w; fix: %s",
		s.RecordingID, s.ServiceID, s.LogPosition, s.LeadershipTermID, err, c.fallbackFix(n.recovery.Plan))
}

// recover loads the snapshot set and replays the log.
func (n *Node) recover(plan *recordinglog.RecoveryPlan) error {
	t0 := time.Now()
	var img SnapshotImage
	var svcSessions []ClientSession
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if len(plan.Snapshots) > 0 {
		cmSnap := plan.Snapshots[0]
		want := SnapshotInfo{LogPosition: cmSnap.LogPosition, LeadershipTermID: cmSnap.LeadershipTermID}
		r, err := n.arc.replay(cmSnap.RecordingID, 0, -1)
		if err != nil {
			return n.snapshotFallback(cmSnap, err)
		}
		closers = append(closers, r.Close)
		st, err := loadCMSnapshot(r, want)
		if err != nil {
			return n.snapshotFallback(cmSnap, err)
		}
		n.cm = st
		svcSnap := plan.Snapshots[1]
		sr, err := n.arc.replay(svcSnap.RecordingID, 0, -1)
		if err != nil {
			return n.snapshotFallback(svcSnap, err)
		}
		closers = append(closers, sr.Close)
		svcSessions, _, err = loadServiceSessions(sr, want)
		if err != nil {
			return n.snapshotFallback(svcSnap, err)
		}
		if len(svcSessions) != len(st.sessions) {
			return n.snapshotFallback(svcSnap, fmt.Errorf("%w: %d client sessions, consensus module has %d", ErrSnapshot, len(svcSessions), len(st.sessions)))
		}
		img = sr
		n.curPos = cmSnap.LogPosition
		n.lastSnapPos = cmSnap.LogPosition
		n.lastSnapTime = cmSnap.Timestamp
		n.lastTime = cmSnap.Timestamp
		n.termID = cmSnap.LeadershipTermID
		if err := n.callStart(img, svcSnap); err != nil {
			return err
		}
	} else if err := n.callStart(nil, recordinglog.Snapshot{}); err != nil {
		return err
	}
	for _, cs := range svcSessions {
		if s := n.cm.sessions[cs.ID]; s != nil {
			s.EncodedPrincipal = cs.EncodedPrincipal
		}
	}
	n.nextSessionID = n.cm.nextSessionID
	n.recovery.SnapshotLoad = time.Since(t0)
	if plan.Log == nil {
		return nil
	}
	// Replay the log from the snapshot to its end.
	t1 := time.Now()
	defer func() {
		n.recovery.Replay = time.Since(t1)
		n.recovery.ReplayedBytes = plan.ReplayTo - plan.ReplayFrom
	}()
	n.replaying = true
	defer func() { n.replaying = false }()
	r, err := n.arc.replay(plan.Log.RecordingID, plan.ReplayFrom, plan.ReplayTo)
	if err != nil {
		return fmt.Errorf("cluster: replay of log recording %d: %w", plan.Log.RecordingID, err)
	}
	defer r.Close()
	err = r.each(func(payload []byte, pos int64) error {
		if err := n.dispatch(payload, pos); err != nil {
			return fmt.Errorf("cluster: replay of log recording %d at %d: %w", plan.Log.RecordingID, pos, err)
		}
		n.stats.Replayed++
		n.recovery.ReplayedEntries++
		return nil
	})
	if err != nil {
		return err
	}
	n.recID = plan.Log.RecordingID
	n.curPos = plan.ReplayTo
	if n.nextSessionID < n.cm.nextSessionID {
		n.nextSessionID = n.cm.nextSessionID
	}
	return nil
}

func (n *Node) callStart(img SnapshotImage, s recordinglog.Snapshot) error {
	if err := n.svc.OnStart(n.handle(), img); err != nil {
		if img != nil {
			if rerr := sourceErr(img); rerr != nil {
				err = fmt.Errorf("%w (reading the recording: %w)", err, rerr)
			}
			return n.snapshotFallback(s, err)
		}
		return fmt.Errorf("cluster: service start: %w", err)
	}
	return nil
}

// startTerm creates the log publication at the end of the recovered log,
// starts or extends its recording and appends the new term.
func (n *Node) startTerm(plan *recordinglog.RecoveryPlan) error {
	var err error
	start := int64(0)
	termLen, mtu := n.opts.TermLength, n.opts.MTU
	if plan.Log != nil {
		start = plan.ReplayTo
		termLen, mtu = int(plan.Log.TermBufferLength), int(plan.Log.MTULength)
		n.termID = plan.LastLeadershipTermID + 1
	} else if len(plan.Snapshots) > 0 {
		n.termID = plan.LastLeadershipTermID + 1
	}
	// node-state.dat: never start a term a crashed start had already
	// begun.
	if n.termID, err = proposeCandidateTerm(n.fs, n.cdir, n.termID, start, n.opts.EpochClock(), n.opts.FileSyncLevel); err != nil {
		return err
	}
	// The log keeps the MTU it was recorded with.
	n.opts.MTU = mtu
	n.scratch = make([]byte, mtu)
	sessionID := int32(n.termID + 1)
	n.log, err = logbuf.NewAt(termLen, mtu, 0, sessionID, LogStreamID, start)
	if err != nil {
		return err
	}
	n.pub = n.log.Publication()
	n.img = n.log.ImageAt(start)
	if plan.Log != nil {
		n.rec, err = n.arc.ExtendRecording(plan.Log.RecordingID, n.log, LogChannel)
	} else {
		n.rec, err = n.arc.StartRecording(n.log, LogChannel, "", false, false)
	}
	if err != nil {
		return err
	}
	n.recID = n.rec.ID()
	now := n.timestamp()
	if err := n.rlog.AppendTerm(n.recID, n.termID, start, now); err != nil {
		return fmt.Errorf("cluster: recording.log: %w", err)
	}
	if err := n.appendNewTerm(start, now); err != nil {
		return err
	}
	if err := n.svc.OnRoleChange(RoleLeader); err != nil {
		return err
	}
	return n.step(false)
}
