package cluster

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// Snapshots
//
// A ClusterActionRequest(SNAPSHOT) in the log at position S (the position
// after its frame) makes the node snapshot the state as of S. The sequencer
// appends nothing after the request in the same duty cycle, so when the
// service reaches S the consensus-module state is exactly the state at S.
//
//  1. The consensus-module state is frozen (a small copy) and the service
//     either returns a SnapshotTask from PrepareSnapshot (pauseless) or
//     writes its snapshot in OnTakeSnapshot (stop the world).
//  2. Two new archive recordings are written, each from its own log buffer
//     (stream 106 for the service, 107 for the consensus module, starting
//     at position 0) and synced at least at level 1: the service's holds
//     SnapshotMarker BEGIN, a ClientSession per open session, END, then the
//     service's own data; the consensus module's holds BEGIN,
//     ConsensusModule, ClusterSession*, Timer*, PendingMessageTracker, END.
//     Pauseless, this runs on its own goroutine while the node goes on.
//  3. Back on the node's goroutine, once both recordings are stopped (their
//     stop positions in the catalog) and the log is durable up to S, the
//     SNAPSHOT entries are appended to recording.log: the service's, then
//     the consensus module's (-1), as Aeron does. A crash before that
//     leaves orphan recordings and no entry; recovery uses the previous set.

func (n *Node) startSnapshot(pos, ts int64) error {
	info := SnapshotInfo{LogPosition: pos, LeadershipTermID: n.termID, TimeUnit: acs.ClusterTimeUnitNANOS, AppVersion: n.opts.AppVersion}
	cm := n.cm.freeze()
	job := &snapshotJob{info: info, done: make(chan struct{}), started: time.Now(), ts: ts}
	job.svcRec, job.cmRec = -1, -1
	n.lastTime = max(n.lastTime, ts)
	job.pauseless = n.psvc != nil && n.actionMode == Pauseless
	n.actionMode = n.opts.SnapshotMode
	n.logSnapshotStart(job)
	if job.pauseless {
		task, err := n.psvc.PrepareSnapshot(info)
		if err != nil {
			return fmt.Errorf("cluster: prepare snapshot at %d: %w", pos, err)
		}
		n.job = job
		job.prepare = time.Since(job.started)
		go func() {
			defer close(job.done)
			if n.opts.SnapshotNice > 0 {
				// A thread of its own at a lower priority, so that the
				// OS scheduler takes the snapshot's core, not the duty
				// cycle's, when kernel threads (writeback) need one. The
				// thread ends with this goroutine (never unlocked).
				runtime.LockOSThread()
				job.niceErr = setThreadNice(n.opts.SnapshotNice)
			}
			job.svcRec, job.cmRec, job.bytes, job.archive, job.err = n.writeSnapshotSet(info, cm, true, task.Write)
			if job.err == nil {
				// At sync level 0 the log must be made durable up to
				// the snapshot's position before recording.log names
				// the snapshot: sync its segments here, off the duty
				// cycle (a whole segment of unsynced log may take tens
				// of ms), once the log is recorded that far.
				t0 := time.Now()
				job.err = n.rec.syncTo(pos)
				job.logSync = time.Since(t0)
			}
			job.duration = time.Since(job.started)
		}()
		return nil
	}
	n.job = job
	job.svcRec, job.cmRec, job.bytes, job.archive, job.err = n.writeSnapshotSet(info, cm, false, func(pub Publication, idle func() error) error {
		return n.svc.OnTakeSnapshot(info, pub, idle)
	})
	job.duration = time.Since(job.started)
	job.prepare = job.duration
	close(job.done)
	return nil
}

