// Package retention answers, for the members of a cluster, the question
// every deletion of archived log must answer first: can this member still
// restart normally, or must it be rebuilt? It measures the positions of
// seeds/000 for each member from its own files, computes the
// restart-vs-rebuild verdict, plans how far each member's log recording
// may be purged without pushing any member from a normal restart to a
// rebuild (MakePlan, a dry run), and executes such a plan on stopped
// members (Purge).
//
// # Positions
//
// For a member, from its cluster directory (recording.log) and archive
// directory (catalog, segment files):
//
//   - S: the log position of the latest complete, valid snapshot set — a
//     consensus-module snapshot (service id −1) plus one snapshot for every
//     configured service, at the same leadership term and position, every
//     recording of it proven loadable. A set missing one service is no set.
//   - A: the catalog start position of the member's log recording (the
//     recording of the last TERM entry), checked against its segment files.
//   - P: the log recording's stop position; for a recording still open
//     (stop −1), the end of its last whole frame.
//   - L and H: from the live source's archive, its log recording's start and
//     (unless a commit position is given) its stop.
//   - B: the position of the verified backup image in the backup directory
//     given (Options.Backup; package cluster/backup's manifest), −1 when
//     none is given or it holds no verified image. Its drill log gives the
//     last restore drill: model B's refusals, and the costs in seconds.
//   - C: the greatest segment boundary ≤ S, never rounded up.
//
// −1 stands for a position that does not exist.
//
// "Proven loadable" means the snapshot recording was read back: every frame
// whole, Aeron's SnapshotMarker BEGIN first and an END after it; for a matchlog
// engine snapshot, the strict loader (snapshot.Load) accepts it and the
// rebuilt engine's state hash equals the one End records. Presence in
// recording.log is metadata, not proof.
//
// # Design
//
// Gather reads the facts of one member; it only reads, through the archive's
// and the recording log's APIs (archive.OpenCatalogFile read-only,
// archive.Describe, recordinglog.Open read-only, cluster.CheckPlan,
// cluster.CheckLive; backup.ReadManifest and backup.ReadDrills for the
// backup), through archive.RecordingReader (in readRecording) for the
// frames of a recording, and through enginesvc.ReadSnapshot for the strict
// load of an engine snapshot. Decide (the verdict) and MakePlan are pure functions
// of the gathered facts: they can be tested on tables and fuzzed without
// files. Only Purge (execute.go) writes: it carries out an approved plan
// through the archive's API (archive.Open, Detach, DeleteDetached,
// PurgeRecording, DrainDeletes, Checkpoint) and never opens an archive
// file itself; its restart checks run the node on a copy-on-write view
// (cow.go), so that they write nothing.
//
// # Invariants
//
// A plan is approved only with C ≤ S for the oldest snapshot generation it
// keeps, with C on a segment boundary, and with no member promised a normal
// restart whose append position lies before C. A member that would fall
// behind is never decided silently: the plan is refused until the caller
// postpones or withdraws that member's promise.
//
// Purge changes a member only after every member's plan is approved, and
// until a file is renamed any failure puts the directory back byte for
// byte; after a crash the member restarts normally, and Purge run again
// completes the work.
package retention
