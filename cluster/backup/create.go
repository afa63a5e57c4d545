package backup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Options configure Create.
type Options struct {
	// FS is the file system (vfs.Default if nil).
	FS vfs.FS
	// From is the source node directory (cluster/, archive/); To the
	// backup directory, which must be new or empty.
	From, To string
	// Scratch is where the image is restored to be verified (new; removed
	// afterwards). Default: To + ".verify" beside To.
	Scratch string
	// Now is the clock of the manifest and the liveness check (time.Now
	// if nil).
	Now func() time.Time
	// beforeVerify, in tests, runs on the written image before it is
	// verified.
	beforeVerify func(m *Manifest) error
}

func (o *Options) defaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Scratch == "" {
		o.Scratch = filepath.Join(filepath.Dir(filepath.Clean(o.To)), "."+filepath.Base(filepath.Clean(o.To))+".verify")
	}
}

// liveTimeout is how recent a mark file's activity must be for a running
// source (as the archive tools).
const liveTimeout = 10 * time.Second

// ErrVerify wraps the failure of an image to verify.
var ErrVerify = errors.New("backup: the image does not verify")

// Create writes a verified backup image of the node directory opts.From
// into opts.To and returns its manifest; see the package doc. On failure
// nothing that could pass for an image is left: what it wrote into To is
// removed (To too, when Create made it), and no manifest is written.
func Create(opts Options) (*Manifest, error) {
	opts.defaults()
	fsys := opts.FS
	created, err := emptyOrNew(fsys, opts.To, "backup directory")
	if err != nil {
		return nil, err
	}
	if _, err := emptyOrNew(fsys, opts.Scratch, "verification directory"); err != nil {
		return nil, err
	}
	src, err := readSource(fsys, opts.From, opts.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	if err := fsys.MkdirAll(opts.To); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	m, err := create(opts, src)
	if err != nil {
		var rerr error
		if created {
			rerr = removeTree(fsys, opts.To)
		} else {
			rerr = clearDir(fsys, opts.To)
		}
		if rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("backup: %s could not be emptied, remove it by hand (it has no manifest: no tool takes it for a backup): %w", opts.To, rerr))
		}
		what := "emptied"
		if created {
			what = "removed"
		}
		return nil, fmt.Errorf("%w (no image was kept: %s was %s, no manifest written)", err, opts.To, what)
	}
	return m, nil
}

// source is what Create read of the source node.
type source struct {
	running      bool
	entries      []recordinglog.Entry
	plan         *recordinglog.RecoveryPlan
	log          archive.RecordingDescriptor
	snaps        []archive.RecordingDescriptor // the consensus module's, then service 0's
	S, B, termID int64
}

// readSource reads the source's recording log and catalog (read-only),
// picks the latest snapshot set and fixes B, the end of the log's whole
// frames now.
func readSource(fsys vfs.FS, dir string, nowMs int64) (*source, error) {
	s := &source{}
	if err := cluster.CheckLive(fsys, dir, nowMs, liveTimeout); err != nil {
		if !errors.Is(err, cluster.ErrNodeRunning) && !errors.Is(err, archive.ErrArchiveActive) {
			return nil, fmt.Errorf("backup: source %s: %w", dir, err)
		}
		s.running = true
	}
	cdir, adir := fsys.Join(dir, cluster.ClusterDirName), fsys.Join(dir, cluster.ArchiveDirName)
	if mf, err := cluster.ReadMarkFile(fsys, cdir); err == nil && !mf.IsMatchlog() {
		return nil, fmt.Errorf("backup: source %s: its %s was written by another program (service name %q), not a matchlog node: an image is started as a matchlog node, so only a matchlog node's directory is backed up; nothing was written",
			dir, cluster.MarkFileName, mf.ServiceName)
	}
	rl, err := recordinglog.Open(fsys, cdir, recordinglog.Options{ReadOnly: true, Repair: true})
	if err != nil {
		return nil, fmt.Errorf("backup: source %s: %w", dir, err)
	}
	defer rl.Close()
	cat, err := archive.OpenCatalogFile(fsys, adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("backup: source %s: %w", dir, err)
	}
	defer cat.Close()
	s.entries = rl.Entries()
	plan, err := rl.CreateRecoveryPlan(cat, 1)
	if err != nil {
		return nil, fmt.Errorf("backup: source %s: recovery plan: %w", dir, err)
	}
	s.plan = plan
	switch {
	case len(plan.Problems) > 0:
		return nil, fmt.Errorf("backup: source %s: the latest snapshot set cannot be used (%v): see `matchlog retention verdict`", dir, plan.Problems)
	case len(plan.Snapshots) < 2:
		return nil, fmt.Errorf("backup: source %s holds no complete snapshot set: an image is a snapshot set and the log after it; take a snapshot first (`matchlog cluster snapshot --dir %s` on a stopped node)", dir, dir)
	case plan.Log == nil:
		return nil, fmt.Errorf("backup: source %s: recording.log has no TERM entry: no log to back up", dir)
	}
	s.S, s.termID = plan.Snapshots[0].LogPosition, plan.Snapshots[0].LeadershipTermID
	if s.log, err = cat.Descriptor(plan.Log.RecordingID); err != nil {
		return nil, fmt.Errorf("backup: source %s: %w", dir, err)
	}
	for _, sn := range plan.Snapshots[:2] {
		d, err := cat.Descriptor(sn.RecordingID)
		if err != nil {
			return nil, fmt.Errorf("backup: source %s: snapshot recording %d: %w", dir, sn.RecordingID, err)
		}
		if d.StopPosition == archive.NullPosition {
			return nil, fmt.Errorf("backup: source %s: snapshot recording %d has no stop position", dir, d.RecordingID)
		}
		s.snaps = append(s.snaps, d)
	}
	s.B = s.log.StopPosition
	if s.B == archive.NullPosition {
		// A recording still open (a running node): the end of its last
		// whole frame now.
		if s.B, _, err = archive.ComputeStopPosition(fsys, adir, s.log); err != nil {
			return nil, fmt.Errorf("backup: source %s: the end of log recording %d: %w", dir, s.log.RecordingID, err)
		}
	}
	if s.S < s.log.StartPosition || s.S > s.B {
		return nil, fmt.Errorf("backup: source %s: the snapshot at %d is outside the log [%d, %d]", dir, s.S, s.log.StartPosition, s.B)
	}
	return s, nil
}

