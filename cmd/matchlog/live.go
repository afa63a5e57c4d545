package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/liveness"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Liveness, as every offline verb that writes checks it: the rule of
// internal/liveness, applied by the packages that own the mark files
// (cluster.CheckLive for a node directory, archive.CheckLive for an archive
// directory). A fresh activity timestamp whose process is gone (SIGKILL)
// is not live.

// clusterMark is cluster-mark.dat as the tools read it.
type clusterMark = cluster.MarkFile

// matchlogServiceName is the serviceName a matchlog node writes into its
// cluster-mark.dat.
const matchlogServiceName = cluster.MatchlogServiceName

// liveTimeout is how recent a mark file's activity timestamp must be for
// the node to count as running (10 s, with its process running).
const liveTimeout = archive.DefaultMarkTimeout

// readClusterMark reads D/cluster/cluster-mark.dat.
func readClusterMark(d string) (*clusterMark, error) {
	return cluster.ReadMarkFile(vfs.Default, clusterDir(d))
}

// nodeLiveness says whether a node (or its archive) looks live in d and
// why (cluster.CheckLive).
func nodeLiveness(d string, _ *clusterMark, now time.Time) (bool, string) {
	err := cluster.CheckLive(vfs.Default, d, now.UnixMilli(), liveTimeout)
	var le *liveness.Error
	if errors.As(err, &le) {
		return true, le.Reason()
	}
	return false, ""
}

// refuseLiveNode fails when a node or its archive runs in the node
// directory d: what every cluster verb that writes calls first.
func refuseLiveNode(d, verb string) error {
	if live, why := nodeLiveness(d, nil, time.Now()); live {
		return fmt.Errorf("%w: the node in %s looks live: %s; %s changes nothing while a node runs: stop it first",
			cluster.ErrNodeRunning, d, why, verb)
	}
	return nil
}

// refuseLive fails when the archive directory's mark file shows a live
// archive (archive.CheckLive).
func refuseLive(dir string) error {
	if err := archive.CheckLive(vfs.Default, dir, time.Now().UnixMilli(), liveTimeout); err != nil {
		return fmt.Errorf("%w; use the running archive's API instead", err)
	}
	return nil
}

// clusterRevalidateSnapshot undoes the last invalidate-latest-snapshot
// (recordinglog.Log.RevalidateLatestInvalidatedSnapshot): the entries of
// the set it invalidated get their original type back.
func clusterRevalidateSnapshot(f *clusterFlags, stdout io.Writer) error {
	d := f.dir
	if err := refuseLiveNode(d, "revalidate-snapshot"); err != nil {
		return err
	}
	l, err := openRecordingLog(d, false)
	if err != nil {
		return err
	}
	done, err := l.RevalidateLatestInvalidatedSnapshot()
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if f.jsonOut {
		err = writeJSON(stdout, struct {
			Revalidated []recordinglog.JSONEntry `json:"revalidated"`
			Entries     []recordinglog.JSONEntry `json:"entries"`
		}{recordinglog.ToJSON(done).Entries, recordinglog.ToJSON(l.Entries()).Entries})
	} else {
		_, err = fmt.Fprintf(stdout, "revalidate snapshot: %d entries restored %s\n%s\n", len(done), recordinglog.Format(done), recordinglog.Format(l.Entries()))
	}
	if err != nil {
		return err
	}
	if len(done) == 0 {
		return errors.New("no invalidated snapshot set above the latest valid one to revalidate")
	}
	return nil
}

// checkRemoval refuses, before the archive is opened (which rewrites its
// mark file and schedules pending deletes), a detach, delete or purge that
// would be refused: a live archive, an unknown recording, an invalid
// detach, files of the recording still waiting to be unlinked.
func checkRemoval(f *archiveFlags, detach, del bool) error {
	if err := refuseLive(f.dir); err != nil {
		return err
	}
	unlinkNow := del && (f.now || f.delay == 0)
	return archive.CheckRemoval(vfs.Default, f.dir, f.id, f.position, detach, del, unlinkNow)
}

// planFeasible is recovery-plan's verdict: nil when the plan it printed
// can be carried out, else an error naming each issue and its fix
// (cluster.CheckPlan).
func planFeasible(d string, cat *archive.Catalog, l *recordinglog.Log, p *recordinglog.RecoveryPlan) error {
	issues, err := cluster.CheckPlan(vfs.Default, d, cat, l, p)
	if err != nil {
		return err
	}
	return cluster.PlanError(issues)
}

// describePlanFeasible is describe's verdict on the recovery plan of the
// node directory d (one service, as a matchlog node runs): what describe
// printed cannot be followed when this fails.
func describePlanFeasible(d string, l *recordinglog.Log) error {
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return catalogRemedy(d, err)
	}
	defer cat.Close()
	p, err := l.CreateRecoveryPlan(archive.SettledCatalog{FS: vfs.Default, Dir: archiveDir(d), Catalog: cat}, 1)
	if err != nil {
		return cluster.ExplainPlanError(d, cat, err)
	}
	return planFeasible(d, cat, l, p)
}

// catalogRemedy adds the fix to a catalog that does not open.
func catalogRemedy(d string, err error) error {
	if errors.Is(err, archive.ErrCorrupt) {
		return fmt.Errorf("%w; the archive catalog is damaged: restore %s from a backup (`matchlog archive verify --dir %s` shows what else is wrong); invalidating snapshots would not help",
			err, archive.CatalogFileName, archiveDir(d))
	}
	return err
}
