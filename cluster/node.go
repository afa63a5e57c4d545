package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Directory and stream layout of a node.
const (
	ClusterDirName = "cluster"
	ArchiveDirName = "archive"

	LogChannel      = "aeron:ipc?alias=log"
	SnapshotChannel = "aeron:ipc?alias=snapshot"

	LogStreamID                     = 100
	ServiceSnapshotStreamID         = 106
	ConsensusModuleSnapshotStreamID = 107
)

// SnapshotMode chooses how snapshots are taken.
type SnapshotMode int

const (
	// Pauseless: the service freezes a copy-on-write clone at the snapshot
	// position and the node encodes it on another goroutine while it goes
	// on sequencing (needs a PauselessService; others fall back to
	// StopTheWorld).
	Pauseless SnapshotMode = iota
	// StopTheWorld: the service writes its snapshot in OnTakeSnapshot
	// while the node waits.
	StopTheWorld
)

// Options configure a Node.
type Options struct {
	// FS is the file system (vfs.Default if nil); Dir the node directory
	// holding cluster/ and archive/.
	FS  vfs.FS
	Dir string
	// Service is the clustered service (one per node).
	Service Service
	// Clock returns the cluster time in nanoseconds for timestamps and
	// timers (time.Now().UnixNano if nil). It is read only when sequencing.
	Clock func() int64
	// TermLength of the log and snapshot buffers (default 16 MiB), MTU
	// (default 1408), SegmentLength of archive segments (default 128 MiB).
	TermLength    int
	MTU           int
	SegmentLength int32
	// FileSyncLevel is the archive's file sync level for the log: 0 no
	// sync, 1 data, 2 data and metadata, per block. Egress of a message is
	// released once the message's log position is durable at this level.
	// At level 0 nothing is synced: released events do not mean the
	// command survives a crash — a crash may lose acknowledged commands.
	FileSyncLevel archive.SyncLevel
	// FileIoMaxLength caps one archive write and sync (Aeron's
	// fileIoMaxLength: a power of two >= 64 KiB; default 16 MiB).
	FileIoMaxLength int
	// SnapshotTermLength is the term length of the service snapshot's
	// publication, which also bounds one snapshot block. The snapshot's
	// blocks are written and synced on the snapshot goroutine without
	// holding up the log's (the archive is safe for concurrent use by
	// different recordings), but they share the disk with the log's
	// syncs. Default 1 MiB when pauseless, TermLength when stopping the
	// world. A snapshot's publication is three terms of this length in
	// memory; the node keeps the last one of each length and clears it for
	// the next snapshot rather than allocating another.
	SnapshotTermLength int
	// SnapshotMTU is the MTU of a stop-the-world service snapshot's
	// publication and recording, as the mtu parameter of Aeron Cluster's
	// snapshot channel ("aeron:ipc?alias=snapshot|mtu=65504"): larger
	// frames hold more orders a batch, so fewer claims, commits and
	// headers, and the world stops for less (docs/performance.md). The
	// recording's descriptor carries it, and the readers here (restart,
	// backups, retention) take frames of any MTU. Default:
	// the largest the snapshot's term length allows (an eighth of it,
	// Aeron's rule), at most 65,504 and at least MTU. Pauseless snapshots
	// and the consensus module's use MTU: a pauseless encoder yields
	// between claims (SnapshotYieldEvery), and a claim of 64 KiB would
	// make the duty cycle wait about 50× longer for a processor.
	SnapshotMTU int
	// SnapshotYieldEvery: a pauseless snapshot's encoder yields its
	// processor (runtime.Gosched) every this many claims (batches of one
	// MTU), so that the duty cycle, back from a blocking file sync, does
	// not wait for the scheduler's 10 ms preemption to get a processor
	// while the encoder holds one and other goroutines hold the rest.
	// Default DefaultSnapshotYieldEvery; negative: never.
	SnapshotYieldEvery int
	// SnapshotNice runs a pauseless snapshot's writer on an OS thread of
	// its own with this nice value (1..19, Linux; ignored elsewhere), so
	// that the writer, not the duty cycle, waits when the host's cores are
	// short, and its archive I/O spreads out instead of crowding the
	// log's syncs. Default DefaultSnapshotNice; negative: the writer runs
	// like any goroutine. The cost is a longer take (docs/performance.md
	// has the pause and the take measured with and without it).
	SnapshotNice int
	// SnapshotMode (default Pauseless), SnapshotEveryBytes of log and
	// SnapshotEvery of cluster time (0: off).
	SnapshotMode       SnapshotMode
	SnapshotEveryBytes int64
	SnapshotEvery      time.Duration
	// AppVersion goes into snapshot markers and the new-term event.
	AppVersion int32
	// Egress receives a session's messages once they may be released
	// (called from DoWork; msg valid during the call only).
	Egress func(sessionID int64, msg []byte)
	// MaxBatch bounds the ingress messages sequenced per DoWork
	// (default 1024).
	MaxBatch int
	// Logger receives one record per lifecycle event (open, recovery
	// plan, snapshot start and end, failure, close) with the positions in
	// attributes; see logging.go. Nil discards them.
	Logger *slog.Logger
	// DutyCycle, if set, observes how long each DoWork that did work
	// took, in seconds (a prometheus.Histogram is one). It is called on
	// the goroutine that runs DoWork and must neither block nor allocate.
	DutyCycle Observer
	// EpochClock returns the wall-clock time in epoch ms for the activity
	// timestamp of cluster-mark.dat, as Aeron's epoch clock
	// (time.Now().UnixMilli if nil). Mark-file liveness is real time even
	// when Clock is a test clock; the log's timestamps stay on Clock.
	EpochClock func() int64
	// MarkFileTimeout: Open refuses a node directory whose
	// cluster-mark.dat shows a node active within this of EpochClock
	// (default DefaultMarkFileTimeout). A running node refreshes its
	// activity timestamp about once a second (MarkFileUpdateInterval).
	MarkFileTimeout time.Duration
	// IgnoreLiveMarkFile skips Open's live-node refusal (never the refusal
	// of another program's directory): for an operator who knows that the
	// running process a fresh mark file names is no node (a reused pid).
	IgnoreLiveMarkFile bool
	// Retention is automatic retention (autoretention.go): proposals by
	// age, archive size and free disk, approved only by the positional
	// rules, executed while the node runs. The zero value is off.
	Retention RetentionOptions
	// StartGate, if set, is called by Open once the directory is known to
	// be a stopped matchlog node's (or new) and before Open checks the
	// recovery plan or writes anything, with Options.FS and Options.Dir.
	// An error refuses the start: Open returns it as it is, and the
	// directory is as it was. It must only read. `matchlog node`'s
	// restart-vs-rebuild gate (cluster/retention's verdict) is one.
	StartGate func(fsys vfs.FS, dir string) error
	// StorageReserve is the free space (bytes) the archive volume must
	// keep for the node to take commands (storage.go): below it they are
	// refused (Refuser) until space returns. 0: one log segment plus
	// twice the last snapshot set's bytes; negative: no gate.
	// StorageCheckInterval is how often the duty cycle reads the free
	// space (default DefaultStorageCheckInterval; a value below 1 ms:
	// every DoWork).
	StorageReserve       int64
	StorageCheckInterval time.Duration
}

