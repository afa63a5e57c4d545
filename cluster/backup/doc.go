// Package backup makes and tests backup images of a matchlog node: the
// B of seeds/000, the position from which a member outside the retention
// window is rebuilt.
//
// # The image
//
// Create reads a node directory — stopped, or with a node running on it —
// only through read-only APIs (recordinglog.Open ReadOnly,
// archive.OpenCatalogFile ReadOnly, archive.RecordingReader) and never
// opens a file of it for writing. It takes the latest complete snapshot
// set of recording.log (the consensus module's and service 0's, at S) and
// fixes B, the end of the log recording's whole frames at that moment
// (its stop position when stopped). The image is a node directory of its
// own:
//
//	BDIR/
//	  cluster/cluster-mark.dat   a stopped matchlog node's (cluster.CreateStoppedMarkFile)
//	  cluster/recording.log      the TERM entries covering [S, B], then the set (recordinglog API)
//	  archive/archive.catalog    written by the archive
//	  archive/<id>-<base>.rec    the log [S, B) and the two snapshot recordings
//	  backup.json                the manifest, written last (Manifest)
//	  drills.jsonl               the drill log, one DrillRecord a line
//
// Every recording is copied through the archive's recorder (archive.Open
// on BDIR/archive, Archive.StartRecording): the frames read from the
// source are laid into a log buffer at their term offsets, byte for byte,
// padding included, and recorded as a live log is, so the catalog and the
// segment files are the archive's own work. The copy keeps each
// recording's term length, segment length, MTU, initial term id, session
// and stream ids; recording ids are the image's (recording.log names
// them). The log of a running node is read twice and the two reads must
// agree (a frame caught while the recorder wrote it differs).
//
// # Verification
//
// An image is declared good only after it verified: the engine snapshot
// at S loads strictly (enginesvc.ReadSnapshot), and the image restored to
// a scratch directory starts as a node (cluster.Open: the strict load of
// the set, the replay of [S, B)) that recovers exactly that snapshot and
// replays to B; its engine state hash is the image's hash at B. Only then
// is backup.json written (under a temporary name, synced, renamed), with
// the source, S, B, the hashes, and every file with its size and SHA-256.
// A failed Create removes what it wrote (BDIR itself when it made it), so
// no directory without a manifest passes for a backup, and ReadManifest
// accepts only a manifest marked verified.
//
// # Drills
//
// Drill restores the image onto an empty directory, checking every file
// against the manifest, starts a node from it and compares its state hash
// with the manifest's. Each drill, passed or failed, appends its record to
// drills.jsonl: date, duration, bytes restored and restore bytes/s, the
// positions replayed and replay positions/s. The retention planner reads
// the manifest (B; CheckFiles: every file there at its size) and the last
// drill (model B's refusals, the costs in seconds).
//
// Create and Drill each run on one goroutine; two of them must not work on
// the same backup directory at once.
package backup