func create(opts Options, src *source) (*Manifest, error) {
	fsys := opts.FS
	from := fsys.Join(opts.From, cluster.ArchiveDirName)
	cdir, adir := fsys.Join(opts.To, cluster.ClusterDirName), fsys.Join(opts.To, cluster.ArchiveDirName)
	for _, d := range []string{cdir, adir} {
		if err := fsys.MkdirAll(d); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	if err := fsys.SyncDir(opts.To); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	// The mark file first: a node writes it before recording.log.
	now := opts.Now()
	if err := cluster.CreateStoppedMarkFile(fsys, cdir, now.UnixMilli()); err != nil {
		return nil, err
	}
	logID, sum, err := copyRecording(fsys, from, src.log, src.S, src.B, fsys, adir)
	if err != nil {
		return nil, err
	}
	if src.running {
		// The log was read while a node wrote it: read it again. Bytes
		// caught mid-write differ between the reads.
		again, err := frameDigest(fsys, from, src.log, src.S, src.B)
		if err != nil {
			return nil, fmt.Errorf("backup: second read of the source's log: %w", err)
		}
		if !bytes.Equal(again, sum) {
			return nil, fmt.Errorf("backup: the source's log [%d, %d) changed between two reads: a writer was not done with it; run the backup again", src.S, src.B)
		}
	}
	sums := map[int64][]byte{logID: sum}
	var snapIDs []int64
	for _, d := range src.snaps {
		id, sum, err := copyRecording(fsys, from, d, d.StartPosition, d.StopPosition, fsys, adir)
		if err != nil {
			return nil, err
		}
		snapIDs = append(snapIDs, id)
		sums[id] = sum
	}
	if err := writeRecordingLog(fsys, cdir, src, logID, snapIDs); err != nil {
		return nil, err
	}
	m := &Manifest{Version: manifestVersion, Source: opts.From, SourceRunning: src.running,
		Created: now.UTC().Format(time.RFC3339), CreatedMs: now.UnixMilli(), S: src.S, B: src.B, LeadershipTermID: src.termID,
		SourceLogRecordingID: src.log.RecordingID, LogRecordingID: logID, SnapshotRecordingIDs: snapIDs,
		TermLength: src.log.TermBufferLength, SegmentLength: src.log.SegmentFileLength, MTU: src.log.MTULength}
	if opts.beforeVerify != nil {
		if err := opts.beforeVerify(m); err != nil {
			return nil, err
		}
	}
	if err := verify(opts, m, sums); err != nil {
		return nil, err
	}
	if err := writeManifest(fsys, opts.To, m); err != nil {
		return nil, err
	}
	return m, nil
}

// writeRecordingLog writes the image's recording.log: the TERM entries of
// the source's log recording that cover [S, B] (the last one starting at
// or before S and every later one starting by B), then the snapshot set,
// service 0's entry first and the consensus module's last, as a node
// appends them; each names its copy in the image.
func writeRecordingLog(fsys vfs.FS, cdir string, src *source, logID int64, snapIDs []int64) error {
	rl, err := recordinglog.Create(fsys, cdir, recordinglog.Options{SyncLevel: 1})
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	var terms []recordinglog.Entry
	for _, e := range src.entries {
		if e.Type == recordinglog.TypeTerm && e.Valid && e.RecordingID == src.log.RecordingID && e.TermBaseLogPosition <= src.B {
			if e.TermBaseLogPosition <= src.S {
				terms = terms[:0]
			}
			terms = append(terms, e)
		}
	}
	err = func() error {
		if len(terms) == 0 {
			return fmt.Errorf("backup: recording.log has no TERM entry of log recording %d at or before S = %d", src.log.RecordingID, src.S)
		}
		for _, e := range terms {
			if err := rl.AppendTerm(logID, e.LeadershipTermID, e.TermBaseLogPosition, e.Timestamp); err != nil {
				return err
			}
		}
		if last := terms[len(terms)-1]; last.LogPosition != recordinglog.NullValue && last.LogPosition <= src.B {
			if err := rl.CommitLogPosition(last.LeadershipTermID, last.LogPosition); err != nil {
				return err
			}
		}
		for _, i := range []int{1, 0} {
			sn := src.plan.Snapshots[i]
			if err := rl.AppendSnapshot(snapIDs[i], sn.LeadershipTermID, sn.TermBaseLogPosition, sn.LogPosition, sn.Timestamp, sn.ServiceID); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := rl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("backup: recording.log of the image: %w", err)
	}
	return nil
}

// verify reads every recording of the image back and checks its frames
// against the digest of what was read from the source (sums, by image
// recording id), then restores the image to a scratch directory, starts a
// node from it and fills m's state hashes, files and bytes; the scratch
// directory is removed.
func verify(opts Options, m *Manifest, sums map[int64][]byte) (err error) {
	fsys := opts.FS
	defer func() {
		if rerr := removeTree(fsys, opts.Scratch); rerr != nil {
			err = errors.Join(err, fmt.Errorf("backup: remove the verification directory %s: %w", opts.Scratch, rerr))
		}
	}()
	adir := fsys.Join(opts.To, cluster.ArchiveDirName)
	cat, err := archive.OpenCatalogFile(fsys, adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	defer cat.Close()
	for _, id := range append([]int64{m.LogRecordingID}, m.SnapshotRecordingIDs...) {
		d, err := cat.Descriptor(id)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrVerify, err)
		}
		got, err := frameDigest(fsys, adir, d, d.StartPosition, d.StopPosition)
		if err != nil {
			return fmt.Errorf("%w: recording %d of the image does not read back: %w", ErrVerify, id, err)
		}
		if !bytes.Equal(got, sums[id]) {
			return fmt.Errorf("%w: recording %d of the image [%d, %d) reads back different frames from those read in the source", ErrVerify, id, d.StartPosition, d.StopPosition)
		}
	}
	es, err := enginesvc.ReadSnapshot(fsys, opts.To, m.S, true)
	if err != nil {
		return fmt.Errorf("%w: the snapshot at %d does not load strictly: %w", ErrVerify, m.S, err)
	}
	files, total, _, err := copyTree(fsys, opts.To, opts.Scratch, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	m.AppVersion = es.AppVersion
	st, err := start(fsys, opts.Scratch, m)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrVerify, err)
	}
	m.SnapshotStateHash = fmt.Sprintf("%016x", es.StateHash)
	m.StateHash = fmt.Sprintf("%016x", st.hash)
	m.ReplayedEntries = st.recovery.ReplayedEntries
	m.Files, m.Bytes = files, total
	m.Verified = true
	return nil
}