// pollSnapshot completes a finished snapshot job (waiting for it if wait).
func (n *Node) pollSnapshot(wait bool) error {
	job := n.job
	if job == nil {
		return nil
	}
	if wait {
		<-job.done
	} else {
		select {
		case <-job.done:
		default:
			return nil
		}
	}
	n.job = nil
	if job.err != nil {
		err := fmt.Errorf("cluster: snapshot at log position %d: %w", job.info.LogPosition, job.err)
		n.logSnapshotFailed(job, err)
		return err
	}
	pos := job.info.LogPosition
	t0 := time.Now()
	if n.rec.Position() < pos {
		if err := n.rec.record(n.pub.Position(), false); err != nil {
			return err
		}
	}
	if n.rec.DurablePosition() < pos {
		if err := n.rec.sync(); err != nil {
			return err
		}
	}
	job.logSync += time.Since(t0)
	term, ok := n.rlog.TermEntry(n.termID)
	if !ok {
		return fmt.Errorf("cluster: recording.log has no TERM entry for term %d", n.termID)
	}
	ts := job.ts
	if err := n.rlog.AppendSnapshot(job.svcRec, n.termID, term.TermBaseLogPosition, pos, ts, 0); err != nil {
		return fmt.Errorf("cluster: recording.log: %w", err)
	}
	if err := n.rlog.AppendSnapshot(job.cmRec, n.termID, term.TermBaseLogPosition, pos, ts, -1); err != nil {
		return fmt.Errorf("cluster: recording.log: %w", err)
	}
	if len(n.backups) > 0 {
		n.dropBackups()
	}
	n.stats.Snapshots++
	n.stats.SnapshotBytes += job.bytes
	n.stats.LastSnapshotWrite = job.duration
	n.stats.LastSnapshotPrepare = job.prepare
	n.stats.LastSnapshotArchive = job.archive
	n.stats.LastSnapshotNiceErr = job.niceErr
	n.stats.LastSnapshotLogSync = job.logSync
	n.stats.LastSnapshotBytes = job.bytes
	n.lastSnapPos = pos
	n.lastSnapTime = ts
	n.logSnapshotEnd(job)
	return nil
}

// writeSnapshotSet writes the service's and the consensus module's
// snapshot recordings. It touches only the archive (safe for concurrent
// use) and its arguments, so it may run on another goroutine.
func (n *Node) writeSnapshotSet(info SnapshotInfo, cm *frozenCM, pauseless bool, write func(Publication, func() error) error) (svcRec, cmRec, bytes int64, arc time.Duration, err error) {
	svcRec, b1, a1, err := n.writeSnapshot(ServiceSnapshotStreamID, n.snapshotTermLength(pauseless), n.snapshotMTU(pauseless), pauseless, func(pub Publication) error {
		if err := writeServiceSessions(pub, nil, info, cm.sessions); err != nil {
			return err
		}
		// The publication records what it holds whenever it is full, so
		// the service never needs to wait; idle only yields.
		return write(pub, func() error { runtime.Gosched(); return nil })
	})
	if err != nil {
		return svcRec, -1, 0, a1, err
	}
	cmRec, b2, a2, err := n.writeSnapshot(ConsensusModuleSnapshotStreamID, logbuf.MinTermLength, n.opts.MTU, pauseless, func(pub Publication) error {
		return writeCMSnapshot(pub, nil, info, cm)
	})
	return svcRec, cmRec, b1 + b2, a1 + a2, err
}

