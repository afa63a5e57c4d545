// Package aeronhost runs one of our clustered services (a cluster.Service,
// such as the matching engine of package enginesvc) inside the Go
// clustered-service container of github.com/lirm/aeron-go, as a service of
// a real, multi-node Aeron Cluster.
//
// # What runs where
//
// Each node of an Aeron Cluster runs, usually in one Java process
// (ClusteredMediaDriver): an Aeron media driver, an Aeron archive and the
// consensus module. The consensus modules elect a leader, sequence client
// ingress into a replicated log, record it in each node's archive, and
// hand the committed log to the node's services. Our service runs in a
// separate Go process on every node: Run starts aeron-go's container
// (ClusteredServiceAgent), which talks to the node's media driver, follows
// the consensus module's control stream, joins the log and calls Adapter,
// which calls our service.
//
// What the host must provide, per node, before Run:
//
//   - An Aeron media driver; Options.AeronDir is its directory (the one
//     holding cnc.dat). Run waits for it up to the media driver timeout,
//     as Java clients do: a missing or zero-version cnc.dat, or one
//     whose driver heartbeat is stale, is a driver still starting.
//     Without one by then Run fails, naming the file.
//   - The consensus module, configured for this service: service count 1
//     (our service is service id 0, Options.Container.ServiceId), the same
//     cluster directory as Options.Container.ClusterDir (the container
//     writes cluster-mark-service-0.dat there), the same cluster id, and
//     the same service control channel and stream ids
//     (Container.ControlChannel, ServiceStreamId 104,
//     ConsensusModuleStreamId 105 by default). Without it Run waits for
//     the module's counters until its context is done.
//   - The archive the consensus module records into, with its local
//     control channel on IPC (Container.ArchiveOptions, request stream 10
//     and response stream 20 by default): snapshots are recorded through
//     it (Container.SnapshotChannel, stream 106) and replayed from it
//     at start (Container.ReplayChannel, stream 103).
//   - Options.AppVersion equal to the consensus module's appVersion (major
//     version: aeron-go checks it) and to the service's own
//     (enginesvc.Options.AppVersion, checked on restore). Java's
//     consensus module declares 0.0.1 (SemanticVersion 1) and has no
//     property to change it: a service declaring 1.0.0 is refused (aeron-go
//     panics on the first NewLeadershipTermEvent, which Run returns as an
//     error).
//
// Supervise the node's JVM and the Go service as one unit: killing only
// the service makes the consensus module terminate (it times the service
// out), and the JVM's loss ends Run with an error (below). After a kill
// -9, a member restarts only about 10 s later: Aeron's mark files count as
// active for 10 s after their last update.
//
// Our services work in nanoseconds: timestamps and Cluster.Time are
// converted from the cluster's time unit and timer deadlines back to it.
// Configure the consensus module with a nanosecond cluster clock to keep
// full precision (the Java default is milliseconds).
//
// # How it differs from our embedded node
//
// Package cluster's embedded node is a cluster of one that sequences,
// logs, snapshots and replays by itself. Here all of that belongs to the
// consensus module and archive; the container only applies the committed
// log. Differences a service sees:
//
//   - Snapshots stop the world, as in Aeron: the container calls
//     OnTakeSnapshot and acknowledges the snapshot once it returns, so a
//     PauselessService's PrepareSnapshot is not used (enginesvc with
//     Workers encodes a clone with its workers inside OnTakeSnapshot).
//   - Egress goes straight to the client's response publication (the log
//     is already committed); only the leader sends, elsewhere it is
//     dropped. A send back-pressured for longer than EgressTimeout, or to
//     a client no longer connected, is dropped (Adapter.EgressDropped).
//   - Cluster.Offer knows a session once the container has reported it
//     (opened, or one of its messages delivered): aeron-go does not let
//     the service look up the sessions it restored from a snapshot.
//   - CancelTimer cannot say whether the timer existed (the consensus
//     module owns timers): true means the request was sent.
//   - LeadershipTermID is that of the last NewLeadershipTermEvent, or,
//     from OnStart on, of the snapshot the consensus module recovers from
//     (its recovery-state counter; else the restored snapshot's marker),
//     -1 before either.
//
// # Failures
//
// Run watches the media driver (its heartbeat in cnc.dat) and the
// consensus module (its commit-position counter) every 50 ms, and installs
// an error handler on the aeron context (Options.ErrorHandler receives
// every error as well). When the driver has not beaten for the media
// driver timeout, the counter is freed or reused (the module is gone), or
// aeron-go reports an error that stops its client (a driver keepalive
// timeout, the driver timing the client out), Run stops the container and
// returns an error: a service whose node is gone does not stay up. aeron-go
// alone only logs the driver timeout.
//
// aeron-go's callbacks return nothing. The first error of the service is
// kept (Adapter.Err) and the adapter refuses all further work but
// OnTerminate. Under Run the container's goroutine is then ended
// (runtime.Goexit: the failing callback never returns into aeron-go), so
// nothing more is acknowledged to the consensus module — notably not a
// snapshot the service failed to write — and Run returns the error. Panics
// of aeron-go (it panics on several conditions, such as a control
// publication not connected) are recovered on that goroutine and returned
// as errors. aeron-go's ClusteredServiceAgent cannot be closed: its Aeron
// client stays open after Run returns, so the process should exit then.
package aeronhost
