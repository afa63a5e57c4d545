package cluster

// SnapshotLogsRecycled is how many of n's snapshot recordings were written
// through a recycled log (snapLogs).
func SnapshotLogsRecycled(n *Node) int {
	n.snapLogs.mu.Lock()
	defer n.snapLogs.mu.Unlock()
	return n.snapLogs.recycled
}

// SnapshotLogsPrefaulted is how many new snapshot logs n faulted in ahead
// of their writers (snapLogs).
func SnapshotLogsPrefaulted(n *Node) int {
	n.snapLogs.mu.Lock()
	defer n.snapLogs.mu.Unlock()
	return n.snapLogs.prefaulted
}
