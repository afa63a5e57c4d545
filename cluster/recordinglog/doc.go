// Package recordinglog reads and writes an Aeron Cluster recording.log, byte
// for byte as Aeron's RecordingLog (Java, 1.48) lays it out, and builds the
// recovery plan Aeron's consensus module follows on restart
// (RecordingLog.createRecoveryPlan).
//
// The recording log is the cluster's index into its archive: one TERM entry
// per leadership term (the recording that holds the log, and where the term
// starts and ends in it) and one SNAPSHOT entry per snapshot recording of
// the consensus module and of each service.
//
// # File format
//
// Entries are laid end to end, each aligned to 64 bytes, little-endian:
//
//	offset  size  field
//	     0     8  recordingId          archive recording (log or snapshot)
//	     8     8  leadershipTermId
//	    16     8  termBaseLogPosition  log position where the term starts
//	    24     8  logPosition          TERM: where it ends, -1 while open;
//	                                   SNAPSHOT: position of the snapshot
//	    32     8  timestamp            cluster time units
//	    40     4  serviceId            -1 for TERM and the consensus module
//	    44     4  entryType            TERM 0, SNAPSHOT 1, STANDBY_SNAPSHOT 2;
//	                                   bit 31 set: invalid; exactly -1: removed
//	    48    16  zero                 (STANDBY_SNAPSHOT: int32 length +
//	                                   ASCII archive endpoint, then zeros up
//	                                   to a multiple of 64)
//	    64        next entry
//
// A TERM or SNAPSHOT entry is 64 bytes; a STANDBY_SNAPSHOT entry is
// align(52+len(endpoint), 64), at most 4096. An entry's index is its ordinal
// in the file, removed entries included. Every TERM entry names the same
// recording (the log), never -1.
//
// In memory (Log.Entries) the entries are sorted as Aeron sorts them: by
// leadershipTermId, termBaseLogPosition, then type with SNAPSHOT after the
// others; TERMs by index, snapshots by logPosition and then by descending
// serviceId. A snapshot set taken at one position therefore reads
// [service N-1, ..., service 1, service 0, consensus module], with the
// consensus module's entry (written last) at the end.
//
// # Writing and crashes
//
// Every change is one positional write followed by a sync at
// Options.SyncLevel (0 none, 1 File.Sync, 2 File.SyncAll), as Aeron's
// force(fileSyncLevel):
//
//   - appends write the whole entry at the end of the file;
//   - CommitLogPosition rewrites the 8 bytes at offset 24 of a TERM entry;
//   - InvalidateEntry rewrites the 4-byte type at offset 44 with bit 31 set;
//   - restoring an invalid snapshot (AppendSnapshot) rewrites its 64 bytes.
//
// With SyncLevel >= 1 every change that returned nil survives a crash, and
// only the change in flight can be lost. A lost append leaves the file as it
// was, or ending in a partial entry, or (when the length survived but the
// data did not) ending in zeros; Open reports both as a torn tail
// (ErrTornTail, naming the offset) and Options.Repair truncates it away. A
// lost field rewrite leaves the old value. With SyncLevel 0 several appends
// may be lost in any combination, which can leave a zeroed entry before a
// whole one: Open reports that as corruption, and Repair does not touch it.
//
// SeedFromSnapshot (ClusterTool seed-recording-log-from-snapshot) is the
// one change that replaces the file: it copies it to recording.log.bak
// (never overwriting one), writes the seeded entries to recording.log.tmp,
// syncs them and renames that over recording.log.
//
// Log.Compact is the other: it writes the entries it keeps (byte for byte,
// in file order) to recording.log.compacting, syncs them, renames that over
// recording.log and syncs the directory; a writable Open removes a leftover
// recording.log.compacting (the rename never happened) and reports it. It
// drops only entries nothing can use: snapshot entries of recordings gone
// from the archive below every loadable consensus-module snapshot, and
// TERM entries of terms that ended at or before the log's start (see
// CompactSelect); the recovery plan is the same after.
//
// Aeron's own loader is laxer: it stops at a short tail without a word and
// takes a zeroed entry for a TERM. This package refuses both unless asked
// to repair, so that a damaged file is never mistaken for a shorter log.
//
// # Recovery plan
//
// See PlanRecovery: the latest valid consensus-module snapshot and the
// service snapshots just before it, the last valid TERM and its recording's
// extent in the archive catalog, and the range of the log to replay. Where
// Aeron silently uses an incomplete snapshot set, the plan lists each
// missing or invalid entry in RecoveryPlan.Problems; the node must refuse to
// start, and the operator can fall back to the previous set with
// Log.InvalidateLatestSnapshot (ClusterTool invalidate-latest-snapshot).
//
// # Errors
//
// Error strings start with "recordinglog: ". Damaged files give a
// *CorruptError naming the offset, satisfying errors.Is(err, ErrCorrupt);
// no input makes the package panic.
//
// A Log is not safe for concurrent use.
package recordinglog