// Observer receives measurements (Options.DutyCycle).
// prometheus.Histogram implements it.
type Observer interface {
	Observe(v float64)
}

// DefaultSnapshotNice is Options.SnapshotNice's default.
const DefaultSnapshotNice = 10

// DefaultSnapshotYieldEvery is Options.SnapshotYieldEvery's default.
const DefaultSnapshotYieldEvery = 16

// DefaultMarkFileTimeout is how recent the activity timestamp of another
// node's cluster-mark.dat must be for Open to take that node as running
// (as the archive's DefaultMarkTimeout).
const DefaultMarkFileTimeout = 10 * time.Second

// MarkFileUpdateInterval is how often a running node refreshes the
// activity timestamp of cluster-mark.dat from its duty cycle.
const MarkFileUpdateInterval = time.Second

// Stats count what the node did.
type Stats struct {
	Sequenced     int64 // log entries appended
	Applied       int64 // log entries delivered to the service live
	Replayed      int64 // log entries replayed at start
	LogBlocks     int64 // archive writes of the log
	LogSyncs      int64 // archive syncs of the log (group commits)
	Released      int64 // egress messages released
	Snapshots     int64 // snapshot sets completed
	LogPosition   int64 // appended log position
	DurableLog    int64 // durable log position
	SnapshotBytes int64 // bytes of completed snapshot recordings
	// SnapshotPosition is the log position S of the latest snapshot set
	// (taken by this node or loaded at Open), -1 when there is none.
	SnapshotPosition int64
	// ArchiveStart is the start position A of the log recording in the
	// catalog: the earliest log position still on disk.
	ArchiveStart int64
	// LastSnapshotBytes is the length of the last snapshot set's
	// recordings; SnapshotInProgress is true while a snapshot is being
	// written.
	LastSnapshotBytes  int64
	SnapshotInProgress bool
	// LastSnapshotWrite is how long the last snapshot set took to write
	// (on the snapshot goroutine when pauseless).
	LastSnapshotWrite time.Duration
	// LastSnapshotPrepare is how long the last snapshot held the node's
	// goroutine: the frozen copies (pauseless), or the whole write (stop
	// the world).
	LastSnapshotPrepare time.Duration
	// LastSnapshotArchive is the part of LastSnapshotWrite spent in the
	// archive: starting, writing, syncing and stopping the recordings.
	LastSnapshotArchive time.Duration
	// LastSnapshotLogSync is how long making the log durable up to the
	// last snapshot's position took (at sync level 0 its segment files
	// are synced: on the snapshot goroutine when pauseless, else on the
	// node's goroutine after the write).
	LastSnapshotLogSync time.Duration
	Skipped             int64 // log entries for sessions no longer open
	// LastSnapshotNiceErr is why the last pauseless snapshot's writer
	// could not take Options.SnapshotNice (it then ran at the process's
	// priority), or nil.
	LastSnapshotNiceErr error
	// MaxLogRecord is the longest the duty cycle spent recording the log
	// in one cycle (archive write, and sync at level >= 1) since Open or
	// ResetMaxima; MaxLogRecordAt when that was.
	MaxLogRecord   time.Duration
	MaxLogRecordAt time.Time
	// MaxDoWork is the longest one DoWork took (sequencing, delivery to
	// the service, recording, release; a stop-the-world snapshot's write)
	// since Open or ResetMaxima; MaxDoWorkAt when it started;
	// MaxDoWorkSplit where its time went.
	MaxDoWork      time.Duration
	MaxDoWorkAt    time.Time
	MaxDoWorkSplit DutyCycleSplit
	// MaxRetentionWork is the longest automatic retention took in one
	// DoWork (DutyCycleSplit.Retention) since Open or ResetMaxima.
	MaxRetentionWork time.Duration

	// Automatic retention (Options.Retention; autoretention.go). Checks
	// run; proposals by rule; cutoffs approved (RetentionLimited of them
	// lowered by a positional rule) and refused by reason; log segments
	// detached and their bytes; snapshot generations (and orphaned
	// recordings) deleted and the recordings that went with them; files
	// unlinked, and waiting to be (a gauge); the archive directory's
	// bytes at the last check (a gauge); errors (a failed unlink, rename or
	// recording.log write: logged, retried by a later check).
	RetentionChecks            int64
	RetentionProposed          [NumRetentionRules]int64
	RetentionApproved          int64
	RetentionLimited           int64
	RetentionRefused           [NumRetentionRefusals]int64
	RetentionDetachedSegments  int64
	RetentionDetachedBytes     int64
	RetentionSnapshotsDeleted  int64
	RetentionRecordingsDeleted int64
	RetentionUnlinked          int64
	RetentionPendingUnlinks    int64
	RetentionArchiveBytes      int64
	RetentionErrors            int64
	// Compactions by automatic retention (compact.go): of the catalog and
	// of recording.log, and the entries each dropped; CatalogEntries and
	// RecordingLogEntries are gauges (every entry, any state, at the last
	// check).
	CatalogCompactions         int64
	CatalogEntriesDropped      int64
	RecordingLogCompactions    int64
	RecordingLogEntriesDropped int64
	CatalogEntries             int64
	RecordingLogEntries        int64

	// Storage (storage.go). ArchiveFreeBytes is the archive volume's
	// free space at the last check (-1: the file system cannot tell, or
	// the gate is off); StorageFull is true while commands are refused
	// for want of space; StorageFullEvents counts the times the node
	// became storage-full, StorageRefused the session messages refused
	// meanwhile; StorageErrors the file operations that failed with
	// ENOSPC (each one stops the node).
	ArchiveFreeBytes  int64
	StorageFull       bool
	StorageFullEvents int64
	StorageRefused    int64
	StorageErrors     int64
}

