package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
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