// started is what a node started from an image found.
type started struct {
	hash     uint64
	recovery cluster.Recovery
	took     time.Duration
}

// start opens a node on the restored image dir (a strict snapshot load and
// the replay of the log to its end), checks that it recovered the image's
// snapshot and replayed to B, takes the engine's state hash and closes it.
func start(fsys vfs.FS, dir string, m *Manifest) (*started, error) {
	appVersion := m.AppVersion
	svc := enginesvc.New(enginesvc.Options{AppVersion: appVersion})
	t0 := time.Now()
	n, err := cluster.Open(cluster.Options{FS: fsys, Dir: dir, Service: svc, TermLength: int(m.TermLength), MTU: int(m.MTU),
		SegmentLength: m.SegmentLength, FileSyncLevel: 1, AppVersion: appVersion})
	if err != nil {
		return nil, fmt.Errorf("the node does not start from the image: %w", err)
	}
	st := &started{hash: svc.Engine().StateHash(), recovery: n.Recovery(), took: time.Since(t0)}
	err = n.Close()
	if err != nil {
		return nil, fmt.Errorf("the node started from the image does not close: %w", err)
	}
	p := st.recovery.Plan
	switch {
	case p == nil || len(p.Snapshots) == 0 || p.Snapshots[0].LogPosition != m.S:
		return nil, fmt.Errorf("the node did not start from the image's snapshot at %d (plan: %v)", m.S, p)
	case p.ReplayFrom != m.S || p.ReplayTo != m.B:
		return nil, fmt.Errorf("the node replayed [%d, %d), not the image's log [%d, %d)", p.ReplayFrom, p.ReplayTo, m.S, m.B)
	}
	return st, nil
}

// clearDir removes everything in dir, keeping dir.
func clearDir(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		p := fsys.Join(dir, n)
		if _, err := fsys.Stat(p); err == nil {
			errs = append(errs, fsys.Remove(p))
		} else {
			errs = append(errs, removeTree(fsys, p))
		}
	}
	return errors.Join(errs...)
}