// DutyCycleSplit is where one DoWork's time went.
type DutyCycleSplit struct {
	// MarkFile: the liveness stamp of cluster-mark.dat (one positional
	// write, about once a second).
	MarkFile time.Duration
	// Snapshot: completing a background snapshot (its recording-log
	// entries).
	Snapshot time.Duration
	// Sequence: appending ingress, timers and snapshot requests to the
	// log buffer.
	Sequence time.Duration
	// Service: delivering the new log entries to the service — a
	// snapshot starts when its request is delivered, so this holds a
	// stop-the-world snapshot's whole write and a pauseless one's clone —
	// and releasing the egress that became durable.
	Service time.Duration
	// Record: recording the log in the archive (write, and sync at level
	// >= 1), as Stats.MaxLogRecord.
	Record time.Duration
	// Retention: automatic retention's unlink step and, when one was due,
	// its check (Options.Retention).
	Retention time.Duration
}

// ResetMaxima restarts Stats.MaxLogRecord and Stats.MaxDoWork. Call it
// from the goroutine that runs DoWork.
func (n *Node) ResetMaxima() {
	n.stats.MaxLogRecord, n.stats.MaxLogRecordAt = 0, time.Time{}
	n.stats.MaxDoWork, n.stats.MaxDoWorkAt, n.stats.MaxDoWorkSplit = 0, time.Time{}, DutyCycleSplit{}
	n.stats.MaxRetentionWork = 0
}

// Errors.
var (
	ErrClosed = errors.New("cluster: node closed")
	// ErrNodeRunning: Open found cluster-mark.dat of a node that is
	// still running (activity within Options.MarkFileTimeout).
	ErrNodeRunning = errors.New("cluster: a node is running on this directory")
	ErrTooLong     = errors.New("cluster: message longer than one frame")
)

type ingressKind uint8

const (
	inOpen ingressKind = iota + 1
	inMessage
	inClose
)

type ingress struct {
	kind    ingressKind
	session int64
	channel string
	stream  int32
	off, n  int // a message's bytes in its queue's arena
	reason  CloseReason
}

// inQueue is a batch of ingress with the messages' bytes in one arena.
// Offer appends to the node's input queue under its mutex; the duty cycle
// swaps it with its drained work queue and sequences from that without
// the lock, so that neither side allocates once the arenas have grown.
type inQueue struct {
	items []ingress
	arena []byte
}

func (q *inQueue) reset() {
	q.items = q.items[:0]
	q.arena = q.arena[:0]
}

type egressMsg struct {
	pos     int64
	session int64
	off, n  int
}

