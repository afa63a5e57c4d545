// Package clusterbench measures what a client sees while a node takes a
// snapshot: PauseReport (behind `matchlog bench cluster`) and
// BenchmarkPauseReport grow one book through a node's ingress, then send
// commands at a fixed rate across a snapshot and report each command's
// delay from its scheduled send time to its release (coordinated omission
// corrected), with the no-snapshot baseline, the pause and the load
// average.
//
// It is a harness, not part of the node: it drives cluster and
// cluster/enginesvc through their public API only.
package clusterbench
