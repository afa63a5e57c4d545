// Package archive reads, writes and checks the files of an Aeron Archive
// directory, byte for byte as Aeron's Java archive (1.48) lays them out, so
// that Aeron's ArchiveTool and a Java archive accept what this package writes
// and this package accepts what they write.
//
// It holds the on-disk formats and the read/verify side: the catalog
// ([Catalog]), the mark file ([MarkFile]), segment file naming and the data
// frames inside segments ([ScanSegment]), and the tool functions [Describe],
// [ComputeStopPosition] and [Verify]; and the archive itself ([Archive]):
// a recorder that copies an image of a log buffer into segment files
// ([Archive.StartRecording], [Archive.ExtendRecording], [Recording]),
// replay ([Archive.StartReplay], [Replay], built on the read-only
// [RecordingReader], the one reader of recorded frames, which the node's
// restart, its inspection functions and the tools use too), the mark
// file's liveness, crash recovery on [Open], and a sidecar index of
// segment timestamps for retention by age ([IndexFileName],
// [Archive.AgeCutoff]).
//
// # Usage
//
// Everything is driven by the owner's duty cycle; nothing runs in the
// background unless Options.ActivityInterval asks for the mark file ticker:
//
//	a, err := archive.Open(vfs.Default, dir, archive.Options{FileSyncLevel: 1, CatalogSyncLevel: 1})
//	r, err := a.StartRecording(archive.Source{Log: log, Image: log.Image(), Channel: "aeron:ipc"})
//	for ... {
//		n, err := r.Poll()              // at most one block; 0 when idle
//		pub.SetPositionLimit(image.Position() + window)
//		a.UpdateActivity()              // at least every second (Poll does it too)
//	}
//	err = r.Stop()                      // catalog stop position, final
//	_, err = a.Replay(r.ID(), from, archive.NullPosition, handler)
//	err = a.Close()                     // mark file activity -1
//
// # Durability
//
// At file sync level 1 (2) every block is followed by File.Sync (SyncAll)
// before the recorded position moves past it, and every segment file is
// created, preallocated, synced (ahead of time, under a temporary name),
// renamed into place and its directory synced before a block is written
// into it; the catalog (sync level >= the file level) is synced on
// every change. So after a crash everything a Poll reported written is on
// disk; what follows is at most one torn block, which Verify (with
// Truncate) or the next Open cuts off. At level 0 no block is synced and a
// crash may lose any unsynced write, unless the level-0 policy says when to
// make a recording durable anyway (Options.SyncOnRollOver and
// BackgroundSyncEvery, Source.SyncEachRecord, applied by Recording.Record)
// or the owner asks for it ([Recording.SyncTo]); [Recording.DurablePosition]
// is the position known durable at every level (durable.go).
//
// # Frame checksums
//
// Recordings matchlog writes (the node's log and snapshots) carry a
// CRC-32C of each DATA frame's payload in the frame's reserved value
// ([FrameChecksum]); whether a recording does is decided by its first DATA
// frame ([ChecksumMode], [RecordingChecksums]). Every reader — [RecordingReader]
// and so [Replay], [ScanSegment] and so [Verify] and [ComputeStopPosition] — checks every
// frame it reads of such a recording: a frame whose checksum does not match
// is a torn tail when only zeros follow it, and damage (an InvalidFrame
// naming the segment file and offset) when data does. Recordings real
// Aeron writes carry no checksum there (Aeron Cluster leaves the field 0):
// for them only the structure of each frame is checked (its term offset,
// term id, stream id, type and length), as ArchiveTool does, so a flipped
// payload byte inside such a recording is not found.
//
// All integers are little-endian. All file access goes through
// [github.com/matchlog/matchlog/internal/vfs], with positional reads and
// writes.
//
// # Directory
//
//	archive.catalog          the catalog: one descriptor per recording
//	archive-mark.dat         the mark file: liveness and configuration
//	archive-mark.lnk         optional: text file naming the mark file's directory
//	<id>-<base>.rec          segment files, both numbers decimal
//	<id>-<base>.rec.deleted  a segment renamed for deletion, unlinked later
//	<id>.idx                 sidecar index of segment timestamps (ours)
//	archive.catalog.compacting  a compaction's new catalog before its rename
//	                         (ours; a leftover is removed by Open)
//
// # Catalog (archive.catalog)
//
// Raw SBE blocks of schema 101 version 10 with no message headers. The file
// is usually larger than its entries (default capacity 1 MiB); unused space is
// zero. It grows by half its size when an entry does not fit.
//
//	offset 0   CatalogHeader (32 bytes)
//	           0 version int32 = 0x030100 (major must be 3)
//	           4 length int32 = 32
//	           8 nextRecordingId int64
//	          16 alignment int32 = 64 (0: legacy, alignment 1024,
//	             first entry at 1024, nextRecordingId not stored)
//	          20..31 zero
//	offset 32  entry, entry, ..., then zeros
//
//	entry      RecordingDescriptorHeader (32 bytes)
//	           0 length int32   body length including padding
//	                            (= aligned entry length - 32); <= 0 ends the scan
//	           4 state int32    INVALID 0, VALID 1, DELETED 2
//	           8 checksum int32 always 0 here (no checksum configured)
//	          12..31 zero
//	           RecordingDescriptor (80-byte block)
//	           0 controlSessionId  8 correlationId  16 recordingId
//	          24 startTimestamp   32 stopTimestamp  40 startPosition
//	          48 stopPosition     56 initialTermId  60 segmentFileLength
//	          64 termBufferLength 68 mtuLength      72 sessionId  76 streamId
//	          80 strippedChannel, originalChannel, sourceIdentity
//	             (each uint32 length + ASCII), then zero padding up to
//	             align(32+80+12+strings, alignment)
//
// VALID recording ids must be >= 0 and strictly increase in file order; only
// VALID entries are found by id. A recording's stopPosition and stopTimestamp
// are -1 while it is being recorded.
//
// The descriptor checksum field is left 0: Aeron fills it only when the
// archive is configured with a record checksum, and this package never is.
// ArchiveTool verify without -checksum does not look at it.
//
// # Mark file (archive-mark.dat)
//
//	offset 0     SBE message header: blockLength 128, template 200,
//	             schema 100, version 2 (absent in legacy files)
//	offset 8     MarkFileHeader block (128 bytes)
//	             0 version int32 (written last; 0 = not ready)
//	             8 activityTimestamp int64 ms (-1 after a clean stop)
//	            16 startTimestamp  24 pid  32 controlStreamId
//	            36 localControlStreamId  40 eventsStreamId
//	            44 headerLength int32 (8192)  48 errorBufferLength int32
//	            56 archiveId int64
//	offset 136   controlChannel, localControlChannel, eventsChannel,
//	             aeronDirectory (uint32 length + ASCII each)
//	offset 8192  error log (errorBufferLength bytes)
//
// # Segment files (<id>-<base>.rec)
//
// Each segment is segmentFileLength bytes (a power of two, 64 KiB..1 GiB, at
// least the term length) and holds whole terms. Bases count from the term
// base of the recording's start position (see [SegmentFileBasePosition]), so
// a file offset equals the term offset modulo the term length. Frames are
// stored as in the term buffer: a 32-byte header, the payload, zeros up to a
// multiple of 32. A padding frame is stored as its header only; its body is
// the file's zeros. The data ends at the first header whose length is 0. A
// recording that stops exactly on a segment boundary has one more, empty,
// full-length segment file.
//
//	0  frame length int32   4 version uint8  5 flags uint8  6 type uint16
//	8  term offset int32   12 session id    16 stream id   20 term id
//	24 reserved int64      32 payload
//
// # Removing segments
//
// As Aeron's detachSegments, deleteDetachedSegments and purgeSegments, with
// Kafka's two-phase delete: [Archive.Detach] moves a recording's catalog
// start to a later segment boundary (never into the active segment, past
// the stop segment or below a replay) and leaves the files;
// [Archive.DeleteDetached] renames the files wholly below the start to
// "*.deleted" at once and [Archive.DeleteStep], called from the duty cycle,
// unlinks one per call once Options.DeleteDelay has passed;
// [Archive.Purge] is both. The catalog start is durable before any rename,
// so no segment file the catalog references is ever deleted. Retention
// rules (Options.Retention: age, size, free disk) only propose cutoffs
// ([Archive.Proposals]); a caller approves one by purging.
//
// # Compaction
//
// A purged recording's entry stays in the catalog, DELETED, as Aeron leaves
// it. [Archive.CompactCatalog] (online: DELETED entries whose files are
// gone) and [CompactCatalogDir] (offline; with CompactOptions.Invalid also
// INVALID entries and their files, as Aeron's ArchiveTool compact) rewrite
// the catalog without them: every other entry byte for byte and in order,
// nextRecordingId kept (no id is ever reused), the file's length kept. The
// new catalog is written to [CompactTempName], synced, renamed over
// archive.catalog and the directory synced, so a crash leaves the old
// catalog or the new one (compact.go).
//
// # Errors
//
// Every error string starts with "archive: ". Damaged files give errors that
// name the file offset and the problem; no input makes this package panic.
package archive