// snapshotJob is a snapshot set being written.
type snapshotJob struct {
	info      SnapshotInfo
	pauseless bool
	niceErr   error // setting Options.SnapshotNice failed (not fatal)
	done      chan struct{}
	svcRec    int64
	cmRec     int64
	bytes     int64
	err       error
	ts        int64 // cluster time of the request
	started   time.Time
	duration  time.Duration // of the background write
	prepare   time.Duration // on the node's goroutine
	archive   time.Duration // in the archive
	logSync   time.Duration
}

// Node is the embedded single-process cluster node: sequencer, log,
// archive recorder, consensus-module state, snapshots and the service.
// DoWork and the Service run on the caller's goroutine; Connect, Offer,
// CloseSession and RequestSnapshot may be called from any goroutine.
type Node struct {
	opts Options
	// scans carries the plan check's scans to the archive's recovery
	// during Open (archive.ScanMemo); nil after.
	scans   *archive.ScanMemo
	fs      vfs.FS
	cdir    string
	adir    string
	svc     Service
	psvc    PauselessService
	mark    vfs.File
	markMs  int64 // the activity timestamp last written to mark (epoch ms)
	rlog    *recordinglog.Log
	arc     *nodeArchive
	log     *logbuf.Log
	pub     *logbuf.ExclusivePublication
	img     *logbuf.Image
	rec     *nodeRecording
	recID   int64
	termID  int64
	cm      *cmState
	closed  bool
	failed  error
	scratch []byte

	// dispatch state
	replaying bool
	curPos    int64
	curTime   int64
	lastTime  int64
	lastMs    atomic.Int64

	// ingress (guarded by mu)
	mu            sync.Mutex
	in            inQueue // appended to by Connect, Offer, Close (under mu)
	work          inQueue // being sequenced by the duty cycle
	workHead      int     // next item of work
	nextSessionID int64
	pendingOpen   map[int64]bool
	snapRequested bool
	// reqMode is the mode of the requested snapshot (RequestSnapshotMode);
	// actionMode that of the action request sequenced last, used when it
	// is applied.
	reqMode, actionMode SnapshotMode

	// timers whose TimerEvent is in the log but not yet read
	firing map[int64]bool
	due    [][2]int64 // scratch: deadline, correlation id

	// egress awaiting durability
	egress []egressMsg
	arena  []byte

	// snapshots
	job          *snapshotJob
	snapLogs     snapLogs
	lastSnapPos  int64
	lastSnapTime int64

	stats Stats
	// split is where the current DoWork's time went; lastRecord its
	// recording time (summed over step's records in the cycle).
	split      DutyCycleSplit
	lastRecord time.Duration
	recovery   Recovery

	// guard is the directory as Open found it, put back when the start
	// fails; backups are the crash repairs' backups (repairbackup.go).
	guard   *dirState
	backups []string
	cuts    []segmentCut // bytes this start's crash repairs cut from segments

	ret *retainer // automatic retention; nil when off

	storage  storageGate // the free-space watch (storage.go)
	refusing bool        // egress offered now answers a refused message
}

