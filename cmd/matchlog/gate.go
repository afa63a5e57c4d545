package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/internal/vfs"
)

// The start gate of `matchlog node`: before the node opens its directory it
// computes the directory's restart-vs-rebuild verdict (retention.Gather and
// retention.Decide, with no live source: the node is a one-member cluster)
// and starts only on normal-restart or full-replay. Any other verdict
// refuses the start, naming the verdict, its reasons, the failed checks and
// the command that applies; --force starts anyway and logs a WARNING naming
// the verdict it overrode.
//
// A first start is a directory in which recording.log holds no TERM entry
// and no archive recording holds a byte of log (the directory may be
// missing, empty, or left by a first start that crashed before its first
// term); it starts. A directory whose archive holds recorded log but whose
// recording.log has no TERM entry (the file lost) has no local state but is
// not new: rebuild-from-image. With no live source the gate cannot tell a
// replaced member's empty disk from a new cluster's: an empty directory
// starts a new, empty history, and a member whose disk was replaced must be
// restored before it is started.
//
// The gate runs inside cluster.Open (Options.StartGate), after Open's
// refusals of another program's directory and of a live node and before its
// recovery-plan check, so a start is refused once, by the first check that
// fails. Files that need a crash repair (a torn catalog) cannot be read as
// they are: the gate then leaves the decision to the start's own checks,
// which follow the repair.

// errStartRefused is wrapped by the gate's refusals.
var errStartRefused = errors.New("start refused by the restart-vs-rebuild gate")

// startGate is the gate for cluster.Options.StartGate.
func startGate(force bool, logger *slog.Logger) func(vfs.FS, string) error {
	return func(fsys vfs.FS, dir string) error { return checkStart(fsys, dir, force, logger) }
}

// checkStart decides whether the node directory dir may start.
func checkStart(fsys vfs.FS, dir string, force bool, logger *slog.Logger) error {
	f, err := retention.Gather(fsys, retention.Member{ID: 0, Dir: dir}, retention.Options{Services: 1, Commit: -1})
	if errors.Is(err, archive.ErrCorrupt) || errors.Is(err, recordinglog.ErrCorrupt) {
		logger.Info("start gate: the files need the start's crash repair; its checks decide", slog.String("dir", dir), slog.String("error", err.Error()))
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s cannot be read: %w", errStartRefused, dir, err)
	}
	// Open has applied the liveness rule before calling the gate.
	f.Running = ""
	var extra []string
	if !f.LocalState {
		data, err := recordedLog(fsys, fsys.Join(dir, cluster.ArchiveDirName))
		if errors.Is(err, archive.ErrCorrupt) {
			logger.Info("start gate: the files need the start's crash repair; its checks decide", slog.String("dir", dir), slog.String("error", err.Error()))
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s cannot be read: %w", errStartRefused, dir, err)
		}
		if len(data) == 0 {
			logger.Info("start gate", slog.String("verdict", "first-start"), slog.String("dir", dir),
				slog.String("reason", "recording.log holds no TERM entry and no archive recording holds log: a new cluster"))
			return nil
		}
		extra = append(extra, fmt.Sprintf("recording.log holds no TERM entry, yet the archive holds recorded log (%s): this is not a new node, its recording.log was lost",
			strings.Join(data, ", ")))
	}
	v := retention.Decide(f)
	p := v.Positions
	if v.Verdict == retention.NormalRestart || v.Verdict == retention.FullReplay {
		logger.Info("start gate", slog.String("verdict", v.Verdict), slog.String("dir", dir),
			slog.Int64("S", p.S), slog.Int64("A", p.A), slog.Int64("P", p.P))
		return nil
	}
	reasons := append(extra, v.Reasons...)
	var failed []string
	for _, c := range v.Checks {
		if !c.Passed {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if force {
		logger.Warn("start gate overridden by --force: starting a directory whose verdict is not a normal restart or a full replay",
			slog.String("verdict", v.Verdict), slog.String("dir", dir), slog.String("reasons", strings.Join(reasons, "; ")),
			slog.Int64("S", p.S), slog.Int64("A", p.A), slog.Int64("P", p.P))
		return nil
	}
	msg := fmt.Sprintf("%v: the verdict of %s is %s, and a node starts only on normal-restart or full-replay (S = %d, A = %d, P = %d): %s",
		errStartRefused, dir, v.Verdict, p.S, p.A, p.P, strings.Join(reasons, "; "))
	if len(failed) > 0 {
		msg += "; failed checks: " + strings.Join(failed, "; ")
	}
	if v.Verdict == retention.Rebuild && len(f.PlanIssues) > 0 {
		msg += "; the recovery plan: " + strings.Join(f.PlanIssues, "; ")
	}
	msg += "; fix: " + gateFix(dir, v) +
		fmt.Sprintf("; `matchlog retention verdict --member 0=%s` shows every position and check; --force starts anyway (logged as a WARNING)", dir)
	return &gateError{verdict: v.Verdict, msg: msg}
}

// gateError is a refusal of the gate.
type gateError struct {
	verdict string
	msg     string
}

func (e *gateError) Error() string { return e.msg }
func (e *gateError) Unwrap() error { return errStartRefused }

// gateFix is what the operator runs for a verdict that refuses a start.
func gateFix(dir string, v retention.Verdict) string {
	rebuild := "rebuild the node from a verified backup image of this cluster (no restart brings these files back): move " + dir + " aside, then " +
		"`matchlog backup drill --backup BDIR --work-dir " + dir + "` restores the image in BDIR (made from a healthy member by " +
		"`matchlog backup create --from MEMBER_DIR --to BDIR`) into " + dir + ", starts it, checks its state hash against the image's, " +
		"records the drill in BDIR and leaves the restored node there, stopped; then start the node again. " +
		"To begin a new, empty cluster instead, move " + dir + " aside and start on an empty directory"
	switch v.Verdict {
	case retention.InvalidateLatestSnapshot:
		to := fmt.Sprintf("the snapshot set at log position %d", v.Fallback)
		if v.Fallback == 0 {
			to = "no snapshot: the whole log from position 0"
		}
		return fmt.Sprintf("run `matchlog cluster invalidate-latest-snapshot --dir %s` (it marks the latest set invalid in recording.log; "+
			"`matchlog cluster revalidate-snapshot --dir %s` undoes it), then start again: the node falls back to %s and replays the log after it", dir, dir, to)
	case retention.RebuildUnlessRebased:
		return "if " + dir + " is a deliberately rebased image that has been tested (its log starts after 0 on purpose), start it with --force; otherwise " + rebuild
	}
	return rebuild
}

// recordedLog lists the recordings of the archive directory adir that hold
// at least one byte of log (stop after start; for a recording left open,
// the end of its last whole frame), as "recording ID [START, STOP)".
func recordedLog(fsys vfs.FS, adir string) ([]string, error) {
	desc, err := archive.Describe(fsys, adir)
	if errors.Is(err, vfs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range desc.Recordings {
		d := r.Descriptor
		stop := d.StopPosition
		if stop == archive.NullPosition {
			if stop, _, err = archive.ComputeStopPosition(fsys, adir, d); err != nil {
				out = append(out, fmt.Sprintf("recording %d (open; its end cannot be computed: %v)", d.RecordingID, err))
				continue
			}
		}
		if stop > d.StartPosition {
			out = append(out, fmt.Sprintf("recording %d [%d, %d)", d.RecordingID, d.StartPosition, stop))
		}
	}
	return out, nil
}
