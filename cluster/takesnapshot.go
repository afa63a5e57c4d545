package cluster

import (
	"fmt"
	"time"
)

// TakeSnapshot requests a snapshot of an open node that nobody else
// drives (an offline tool's node inside RunStopped, a test's) and runs its
// duty cycle until the snapshot set is recorded in recording.log — complete
// and durable — or timeout passes. A duty-cycle error or a failed snapshot
// is returned as it is; the node stays open either way.
func TakeSnapshot(n *Node, timeout time.Duration) error {
	done := n.Stats().Snapshots
	n.RequestSnapshot()
	deadline := time.Now().Add(timeout)
	for n.Stats().Snapshots == done {
		w, err := n.DoWork()
		if err != nil {
			return err
		}
		if n.SnapshotInProgress() {
			if err := n.AwaitSnapshot(time.Until(deadline)); err != nil {
				return err
			}
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: no snapshot after %s", timeout)
		}
		if w == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return nil
}