func (o *Options) defaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Clock == nil {
		o.Clock = func() int64 { return time.Now().UnixNano() }
	}
	if o.TermLength == 0 {
		o.TermLength = 16 << 20
	}
	if o.MTU == 0 {
		o.MTU = logbuf.DefaultMTU
	}
	if o.SnapshotNice == 0 {
		o.SnapshotNice = DefaultSnapshotNice
	}
	if o.SnapshotYieldEvery == 0 {
		o.SnapshotYieldEvery = DefaultSnapshotYieldEvery
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.EpochClock == nil {
		o.EpochClock = func() int64 { return time.Now().UnixMilli() }
	}
	if o.MarkFileTimeout <= 0 {
		o.MarkFileTimeout = DefaultMarkFileTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// snapshotTermLength is the term length of a service snapshot's
// publication: Options.SnapshotTermLength, else 1 MiB (at most the log's)
// when pauseless and the log's when stopping the world.
func (n *Node) snapshotTermLength(pauseless bool) int {
	switch {
	case n.opts.SnapshotTermLength > 0:
		return n.opts.SnapshotTermLength
	case pauseless:
		return min(n.opts.TermLength, 1<<20)
	}
	return n.opts.TermLength
}

// snapshotMTU is the MTU of a service snapshot's publication: the log's
// when pauseless, else Options.SnapshotMTU or its default (see there).
func (n *Node) snapshotMTU(pauseless bool) int {
	if pauseless {
		return n.opts.MTU
	}
	return n.opts.stopSnapshotMTU(n.snapshotTermLength(false))
}

func (o *Options) stopSnapshotMTU(termLength int) int {
	if o.SnapshotMTU != 0 {
		return o.SnapshotMTU
	}
	return max(DefaultSnapshotMTU(termLength), o.MTU)
}

// DefaultSnapshotMTU is the largest MTU a snapshot publication of
// termLength can have (an eighth of the term, Aeron's rule, in frames of
// 32 bytes), at most 65,504: Options.SnapshotMTU's default for a
// stop-the-world snapshot whose term is termLength (the node's
// TermLength, 16 MiB by default, unless SnapshotTermLength is set), when
// it is not less than the log's MTU.
func DefaultSnapshotMTU(termLength int) int {
	return min(logbuf.ComputeMaxMessageLength(termLength), logbuf.MaxMTU) &^ (logbuf.FrameAlignment - 1)
}

// checkSnapshotMTU refuses a SnapshotMTU that is not an MTU, or that the
// stop-the-world snapshot's term length cannot hold.
func (o *Options) checkSnapshotMTU() error {
	if o.SnapshotMTU == 0 {
		return nil
	}
	if err := logbuf.CheckMTU(o.SnapshotMTU); err != nil {
		return fmt.Errorf("cluster: Options.SnapshotMTU: %w", err)
	}
	term := o.SnapshotTermLength
	if term <= 0 {
		term = o.TermLength
	}
	if maxMsg := logbuf.ComputeMaxMessageLength(term); o.SnapshotMTU > maxMsg {
		return fmt.Errorf("cluster: Options.SnapshotMTU %d is more than a snapshot term of %d bytes holds (%d, an eighth of it): lower SnapshotMTU or raise SnapshotTermLength",
			o.SnapshotMTU, term, maxMsg)
	}
	return nil
}

// Open opens the node directory (creating it on a first start), recovers
// the latest snapshot set and the log after it, and starts a new
// leadership term. The service's OnStart has run when Open returns.
//
// Before it creates or writes anything Open refuses a directory another
// program wrote (ErrForeignMarkFile: Aeron's, another service's), a live
// node's (ErrNodeRunning: a fresh activity timestamp whose process still
// runs; internal/liveness), what Options.StartGate refuses (checked first of
// the two), and a recovery plan that cannot be carried out on the files as
// they are (CheckPlan). A missing, incomplete or corrupt
// latest snapshot set stops the start with an error naming it and the fix
// that applies: `matchlog cluster invalidate-latest-snapshot`
// (recordinglog.Log.InvalidateLatestSnapshot, undone by
// revalidate-snapshot) only when an earlier set with its log can be used
// instead. Open never silently starts empty or from an older snapshot.
func Open(opts Options) (*Node, error) {
	opts.defaults()
	if opts.Service == nil {
		return nil, errors.New("cluster: Options.Service is nil")
	}
	if err := opts.FileSyncLevel.Check(); err != nil {
		// Before anything is created or written.
		return nil, fmt.Errorf("cluster: Options.FileSyncLevel: %w", err)
	}
	if err := logbuf.CheckTermLength(opts.TermLength); err != nil {
		return nil, err
	}
	if err := opts.checkSnapshotMTU(); err != nil {
		return nil, err
	}
	if err := opts.Retention.check(); err != nil {
		return nil, err
	}
	n := &Node{opts: opts, fs: opts.FS, svc: opts.Service, cm: newCMState(), firing: map[int64]bool{},
		pendingOpen: map[int64]bool{}, scratch: make([]byte, opts.MTU)}
	if p, ok := opts.Service.(PauselessService); ok {
		n.psvc = p
	}
	n.actionMode = opts.SnapshotMode
	n.cdir = n.fs.Join(opts.Dir, ClusterDirName)
	n.adir = n.fs.Join(opts.Dir, ArchiveDirName)
	t0 := time.Now()
	err := n.open()
	n.recovery.Total = time.Since(t0)
	if err != nil {
		if n.mark != nil {
			stampMarkFile(n.mark, -1) // this node does not run after all
		}
		n.closeFiles(true)
		if n.guard != nil {
			// A failed start leaves the directory as it found it.
			if rerr := errors.Join(n.restoreCuts(), n.guard.restore(n.fs)); rerr != nil {
				err = errors.Join(err, fmt.Errorf("%w: %w", ErrNotRestored, rerr))
			}
		}
		n.logOpenFailed(err)
		return nil, err
	}
	if n.guard != nil {
		n.keepRepairs()
		n.guard = nil
	}
	n.logOpen()
	return n, nil
}

// nowMs is the cluster time in ms of the last timestamp taken, for catalog
// and mark-file timestamps; safe on any goroutine (the snapshot writer's).
func (n *Node) nowMs() int64 { return n.lastMs.Load() }

type nodeHandle struct{ n *Node }

func (n *Node) handle() Cluster { return nodeHandle{n} }

func (h nodeHandle) LogPosition() int64      { return h.n.curPos }
func (h nodeHandle) Time() int64             { return h.n.curTime }
func (h nodeHandle) LeadershipTermID() int64 { return h.n.termID }
func (h nodeHandle) Role() Role              { return RoleLeader }
func (h nodeHandle) Idle() error {
	// Keep the archive and egress going during long work in a callback:
	// everything sequenced is committed while the service runs.
	n := h.n
	if n.replaying || n.rec == nil {
		return nil
	}
	if err := n.rec.record(n.pub.Position(), true); err != nil {
		return err
	}
	n.release()
	return nil
}
func (h nodeHandle) ScheduleTimer(id, deadline int64) error {
	h.n.cm.timers[id] = deadline
	delete(h.n.firing, id)
	return nil
}
func (h nodeHandle) CancelTimer(id int64) bool {
	_, ok := h.n.cm.timers[id]
	delete(h.n.cm.timers, id)
	delete(h.n.firing, id)
	return ok
}
func (h nodeHandle) Offer(sessionID int64, msg []byte) bool {
	n := h.n
	if n.cm.sessions[sessionID] == nil {
		return false
	}
	if n.replaying {
		return true
	}
	pos := n.curPos
	if n.refusing {
		// After everything appended so far (storage.go).
		pos = n.pub.Position()
	}
	off := len(n.arena)
	n.arena = append(n.arena, msg...)
	n.egress = append(n.egress, egressMsg{pos: pos, session: sessionID, off: off, n: len(msg)})
	return true
}

// Connect opens a session: the open event is sequenced into the log by a
// later DoWork. It returns the session id.
func (n *Node) Connect(responseChannel string, responseStreamID int32) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return 0, ErrClosed
	}
	id := n.nextSessionID
	n.nextSessionID++
	n.pendingOpen[id] = true
	n.in.items = append(n.in.items, ingress{kind: inOpen, session: id, channel: responseChannel, stream: responseStreamID})
	return id, nil
}

