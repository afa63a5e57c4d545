// Package cluster runs a clustered service as Aeron Cluster would on one
// node: a sequencer that timestamps client messages and appends them to a
// log, an archive recording of that log, the consensus module's state
// (sessions, timers, ids), snapshots of that state and of the service into
// archive recordings indexed by recording.log, and a restart that loads the
// latest snapshot set and replays the log after it. Every file is in
// Aeron's format, so Aeron's ClusterTool and ArchiveTool can read the node
// directory.
//
// # Contract with the service
//
// A Service (Aeron's ClusteredService in Go idiom) is called on the node's
// goroutine only, with errors returned and byte slices valid only during the
// call. It must be deterministic given the log: its time is the log's
// timestamp (Cluster.Time), its timers fire through the log
// (Cluster.ScheduleTimer appends nothing; the node appends a TimerEvent when
// the deadline has passed and the service sees it when it reads it), so a
// replay calls the service with exactly the same arguments. A
// PauselessService can also hand back a frozen copy of its state
// (PrepareSnapshot) for the node to write on another goroutine.
//
// # Data flow
//
//	Connect/Offer/CloseSession ──► ingress queue (any goroutine)
//	                                    │ DoWork (the node's goroutine)
//	                                    ▼
//	sequencer: timestamp (Options.Clock), SessionMessageHeader + payload,
//	session open/close, TimerEvent, ClusterActionRequest, NewLeadershipTermEvent
//	           ──► log publication (logbuf, stream 100)
//	                     │                      │
//	                     ▼                      ▼
//	  service (consensus-module state    archive recording of the log
//	  updated from the same entries)     (block write + sync per level)
//	         │ Cluster.Offer                    │ durable position
//	         ▼                                  ▼
//	  egress held per log position ──── released once durable
//
// One DoWork sequences what is waiting (up to Options.MaxBatch messages),
// delivers it to the service, writes it to the archive as one block per
// term and syncs once: a group commit across every message of the cycle.
// TestGroupCommit checks the count; BenchmarkGroupCommit (package enginesvc)
// measures it on the real disk (docs/performance.md has the figures).
//
// # Durability
//
// The service applies an entry once it is in the log (the log buffer);
// the egress it offers while handling the entry is released only once the
// entry's log position is durable in the archive at Options.FileSyncLevel:
// synced data (1) or data and metadata (2) after every block. At level 0
// nothing is synced per block and egress is released as soon as the block
// is written: a crash may lose commands whose events were already released
// (acknowledged). recording.log and the catalog are synced at level 1 or
// more whatever the file sync level, and a snapshot is only entered in
// recording.log once its recordings are complete and synced and the log is
// synced up to its position, so recovery always finds a log that reaches
// the latest snapshot.
//
// # Node directory
//
//	D/cluster/recording.log      TERM per leadership term, SNAPSHOT per snapshot recording
//	D/cluster/cluster-mark.dat   Aeron's ClusterMarkFile of a consensus module
//	                             (activity refreshed about once a second in
//	                             wall-clock ms, Options.EpochClock; Open
//	                             refuses a directory whose node is live,
//	                             ErrNodeRunning; -1 after Close)
//	D/cluster/node-state.dat     Aeron's NodeStateFile: the highest leadership term started
//	D/archive/archive.catalog    one descriptor per recording (log, snapshots)
//	D/archive/archive-mark.dat   Aeron's ArchiveMarkFile
//	D/archive/<id>-<base>.rec    segment files
//
// The log is one recording, extended across restarts; each start appends a
// TERM entry for a new leadership term (committing the previous term's end)
// and a NewLeadershipTermEvent to the log.
//
// # Snapshots
//
// See snapshot.go: on demand (RequestSnapshot), every
// Options.SnapshotEveryBytes of log or every Options.SnapshotEvery of
// cluster time, the sequencer appends a ClusterActionRequest and stops
// sequencing for the cycle; at that entry's position S the service and the
// consensus-module state are exactly the state at S. Pauseless (the
// default for a PauselessService): the service freezes a copy-on-write
// clone and the node encodes it on a goroutine of its own while sequencing
// goes on; stop the world: the service writes its snapshot before the node
// goes on. Either way the content is the state at S, in Aeron's formats:
// the consensus module's recording holds SnapshotMarker BEGIN (type 1),
// ConsensusModule, ClusterSession*, Timer*, PendingMessageTracker, END;
// the service's holds BEGIN (type 2), ClientSession*, END and then the
// service's own data.
//
// A stop-the-world service snapshot is written at Options.SnapshotMTU, by
// default the largest MTU its term allows (65,504 with the default 16 MiB
// terms: Aeron Cluster's snapshot channel with mtu=65504), since the world
// stops for as long as the take lasts and 64 KiB frames take 48× fewer
// claims, commits and headers than 1,408-byte ones. Pauseless snapshots
// and the consensus module's use the log's MTU: a pauseless encoder yields
// its processor between claims, so its claims must stay short. The
// recording's descriptor carries its MTU, and restart, backups and
// retention read frames of any MTU. Aeron writes and replays such
// recordings itself (a snapshot channel with mtu=65504); Aeron's tools
// have not yet been run here on ours with 64 KiB frames (no
// AERON_CLASSPATH on the machine that added them).
//
// # Client-visible pause
//
// clusterbench.PauseReport in bench/clusterbench (`matchlog bench
// cluster`, BenchmarkPauseReport) measures what clients see: commands submitted on a fixed schedule (20,000
// a second by default), each one's delay from its scheduled send time
// (coordinated-omission corrected) to the release of its events, over 1 s
// without a snapshot (the baseline p99) and from 200 ms before a snapshot
// request to 200 ms after its completion (the worst delay is the pause),
// on a book grown through commands. BenchmarkSnapshotPause is an older,
// smaller form of it (200,000 orders, sync level 1).
//
// A pauseless snapshot shares the machine with the duty cycle, and the
// design keeps the duty cycle's work out of the snapshot's way
// (docs/performance.md has each step measured before and after):
//
//   - archive.Archive is safe for concurrent use by different recordings
//     and each recording has its own mutex, so the log's group commit never
//     waits for a snapshot block being written or synced.
//   - At sync level 0 the log's segments are synced up to S on the snapshot
//     goroutine (archive.Recording.SyncTo), not in the duty cycle when
//     the snapshot completes; the current log segment is synced in the
//     background every bgSyncEvery bytes (archive.Options
//     BackgroundSyncEvery), so a roll-over sync has little left to flush;
//     pauseless snapshot recordings are synced as they are written
//     (archive.Source.SyncEachRecord), not as a segment's worth at their
//     end.
//   - The archive's recorder prepares the next segment on a goroutine of
//     its own once the current one is half full (archive.PreparedSuffix)
//     and closes the finished one there; the roll-over only renames the
//     prepared file into place (plus a directory sync at level >= 1).
//   - Encoding is linear by default: parallel encoders (enginesvc.Options
//     Workers) take the duty cycle's core unless GOMAXPROCS leaves one for
//     it and one for the writer (snapshot.MaxLiveWorkers).
//   - Snapshot blocks are 1 MiB (Options.SnapshotTermLength); smaller ones
//     lengthen the snapshot without lowering the pause.
//   - The encoder yields its processor every Options.SnapshotYieldEvery
//     claims, so the duty cycle, back from a file sync, does not wait for
//     the Go scheduler's preemption to get a processor; the writer runs on
//     an OS thread of its own at Options.SnapshotNice.
//
// What remains is the disk and the kernel, not the node: at level 2 the
// worst delay is one log write+sync slowed while the snapshot's blocks are
// written and synced to the same disk, at level 0 a gap between two cycles
// while the kernel's writeback takes a core. bench cluster reports the
// longest DoWork, the longest log record in one cycle and the longest gap
// between two cycles over the window, which tells the two apart.
//
// The library sets no garbage-collector settings; docs/performance.md says
// when a host would want to (a GC cycle during a snapshot takes a core for
// its mark worker, as a parallel encoder does).
//
// # Restart
//
// Open builds the recovery plan (package recordinglog) from recording.log
// and the catalog, loads the consensus-module snapshot and the service's
// strictly, replays the log from S to its end (egress dropped, snapshot
// requests ignored), then extends the log recording and starts a new term.
// A missing, incomplete or corrupt latest snapshot stops Open with an error
// naming the recording and the fix that applies (CheckPlan computes it:
// invalidate-latest-snapshot, after which the previous set is the latest,
// only when that set and its log can be used; otherwise what to restore);
// it never starts empty or from an older set silently. The same check runs
// read-only before Open writes anything, and `matchlog cluster
// recovery-plan` and `describe` exit non-zero on it.
//
// # Offline changes and liveness
//
// Offline tools that write refuse a live node (CheckLive: a mark file whose
// activity timestamp is within 10 s and whose process still runs; a node
// killed with SIGKILL is not live) and a directory another program wrote.
// RunStopped opens a stopped node, runs a change on it and closes it, or
// puts every file back as it was when any step fails.
//
// # Archive
//
// The node records through package archive (archive.Archive, see
// archive.go): the log recording and one recording per snapshot, with
// Aeron's segment files, catalog and mark file. archive.Archive is safe for
// concurrent use by different recordings (its catalog mutex covers only
// catalog updates; each recording's block writes and syncs run outside
// it), so a pauseless snapshot's blocks, written and synced on the
// snapshot goroutine, never hold up the log's group commits; they only
// share the disk with them. Where
// the node needs more durability than the archive's file sync level gives
// (a snapshot before recording.log names it, the log up to a snapshot's
// position, a stop position in the catalog, and at level 0 every segment the
// recording has left), it syncs the segment files itself; for a pauseless
// snapshot at level 0 the log's segments are synced up to S on the snapshot
// goroutine, not in the duty cycle. Before opening the
// archive it repairs the two catalog states a crash inside addNewRecording
// leaves and archive.Open refuses (catalogrepair.go); after a storage
// failure it abandons the archive as a crash would, so the next start
// settles the log's stop position from what is durable.
//
// # A full disk and failing I/O
//
// The duty cycle compares the archive volume's free space with
// Options.StorageReserve (storage.go): below it the node is storage-full
// and hands session messages to the service's Refuser instead of
// sequencing them (enginesvc answers Rejected with
// engine.RejStorageFull), and it resumes by itself once space returns. A
// file operation that fails anyway (ENOSPC past the gate, EIO, any failed
// sync) is not retried: the node fails, and the next start recovers from
// what is durable.
//
// # Automatic retention
//
// Options.Retention (autoretention.go) keeps a running node's archive
// directory within a size budget, a free-disk threshold and an age, and
// deletes snapshot generations beyond Options.Retention.Keep (default 2)
// whole. The rules only propose a new start of the log recording;
// ApproveCutoff approves it: rounded down to a segment boundary, never past
// C, the greatest boundary ≤ S of the oldest kept generation, never into
// the active segment. An approved cutoff is executed as validate (the
// recovery plan on the cut state must pass CheckPlan), archive Detach,
// validate again, then the archive's two-phase delete (renamed *.deleted,
// unlinked after the delete delay). All of it runs on the node's
// goroutine, inside DoWork — the goroutine that records the log and writes
// recording.log — one step (at most one catalog or recording.log change
// and its syncs, or one unlink) per DoWork, so no step races the log
// recorder or the snapshot writer (which touches only its own recordings,
// ordered with the detaches and deletes by the archive's catalog mutex).
// Each proposal, approval, refusal and deletion is logged and counted
// (Stats.Retention*). After its deletions each check compacts
// recording.log, then the catalog (compact.go: each once at least
// CompactMinEntries of its entries, and a quarter, can go), so that what
// the deletions leave behind in Aeron's formats (DELETED catalog entries,
// recording.log entries of deleted snapshots and of terms before the log's
// start) stays bounded instead of growing with the node's history; the
// recovery plan is the same after a compaction. CompactDir is the offline
// form (`matchlog archive compact`).
//
// # Concurrency
//
// DoWork, Close, AwaitSnapshot and every Service callback run on the
// caller's goroutine. Connect, Offer, CloseSession and RequestSnapshot may be
// called from any goroutine. A pauseless snapshot is written on a goroutine
// of the node's, which touches only the frozen state and the archive.
//
// # Logs and metrics
//
// Options.Logger (log/slog; nil logs nothing) gets one record per
// lifecycle event with the positions in attributes: recovery plan, open,
// snapshot start, end or failure, node failure, close (logging.go); the
// duty cycle's steady state logs nothing. Stats holds the counters and
// positions (P, durable, S, A) that package server/metrics reads at scrape
// time; Options.DutyCycle observes the duration of each DoWork that did
// work, without allocating.
package cluster