// writeSnapshot writes one snapshot recording and returns its id, length
// and the time spent in the archive (starting, writing, syncing and
// stopping the recording).
func (n *Node) writeSnapshot(stream int32, termLength, mtu int, pauseless bool, body func(Publication) error) (int64, int64, time.Duration, error) {
	log, err := n.snapLogs.get(termLength, mtu, stream)
	if err != nil {
		return -1, 0, 0, err
	}
	// The recording is stopped (or never started) before this returns;
	// nothing reads the log after it.
	defer n.snapLogs.put(log)
	t0 := time.Now()
	// The descriptor's original channel names the MTU when it is not the
	// IPC default, as Aeron's does for a snapshot channel with mtu set
	// (its stripped channel never has it).
	original := SnapshotChannel
	if mtu != logbuf.DefaultMTU {
		original = fmt.Sprintf("%s|mtu=%d", SnapshotChannel, mtu)
	}
	// Pauseless: spread the syncs (see StartRecording's syncEach).
	rec, err := n.arc.StartRecording(log, SnapshotChannel, original, true, pauseless)
	if err != nil {
		return -1, 0, 0, err
	}
	sp := &snapPub{log: log, pub: log.Publication(), rec: rec, archive: time.Since(t0)}
	if pauseless && n.opts.SnapshotYieldEvery > 0 {
		sp.yieldEvery = n.opts.SnapshotYieldEvery
	}
	sp.c.Pub = sp.pub
	sp.c.Checksum = archive.FrameChecksum
	err = body(sp)
	t1 := time.Now()
	if err == nil {
		err = rec.stop(sp.pub.Position())
	} else {
		rec.abandon()
	}
	sp.archive += time.Since(t1)
	return rec.ID(), rec.Position(), sp.archive, err
}

// snapLogs keeps the in-memory log of the last snapshot recording of each
// term length (the service's and the consensus module's) for the next
// snapshot to recycle (logbuf.Recycle). A snapshot's log is three terms
// of its term length, 48 MiB when the world stops at the default 16 MiB:
// a new one each time took that much fresh memory from the system, which
// on a machine with slow page faults cost more than the snapshot's
// encoding (docs/performance.md). Recycling clears what the last snapshot
// wrote instead; the price is that memory, held between snapshots.
// Snapshots run one at a time, but on the node's goroutine or on a
// pauseless snapshot's own, hence the lock.
type snapLogs struct {
	mu   sync.Mutex
	free []*logbuf.Log
	// recycled counts the logs recycled, prefaulted the new logs faulted
	// in ahead of their writers (for tests).
	recycled, prefaulted int
}

// get returns a log of termLength at position 0 for stream: the kept one
// of that length, recycled, or a new one.
func (s *snapLogs) get(termLength, mtu int, stream int32) (*logbuf.Log, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.free {
		if l.TermLength() == termLength {
			s.free = slices.Delete(s.free, i, i+1)
			s.recycled++
			return logbuf.Recycle(l, mtu, 0, stream, stream)
		}
	}
	l, err := logbuf.New(termLength, mtu, 0, stream, stream)
	if err != nil {
		return nil, err
	}
	if len(l.Bytes()) >= prefaultLogBytes {
		// The first snapshot of a term length writes fresh memory, a page
		// fault every 4 KiB, while the world may be stopped. In huge
		// pages faulted in ahead of the writer by another goroutine, the
		// writer meets few of them (docs/performance.md, "The first
		// snapshot's log, faulted in ahead"); the log is kept for the
		// snapshots after (put), so its memory is long-lived.
		l.Prefault()
		s.prefaulted++
	}
	return l, nil
}

// prefaultLogBytes is the smallest new snapshot log faulted in ahead of
// its writer: below a few huge pages there is little to gain.
const prefaultLogBytes = 8 << 20

// put keeps l, which nothing uses any more, for the next snapshot of its
// term length.
func (s *snapLogs) put(l *logbuf.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.free {
		if o.TermLength() == l.TermLength() {
			s.free[i] = l
			return
		}
	}
	s.free = append(s.free, l)
}

// snapPub is a snapshot recording's publication: claims and offers that
// find the publication back-pressured record what is committed (making
// room) and retry.
type snapPub struct {
	log *logbuf.Log
	pub *logbuf.ExclusivePublication
	c   stream.PublicationClaimer
	rec *nodeRecording
	// archive is the time spent recording (writing and syncing blocks).
	archive time.Duration
	// yieldEvery > 0: runtime.Gosched every yieldEvery claims (pauseless;
	// Options.SnapshotYieldEvery).
	yieldEvery, claims int
}

func (s *snapPub) flush() error {
	t0 := time.Now()
	err := s.rec.record(s.pub.Position(), false)
	s.archive += time.Since(t0)
	if err != nil {
		return err
	}
	s.pub.SetPositionLimit(s.rec.Position() + int64(s.log.TermWindowLength()))
	return nil
}

