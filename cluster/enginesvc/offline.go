package enginesvc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/snapshotsbe"
	"github.com/matchlog/matchlog/snapshot"
)

// EngineSnapshot summarises the engine snapshot in a node's service
// snapshot: where it was taken, and its End record's counts and state hash.
type EngineSnapshot struct {
	LogPosition      int64
	LeadershipTermID int64
	AppVersion       int32
	StateHash        uint64
	// Sources with a high-water mark, instruments, resting orders, armed
	// stop orders.
	Sources, Instruments, Orders, Triggers uint64
	// Verified: the snapshot was loaded strictly (snapshot.Load) and the
	// rebuilt engine's state hash equals End's.
	Verified bool
}

// ErrNotEngineSnapshot marks a service snapshot that holds no matchlog
// engine snapshot (an Aeron service's, for one).
var ErrNotEngineSnapshot = errors.New("the service snapshot holds no matchlog engine snapshot")

// endWatch passes a service snapshot's user data through, checks that it
// is an engine snapshot (SnapshotMarker BEGIN of type 2, then
// MeSnapshotBegin) and keeps End's fields.
type endWatch struct {
	src  stream.FragmentSource
	n    int
	bad  bool
	seen bool
	end  EngineSnapshot
}

func (w *endWatch) Poll(h stream.FragmentHandler, limit int) int {
	return w.src.Poll(func(buf []byte, off, n int, pos int64) {
		b := buf[off : off+n]
		le := binary.LittleEndian
		var template, schema uint16
		if len(b) >= 8 {
			template, schema = le.Uint16(b[2:]), le.Uint16(b[4:])
		}
		switch w.n {
		case 0:
			if schema != 111 || template != 100 || len(b) < 8+40 || int64(le.Uint64(b[8:])) != snapshot.ServiceSnapshotTypeID || le.Uint32(b[8+28:]) != 0 {
				w.bad = true
			}
		case 1:
			if schema != snapshotsbe.SchemaID || template != snapshotsbe.MeSnapshotBeginTemplateID {
				w.bad = true
			}
		}
		w.n++
		if schema == snapshotsbe.SchemaID && template == snapshotsbe.EndTemplateID {
			var d snapshotsbe.EndDecoder
			if d.WrapWithHeader(b, 0) == nil {
				w.seen = true
				w.end.StateHash = d.StateHash()
				w.end.Sources, w.end.Instruments, w.end.Orders, w.end.Triggers = d.Sources(), d.Instruments(), d.Orders(), d.Triggers()
			}
		}
		if h != nil {
			h(buf, off, n, pos)
		}
	}, limit)
}

// ReadSnapshot reads the engine snapshot in the service snapshot of a
// stopped node directory at logPosition (the latest if < 0). With verify
// it loads it strictly and checks the rebuilt engine's hash against End's;
// without, it reads End only. A service snapshot that is not an engine
// snapshot is ErrNotEngineSnapshot.
func ReadSnapshot(fsys vfs.FS, dir string, logPosition int64, verify bool) (*EngineSnapshot, error) {
	img, info, closeImg, err := cluster.ServiceSnapshot(fsys, dir, logPosition)
	if err != nil {
		return nil, err
	}
	defer closeImg()
	w := &endWatch{src: img}
	if verify {
		eng, _, lerr := snapshot.Load(w, snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: info.AppVersion})
		if w.bad {
			return nil, ErrNotEngineSnapshot
		}
		if lerr != nil {
			return nil, lerr
		}
		if h := eng.StateHash(); !w.seen || h != w.end.StateHash {
			return nil, fmt.Errorf("engine snapshot at log position %d: loaded state hash %016x, End says %016x", info.LogPosition, h, w.end.StateHash)
		}
		w.end.Verified = true
	} else {
		for !w.bad && w.Poll(nil, 64) > 0 {
		}
		if w.bad || !w.seen {
			return nil, ErrNotEngineSnapshot
		}
	}
	e := w.end
	e.LogPosition, e.LeadershipTermID, e.AppVersion = info.LogPosition, info.LeadershipTermID, info.AppVersion
	return &e, nil
}