// Offer queues msg (copied) for sequencing on a session. A message of a
// session that is neither open nor being opened when its turn comes is
// dropped; one longer than a frame (MTU - 64 bytes) is refused.
func (n *Node) Offer(sessionID int64, msg []byte) error {
	if len(msg)+acs.MessageHeaderEncodedLength+acs.SessionMessageHeaderBlockLength > n.opts.MTU-logbuf.HeaderLength {
		return ErrTooLong
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	off := len(n.in.arena)
	n.in.arena = append(n.in.arena, msg...)
	n.in.items = append(n.in.items, ingress{kind: inMessage, session: sessionID, off: off, n: len(msg)})
	return nil
}

// CloseSession queues the close of a session at the client's request
// (CloseReason CLIENT_ACTION).
func (n *Node) CloseSession(sessionID int64) error {
	return n.CloseSessionReason(sessionID, acs.CloseReasonCLIENTACTION)
}

// CloseSessionReason queues the close of a session for a reason (TIMEOUT
// when its keepalives stopped, SERVICE_ACTION when the server closed it
// for a protocol error); the SessionCloseEvent in the log carries it.
func (n *Node) CloseSessionReason(sessionID int64, reason CloseReason) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	n.in.items = append(n.in.items, ingress{kind: inClose, session: sessionID, reason: reason})
	return nil
}

// RequestSnapshot asks for a snapshot at the next DoWork (ClusterTool
// snapshot).
func (n *Node) RequestSnapshot() { n.RequestSnapshotMode(n.opts.SnapshotMode) }

// RequestSnapshotMode asks for a snapshot at the next DoWork taken in the
// given mode (Pauseless falls back to StopTheWorld for a service that is
// not a PauselessService). Snapshots due by Options.SnapshotEveryBytes or
// SnapshotEvery use Options.SnapshotMode.
func (n *Node) RequestSnapshotMode(mode SnapshotMode) {
	n.mu.Lock()
	n.snapRequested = true
	n.reqMode = mode
	n.mu.Unlock()
}

// SnapshotInProgress reports whether a background snapshot is being
// written.
func (n *Node) SnapshotInProgress() bool { return n.job != nil }

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	s := n.stats
	if n.rec != nil {
		s.LogBlocks, s.LogSyncs = n.rec.blocks, n.rec.syncs
		s.DurableLog = n.rec.Position()
	}
	if n.pub != nil {
		s.LogPosition = n.pub.Position()
	}
	s.SnapshotPosition = -1
	if n.lastSnapPos > 0 {
		s.SnapshotPosition = n.lastSnapPos
	}
	if n.rec != nil {
		s.ArchiveStart = n.rec.desc.StartPosition
	}
	s.SnapshotInProgress = n.job != nil
	s.ArchiveFreeBytes = -1
	if n.storage.checked && !n.storage.off {
		s.ArchiveFreeBytes = n.storage.free
	}
	s.StorageFull = n.storage.full != nil
	return s
}

// LogPosition is the appended log position.
func (n *Node) LogPosition() int64 { return n.pub.Position() }

// LeadershipTermID is the current leadership term.
func (n *Node) LeadershipTermID() int64 { return n.termID }

// LogRecordingID is the archive recording holding the log.
func (n *Node) LogRecordingID() int64 { return n.recID }

func (n *Node) timestamp() int64 {
	t := n.opts.Clock()
	if t < n.lastTime {
		t = n.lastTime
	}
	n.lastTime = t
	n.lastMs.Store(t / 1e6)
	return t
}

// DoWork runs one duty cycle: complete a background snapshot, sequence
// ingress and due timers (and a due snapshot request), deliver the new log
// entries to the service, record them, and release egress that became
// durable. It returns the amount of work done; an error is permanent.
func (n *Node) DoWork() (int, error) {
	if n.failed != nil {
		return 0, n.failed
	}
	if n.closed {
		return 0, ErrClosed
	}
	t0 := time.Now()
	work, err := n.doWork()
	d := time.Since(t0)
	if d > n.stats.MaxDoWork {
		n.stats.MaxDoWork, n.stats.MaxDoWorkAt, n.stats.MaxDoWorkSplit = d, t0, n.split
	}
	if n.opts.DutyCycle != nil && work > 0 {
		n.opts.DutyCycle.Observe(d.Seconds())
	}
	if err != nil {
		n.fail(err)
		return work, err
	}
	return work, nil
}

func (n *Node) fail(err error) {
	if n.failed == nil {
		n.failed = err
		n.noteStorageError(err)
		n.logFailed(err)
	}
}

