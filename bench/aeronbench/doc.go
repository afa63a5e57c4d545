// Package aeronbench measures the matching engine hosted on a real Aeron
// Cluster (behind `matchlog bench aeron`): Java ClusteredMediaDriver JVMs
// (media driver, archive, consensus module) on loopback, `matchlog
// aeron-node` as each member's service, and aeron-go's cluster client.
//
// Run grows a book of Orders resting orders through the client's commands
// (non-crossing new orders in random arrival order, clusterbench.Book:
// the book of `matchlog bench cluster`; never a snapshot restore), then
// sends probes at a fixed rate and measures, with their round trips from
// each probe's scheduled time (coordinated omission corrected):
//
//   - a snapshot requested with ClusterTool on the leader: each service's
//     take, the time from the earliest member's snapshot start to the
//     latest member's next callback after it, and the probes' worst and
//     p99 round trip over that window (plus 200 ms);
//   - a restart of every member after a stop without a snapshot
//     (ClusterTool abort): the services' restores, their replay to the
//     stop's log position, the first answer on a new session;
//   - with three members, a follower's kill -9 (JVM and service as one
//     unit) and restart after Aeron's 10-second mark-file rule until it is
//     at the leader's position, then the leader's kill -9 until a new
//     leader answers (the client resends what is unanswered; the engine
//     answers a command it applied before with a duplicate notice);
//
// and then, with Options.Native, the native node's pauseless snapshot on
// a book of the same size at the same probe rate
// (clusterbench.PauseReport), for the figures side by side.
//
// Contract: the jars come from Options.Classpath (AERON_CLASSPATH: Aeron
// 1.48.x with Agrona 2.x); without it Run fails with ErrNoClasspath before
// it starts anything. Every process Run starts (JVMs, services, tools) is
// stopped before it returns, on an error and on ctx's end too, and its
// temporary directory is removed; every wait is bounded. The network is
// loopback only. Every command sent is answered, and every live member
// ends at one log position and state hash, or Run fails.
//
// It is a harness, not part of the node: it drives matchlog aeron-node as
// a child process (Options.Service) and the cluster through aeron-go's
// client.
package aeronbench