// StoppedSnapshot is what SnapshotStopped did.
type StoppedSnapshot struct {
	// LogPosition and LeadershipTermID of the new snapshot set: the end of
	// the log, in the term the node started.
	LogPosition, LeadershipTermID int64
	// RecordingIDs of the set: the consensus module's, then service 0's.
	RecordingIDs []int64
	// Replayed is the number of log entries the start replayed.
	Replayed int64
	// StateHash is the node's engine state hash when it took the snapshot.
	StateHash uint64
	// Added are the SNAPSHOT entries added to recording.log.
	Added []recordinglog.Entry
	// Engine is the new engine snapshot, read back strictly.
	Engine *EngineSnapshot
}

// SnapshotStopped takes one snapshot of the stopped node directory
// opts.Dir, running the matching engine (New(svcOpts)) as its service
// (opts.Service is replaced): it opens the node, which replays the log
// from the latest snapshot, snapshots at the end of the log, and closes it,
// all through cluster.RunStopped, so that it completes or leaves the
// directory as it was. Before anything is kept, the new set must be in
// recording.log and its engine snapshot must load strictly with the node's
// state hash. timeout bounds the snapshot (cluster.TakeSnapshot).
//
// SnapshotStopped refuses what cluster.Open refuses (a live node, a
// directory another program wrote); checks that need words for a
// command-line user (whose directory it is, how to stop a node) are the
// caller's.
func SnapshotStopped(opts cluster.Options, svcOpts Options, timeout time.Duration) (*StoppedSnapshot, error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	entries := func() ([]recordinglog.Entry, error) {
		l, err := recordinglog.Open(fsys, fsys.Join(opts.Dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true, SyncLevel: 1})
		if err != nil {
			return nil, err
		}
		defer l.Close()
		return l.Entries(), nil
	}
	before, err := entries()
	if err != nil {
		return nil, err
	}
	svc := New(svcOpts)
	opts.Service = svc
	res := &StoppedSnapshot{}
	err = cluster.RunStopped(opts, func(n *cluster.Node) error {
		res.Replayed = n.Stats().Replayed
		err := cluster.TakeSnapshot(n, timeout)
		res.LeadershipTermID = n.LeadershipTermID()
		res.StateHash = svc.Engine().StateHash()
		return err
	}, func() error {
		after, err := entries()
		if err != nil {
			return err
		}
		old := map[recordinglog.Entry]bool{}
		for _, e := range before {
			old[e] = true
		}
		res.LogPosition = -1
		for _, e := range after {
			if e.Type == recordinglog.TypeSnapshot && !old[e] {
				res.Added = append(res.Added, e)
				if e.Valid && e.ServiceID == recordinglog.ConsensusModuleServiceID {
					res.LogPosition, res.LeadershipTermID = e.LogPosition, e.LeadershipTermID
				}
			}
		}
		// Consensus module first, then service 0, as a recovery plan lists them.
		for i := len(res.Added) - 1; i >= 0; i-- {
			if e := res.Added[i]; e.Valid && e.LogPosition == res.LogPosition {
				res.RecordingIDs = append(res.RecordingIDs, e.RecordingID)
			}
		}
		if len(res.RecordingIDs) < 2 {
			return fmt.Errorf("the snapshot at log position %d is not in recording.log: %s", res.LogPosition, recordinglog.Format(after))
		}
		// Read the engine snapshot back, strictly, as the next start will.
		es, err := ReadSnapshot(fsys, opts.Dir, res.LogPosition, true)
		if err != nil {
			return fmt.Errorf("the new snapshot does not load: %w", err)
		}
		if es.StateHash != res.StateHash {
			return fmt.Errorf("the new snapshot's state hash %016x differs from the node's %016x", es.StateHash, res.StateHash)
		}
		res.Engine = es
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