func (n *Node) doWork() (int, error) {
	n.split, n.lastRecord = DutyCycleSplit{}, 0
	t0 := time.Now()
	now := n.opts.EpochClock()
	if now-n.markMs >= MarkFileUpdateInterval.Milliseconds() || now < n.markMs {
		// One positional write, no sync: liveness, not durability.
		if err := stampMarkFile(n.mark, now); err != nil {
			return 0, fmt.Errorf("cluster: mark file: %w", err)
		}
		n.markMs = now
	}
	t1 := time.Now()
	n.split.MarkFile = t1.Sub(t0)
	before := n.stats.Snapshots + n.stats.Released + n.rec.blocks
	if err := n.pollSnapshot(false); err != nil {
		return 0, err
	}
	n.checkStorage(now)
	t2 := time.Now()
	n.split.Snapshot = t2.Sub(t1)
	work, err := n.sequence()
	if err != nil {
		return work, err
	}
	t3 := time.Now()
	n.split.Sequence = t3.Sub(t2)
	if err := n.step(true); err != nil {
		return work, err
	}
	work += n.refuseQueued()
	t4 := time.Now()
	n.split.Record = n.lastRecord
	n.split.Service = t4.Sub(t3) - n.lastRecord
	if err := n.pollSnapshot(false); err != nil {
		return work, err
	}
	t5 := time.Now()
	n.split.Snapshot += t5.Sub(t4)
	if n.ret != nil {
		work += n.retentionTick(n.opts.EpochClock())
		n.split.Retention = time.Since(t5)
		n.stats.MaxRetentionWork = max(n.stats.MaxRetentionWork, n.split.Retention)
	}
	// Work is what was sequenced, recorded, released or completed.
	return work + int(n.stats.Snapshots+n.stats.Released+n.rec.blocks-before), nil
}

// Pending is how many ingress messages wait to be sequenced plus how many
// egress messages wait for durability. A duty cycle may do no work while
// some are pending (the log is back-pressured while a pauseless snapshot
// holds the archive); the caller idles and calls DoWork again. Call it
// from the goroutine that runs DoWork.
func (n *Node) Pending() int {
	n.mu.Lock()
	in := len(n.in.items)
	n.mu.Unlock()
	return in + len(n.work.items) - n.workHead + len(n.egress)
}

// step delivers the log to the service, records it and releases egress.
func (n *Node) step(live bool) error {
	limit := n.pub.Position()
	for n.img.Position() < limit {
		var derr error
		cnt := n.img.Poll(func(buf []byte, offset, length int, hdr logbuf.Header) {
			if derr != nil {
				return
			}
			derr = n.dispatch(buf[offset:offset+length], hdr.Position())
			n.stats.Applied++
		}, 256)
		if derr != nil {
			return derr
		}
		if cnt == 0 {
			break
		}
	}
	t0 := time.Now()
	if err := n.rec.record(limit, true); err != nil {
		return err
	}
	d := time.Since(t0)
	n.lastRecord += d
	if d > n.stats.MaxLogRecord {
		n.stats.MaxLogRecord, n.stats.MaxLogRecordAt = d, t0
	}
	n.pub.SetPositionLimit(min(n.img.Position(), n.rec.Position()) + int64(n.log.TermWindowLength()))
	n.release()
	return nil
}

func (n *Node) release() {
	durable := n.rec.Position()
	i := 0
	for ; i < len(n.egress) && n.egress[i].pos <= durable; i++ {
		e := n.egress[i]
		if n.opts.Egress != nil {
			n.opts.Egress(e.session, n.arena[e.off:e.off+e.n])
		}
		n.stats.Released++
	}
	if i == 0 {
		return
	}
	if i == len(n.egress) {
		n.egress = n.egress[:0]
		n.arena = n.arena[:0]
		return
	}
	n.egress = append(n.egress[:0], n.egress[i:]...)
}

// offerLog appends one encoded entry to the log; false when back-pressured.
func (n *Node) offerLog(msg []byte) (bool, error) {
	pos, err := offerChecksummed(n.pub, msg)
	if err != nil {
		return false, err
	}
	if pos == logbuf.BackPressured {
		return false, nil
	}
	n.stats.Sequenced++
	return true, nil
}