// maybeYield yields the processor every yieldEvery claims.
func (s *snapPub) maybeYield() {
	if s.yieldEvery > 0 {
		if s.claims++; s.claims >= s.yieldEvery {
			s.claims = 0
			runtime.Gosched()
		}
	}
}

// TryClaim implements Publication.
func (s *snapPub) TryClaim(length int) ([]byte, int64, error) {
	return s.tryClaim(length, s.c.TryClaim)
}

// TryClaimOverwrite implements stream.Overwriter.
func (s *snapPub) TryClaimOverwrite(length int) ([]byte, int64, error) {
	return s.tryClaim(length, s.c.TryClaimOverwrite)
}

func (s *snapPub) tryClaim(length int, claim func(int) ([]byte, int64, error)) ([]byte, int64, error) {
	s.maybeYield()
	for {
		b, pos, err := claim(length)
		if err != nil || pos != logbuf.BackPressured {
			return b, pos, err
		}
		if err := s.flush(); err != nil {
			return nil, 0, err
		}
	}
}

var (
	_ AheadPublication       = (*snapPub)(nil)
	_ stream.Overwriter      = (*snapPub)(nil)
	_ stream.AheadOverwriter = (*snapPub)(nil)
)

// ClaimAhead implements AheadPublication: on back-pressure it records what
// is committed and tries once more, then reports the back-pressure (the
// claims ahead still outstanding may be what holds the recording back).
func (s *snapPub) ClaimAhead(length int) ([]byte, int64, int, error) {
	return s.claimAhead(length, s.c.ClaimAhead)
}

// ClaimAheadOverwrite implements stream.AheadOverwriter.
func (s *snapPub) ClaimAheadOverwrite(length int) ([]byte, int64, int, error) {
	return s.claimAhead(length, s.c.ClaimAheadOverwrite)
}

func (s *snapPub) claimAhead(length int, claim func(int) ([]byte, int64, int, error)) ([]byte, int64, int, error) {
	s.maybeYield()
	for try := 0; ; try++ {
		b, pos, t, err := claim(length)
		if err != nil || pos != logbuf.BackPressured || try == 1 {
			return b, pos, t, err
		}
		if err := s.flush(); err != nil {
			return nil, 0, 0, err
		}
	}
}

// CommitAhead implements AheadPublication.
func (s *snapPub) CommitAhead(ticket int) { s.c.CommitAhead(ticket) }

// AbortAhead implements AheadPublication.
func (s *snapPub) AbortAhead(ticket int) { s.c.AbortAhead(ticket) }

// Window implements AheadPublication: the flush keeps the publication a
// term window ahead of the recording.
func (s *snapPub) Window() int { return s.log.TermWindowLength() }

// Commit implements Publication.
func (s *snapPub) Commit() { s.c.Commit() }

// Abort implements Publication.
func (s *snapPub) Abort() { s.c.Abort() }

// MaxPayloadLength implements Publication.
func (s *snapPub) MaxPayloadLength() int { return s.c.MaxPayloadLength() }

// Offer implements Publication.
func (s *snapPub) Offer(msg []byte) (int64, error) {
	for {
		pos, err := offerChecksummed(s.pub, msg)
		if err != nil || pos != logbuf.BackPressured {
			return pos, err
		}
		if err := s.flush(); err != nil {
			return 0, err
		}
	}
}

// offerChecksummed offers msg as one frame with archive.FrameChecksum in
// its reserved value.
func offerChecksummed(p *logbuf.ExclusivePublication, msg []byte) (int64, error) {
	c, pos, err := p.TryClaimOverwrite(len(msg))
	if err != nil || pos < 0 {
		return pos, err
	}
	copy(c.Buffer(), msg)
	c.SetReservedValue(archive.FrameChecksum(msg))
	c.Commit()
	return pos, nil
}