// sequence appends ingress, due timers and a due snapshot request.
func (n *Node) sequence() (int, error) {
	n.mu.Lock()
	if n.workHead == len(n.work.items) {
		// The work queue is drained: take what was offered since.
		n.work.reset()
		n.work, n.in = n.in, n.work
		n.workHead = 0
	}
	snapReq, reqMode := n.snapRequested, n.reqMode
	n.mu.Unlock()
	batch := n.work.items[n.workHead:]
	if len(batch) > n.opts.MaxBatch {
		batch = batch[:n.opts.MaxBatch]
	}
	done := 0
	now := n.timestamp()
	var err error
	opened := false // an open among the items sequenced
	for i := range batch {
		it := &batch[i]
		ok := true
		switch it.kind {
		case inOpen:
			ok, err = n.offerLog(n.encodeOpen(it, now))
			opened = opened || ok
		case inMessage:
			if n.storage.full != nil {
				// Refused after the step (storage.go), or left queued.
				ok = false
				break
			}
			if n.cm.sessions[it.session] != nil || n.pendingOpenLocked(it.session) {
				ok, err = n.offerLog(n.encodeMessage(it.session, now, n.work.arena[it.off:it.off+it.n]))
			}
		case inClose:
			if n.cm.sessions[it.session] != nil || n.pendingOpenLocked(it.session) {
				ok, err = n.offerLog(n.encodeClose(it.session, now, it.reason))
			}
		}
		if err != nil {
			return done, err
		}
		if !ok {
			break
		}
		done++
	}
	if opened {
		n.mu.Lock()
		for i := 0; i < done; i++ {
			if batch[i].kind == inOpen {
				delete(n.pendingOpen, batch[i].session)
			}
		}
		n.mu.Unlock()
	}
	n.workHead += done
	if done < len(batch) {
		return done, nil
	}
	// Timers due, by deadline then correlation id.
	n.due = n.due[:0]
	for id, deadline := range n.cm.timers {
		if deadline <= now && !n.firing[id] {
			n.due = append(n.due, [2]int64{deadline, id})
		}
	}
	slices.SortFunc(n.due, func(a, b [2]int64) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	for _, t := range n.due {
		ok, err := n.offerLog(n.encodeTimer(t[1], now))
		if err != nil {
			return done, err
		}
		if !ok {
			return done, nil
		}
		n.firing[t[1]] = true
		done++
	}
	// Snapshot due.
	if n.job == nil && (snapReq || n.snapshotDue(now)) {
		ok, err := n.offerLog(n.encodeAction(now))
		if err != nil {
			return done, err
		}
		if ok {
			n.actionMode = n.opts.SnapshotMode
			if snapReq {
				n.actionMode = reqMode
			}
			n.mu.Lock()
			n.snapRequested = false
			n.mu.Unlock()
			done++
		}
	}
	return done, nil
}

func (n *Node) pendingOpenLocked(id int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pendingOpen[id]
}

func (n *Node) snapshotDue(now int64) bool {
	pos := n.pub.Position()
	if n.opts.SnapshotEveryBytes > 0 && pos-n.lastSnapPos >= n.opts.SnapshotEveryBytes {
		return true
	}
	if n.opts.SnapshotEvery > 0 && now-n.lastSnapTime >= int64(n.opts.SnapshotEvery) {
		if n.lastSnapTime == 0 && n.lastSnapPos == 0 {
			n.lastSnapTime = now
			return false
		}
		return true
	}
	return false
}

// Run calls DoWork until ctx is done, sleeping idle when there was no
// work. On return (ctx done or an error) it waits for a background snapshot
// to finish, at most stopTimeout.
func (n *Node) Run(ctx context.Context, idle, stopTimeout time.Duration) error {
	for ctx.Err() == nil {
		w, err := n.DoWork()
		if err != nil {
			return err
		}
		if w == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(idle):
			}
		}
	}
	return n.AwaitSnapshot(stopTimeout)
}

// AwaitSnapshot waits (at most timeout) for a background snapshot to
// complete and records it in recording.log.
func (n *Node) AwaitSnapshot(timeout time.Duration) error {
	if n.job == nil {
		return n.failed
	}
	select {
	case <-n.job.done:
	case <-time.After(timeout):
		return errors.New("cluster: snapshot still in progress")
	}
	if err := n.pollSnapshot(true); err != nil {
		n.fail(err)
		return err
	}
	return n.failed
}

// Close waits for a background snapshot, stops the log recording, calls
// the service's OnTerminate and closes every file. Egress not yet durable
// is dropped.
func (n *Node) Close() error {
	if n.closed {
		return nil
	}
	var err error
	if n.job != nil {
		<-n.job.done
		if n.failed == nil {
			err = n.pollSnapshot(true)
		}
	}
	if n.failed == nil && err == nil && n.rec != nil {
		err = n.rec.stop(n.pub.Position())
		if err == nil {
			err = n.svc.OnTerminate(n.handle())
		}
	}
	if n.mark != nil {
		// The node no longer runs, even after a failure: the next Open
		// must not take it as live.
		err = errors.Join(err, stampMarkFile(n.mark, -1))
	}
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	err = errors.Join(err, n.closeFiles(n.failed != nil || err != nil))
	n.logClose(err)
	return err
}

// closeFiles closes recording.log, the mark file and, unless abandon, the
// archive. After a storage failure the archive is abandoned as a crash
// would leave it: closing it would stop the log recording and settle its
// stop position from files whose last writes may never have been synced,
// so the next start settles it instead, from what is durable. (Its file
// handles are then released by the runtime, or when the process exits, as
// it should after a storage failure.)
func (n *Node) closeFiles(abandon bool) error {
	var err error
	if n.rlog != nil {
		err = errors.Join(err, n.rlog.Close())
		n.rlog = nil
	}
	if n.arc != nil && !abandon {
		err = errors.Join(err, n.arc.Close())
	}
	n.arc = nil
	if n.mark != nil {
		err = errors.Join(err, n.mark.Close())
		n.mark = nil
	}
	return err
}

// OpenSessions returns the ids of the sessions open in the log (in id
// order), as restored by Open from the snapshot and the replayed log.
// A server calls it after Open to close the sessions whose clients it
// no longer has (Aeron closes them by timeout). Call it from the
// goroutine that runs DoWork.
func (n *Node) OpenSessions() []int64 { return n.cm.sessionIDs() }
