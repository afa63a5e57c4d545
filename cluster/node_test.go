package cluster_test

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/snapshot"
)

// timerService is a small deterministic service: it hashes every message,
// schedules a timer per message (deadline = timestamp + delay, correlation
// id = the message's first 8 bytes), cancels the timer of a message whose
// second 8 bytes are non-zero, and hashes every timer event and session
// event. Its snapshot is one message: the hash and the counters.
type timerService struct {
	c        cluster.Cluster
	delay    int64
	hash     uint64
	msgs     int64
	timers   int64
	sessions int64
	egress   bool
}

func (s *timerService) mix(vals ...int64) {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], s.hash)
	h.Write(b[:])
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	s.hash = h.Sum64()
}

func (s *timerService) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	s.c = c
	if img == nil {
		return nil
	}
	got := false
	img.Poll(func(buf []byte, off, n int, _ int64) {
		if n == 32 {
			s.setState(buf[off : off+n])
			got = true
		}
	}, 1)
	if !got {
		return errors.New("timerService: no state in snapshot")
	}
	return nil
}

// setState reads the 32-byte state OnTakeSnapshot writes.
func (s *timerService) setState(b []byte) {
	s.hash = binary.LittleEndian.Uint64(b)
	s.msgs = int64(binary.LittleEndian.Uint64(b[8:]))
	s.timers = int64(binary.LittleEndian.Uint64(b[16:]))
	s.sessions = int64(binary.LittleEndian.Uint64(b[24:]))
}

func (s *timerService) OnSessionOpen(cs *cluster.ClientSession, ts int64) error {
	s.sessions++
	s.mix(1, cs.ID, ts)
	return nil
}

func (s *timerService) OnSessionClose(cs *cluster.ClientSession, ts int64, r cluster.CloseReason) error {
	s.mix(2, cs.ID, ts, int64(r))
	return nil
}

func (s *timerService) OnSessionMessage(cs *cluster.ClientSession, ts int64, msg []byte, pos int64) error {
	s.msgs++
	id := int64(binary.LittleEndian.Uint64(msg))
	s.mix(3, cs.ID, ts, pos, id)
	if binary.LittleEndian.Uint64(msg[8:]) != 0 {
		s.c.CancelTimer(int64(binary.LittleEndian.Uint64(msg[8:])))
	} else if err := s.c.ScheduleTimer(id, ts+s.delay); err != nil {
		return err
	}
	if s.egress {
		s.c.Offer(cs.ID, msg)
	}
	return nil
}

func (s *timerService) OnTimerEvent(id, ts int64) error {
	s.timers++
	s.mix(4, id, ts, s.c.LogPosition())
	return nil
}

func (s *timerService) OnTakeSnapshot(_ cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[:], s.hash)
	binary.LittleEndian.PutUint64(b[8:], uint64(s.msgs))
	binary.LittleEndian.PutUint64(b[16:], uint64(s.timers))
	binary.LittleEndian.PutUint64(b[24:], uint64(s.sessions))
	for {
		pos, err := pub.Offer(b[:])
		if err != nil || pos >= 0 {
			return err
		}
		if err := idle(); err != nil {
			return err
		}
	}
}

func (s *timerService) OnRoleChange(cluster.Role) error   { return nil }
func (s *timerService) OnTerminate(cluster.Cluster) error { return nil }

type fixture struct {
	t     *testing.T
	fs    vfs.FS
	clock int64
	svc   *timerService
	node  *cluster.Node
	opts  cluster.Options
	got   atomic.Int64
}

func newFixture(t *testing.T, fsys vfs.FS) *fixture {
	f := &fixture{t: t, fs: fsys}
	f.opts = cluster.Options{FS: fsys, Dir: "n", TermLength: 64 * 1024, SegmentLength: 128 * 1024, FileSyncLevel: 1}
	f.opts.Clock = func() int64 { f.clock += 1000; return f.clock }
	f.opts.Egress = func(int64, []byte) { f.got.Add(1) }
	return f
}

func (f *fixture) open() {
	f.t.Helper()
	f.svc = &timerService{delay: 20_000, egress: true}
	o := f.opts
	o.Service = f.svc
	n, err := cluster.Open(o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.node = n
}

func (f *fixture) work(cycles int) {
	f.t.Helper()
	for i := 0; i < cycles; i++ {
		if _, err := f.node.DoWork(); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) close() {
	f.t.Helper()
	if err := f.node.Close(); err != nil {
		f.t.Fatal(err)
	}
}

func msg(id, cancel uint64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, id)
	binary.LittleEndian.PutUint64(b[8:], cancel)
	return b
}

// TestTimersSessionsReplay drives sessions, messages and timers (fired,
// cancelled, pending across a snapshot and a restart) and checks that a
// restart from snapshot + replay reaches the service state of the live run,
// and that timers pending at the restart still fire.
func TestTimersSessionsReplay(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	f.open()
	a, _ := f.node.Connect("aeron:udp?endpoint=localhost:1", 102)
	b, _ := f.node.Connect("aeron:udp?endpoint=localhost:2", 103)
	for i := uint64(1); i <= 60; i++ {
		s := a
		if i%2 == 0 {
			s = b
		}
		var cancel uint64
		if i%7 == 0 {
			cancel = i - 1
		}
		if err := f.node.Offer(s, msg(i, cancel)); err != nil {
			t.Fatal(err)
		}
		f.work(2)
		if i == 30 {
			f.node.RequestSnapshot()
			f.work(1)
			if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.node.CloseSession(b); err != nil {
		t.Fatal(err)
	}
	f.work(3)
	live := *f.svc
	if live.timers == 0 || live.msgs != 60 || live.sessions != 2 {
		t.Fatalf("live run: %d timers, %d messages, %d sessions", live.timers, live.msgs, live.sessions)
	}
	if f.got.Load() == 0 {
		t.Fatal("no egress released")
	}
	f.close()

	f.open()
	if f.svc.hash != live.hash || f.svc.timers != live.timers || f.svc.msgs != live.msgs {
		t.Fatalf("restart: hash %x timers %d msgs %d, live %x %d %d", f.svc.hash, f.svc.timers, f.svc.msgs, live.hash, live.timers, live.msgs)
	}
	// Timers scheduled before the restart still fire.
	before := f.svc.timers
	f.work(200)
	if f.svc.timers == before {
		t.Fatal("no pending timer fired after the restart")
	}
	if err := f.node.Offer(b, msg(99, 0)); err != nil {
		t.Fatal(err)
	}
	f.work(3)
	if f.svc.msgs != live.msgs {
		t.Fatal("a message of a closed session was applied")
	}
	after := *f.svc
	f.close()
	f.open()
	if f.svc.hash != after.hash {
		t.Fatalf("second restart: hash %x, want %x", f.svc.hash, after.hash)
	}
	f.close()
}

// TestLogLikeAeron compares the log our node writes with the log recording
// of the real Aeron fixture: the same kinds of entries (cluster schema 111
// version 12, the same templates and block lengths), each one unfragmented
// frame of the log stream.
func TestLogLikeAeron(t *testing.T) {
	type kind struct{ template, blockLength, version uint16 }
	kinds := func(fsys vfs.FS, path string, seg archive.SegmentParams) map[kind]int {
		t.Helper()
		file, err := fsys.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		size, _ := file.Size()
		out := map[kind]int{}
		res, err := archive.ScanSegment(file, size, seg, func(fr archive.Frame) error {
			if fr.Header.Type != archive.FrameTypeData {
				return nil
			}
			if fr.Header.Flags != archive.FrameFlagsUnfragmented {
				t.Errorf("%s: fragmented frame at %d", path, fr.Offset)
			}
			h, err := acs.WrapMessageHeader(fr.Payload, 0)
			if err != nil || h.SchemaId() != acs.SchemaID {
				t.Errorf("%s: frame at %d is not of schema 111", path, fr.Offset)
				return nil
			}
			out[kind{h.TemplateId(), h.BlockLength(), h.Version()}]++
			return nil
		})
		if err != nil || res.Problem != nil {
			t.Fatalf("%s: scan: %v %v", path, err, res.Problem)
		}
		return out
	}
	fx := fixtures.AeronSingleNode(t) + "/archive/"
	aeron := kinds(vfs.Default, fx+"0-0.rec", archive.SegmentParams{TermLength: 65536, SegmentLength: 131072, StreamID: 100})
	for k, v := range kinds(vfs.Default, fx+"0-131072.rec", archive.SegmentParams{Base: 131072, TermLength: 65536, SegmentLength: 131072, StreamID: 100}) {
		aeron[k] += v
	}

	mem := vfs.NewMem()
	f := newFixture(t, mem)
	f.open()
	s, _ := f.node.Connect("aeron:udp?endpoint=localhost:1", 102)
	for i := uint64(1); i <= 20; i++ {
		f.node.Offer(s, msg(i, 0))
		f.work(1)
	}
	f.node.RequestSnapshot()
	f.work(1)
	f.node.CloseSession(s)
	f.work(100)
	f.close()
	ours := kinds(mem, "n/archive/0-0.rec", archive.SegmentParams{TermLength: 65536, SegmentLength: 131072, StreamID: cluster.LogStreamID})
	for k := range aeron {
		if ours[k] == 0 {
			t.Errorf("Aeron's log has entries %+v, ours has none (ours: %v)", k, ours)
		}
	}
	for k := range ours {
		if aeron[k] == 0 && k.template != acs.TimerEventTemplateID {
			t.Errorf("our log has entries %+v that Aeron's has not (Aeron's: %v)", k, aeron)
		}
	}
	t.Logf("Aeron %v, ours %v", aeron, ours)
}

// TestSnapshotFormatsLikeAeron checks the snapshot recordings' framing:
// the service snapshot starts with SnapshotMarker BEGIN of type 2 and ends
// its container part with END; the consensus-module snapshot holds BEGIN
// (type 1), ConsensusModule, ClusterSession, Timer, PendingMessageTracker,
// END.
func TestSnapshotFormatsLikeAeron(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	f.open()
	s, _ := f.node.Connect("aeron:udp?endpoint=localhost:1", 102)
	f.node.Offer(s, msg(1, 0))
	f.work(1)
	f.node.RequestSnapshot()
	f.work(1)
	if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	f.close()
	// Recordings: 0 log, 1 service snapshot, 2 consensus module snapshot.
	templates := func(id int64, stream int32) []uint16 {
		file, err := mem.Open("n/archive/" + archive.SegmentFileName(id, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		size, _ := file.Size()
		var out []uint16
		archive.ScanSegment(file, size, archive.SegmentParams{TermLength: 65536, SegmentLength: 131072, StreamID: stream},
			func(fr archive.Frame) error {
				if fr.Header.Type == archive.FrameTypeData {
					h, _ := acs.WrapMessageHeader(fr.Payload, 0)
					out = append(out, h.TemplateId())
				}
				return nil
			})
		return out
	}
	svc := templates(1, cluster.ServiceSnapshotStreamID)
	want := []uint16{acs.SnapshotMarkerTemplateID, acs.ClientSessionTemplateID, acs.SnapshotMarkerTemplateID}
	if len(svc) < 4 || svc[0] != want[0] || svc[1] != want[1] || svc[2] != want[2] {
		t.Fatalf("service snapshot templates %v, want %v then the service's data", svc, want)
	}
	cm := templates(2, cluster.ConsensusModuleSnapshotStreamID)
	wantCM := []uint16{acs.SnapshotMarkerTemplateID, acs.ConsensusModuleTemplateID, acs.ClusterSessionTemplateID,
		acs.TimerTemplateID, acs.PendingMessageTrackerTemplateID, acs.SnapshotMarkerTemplateID}
	if len(cm) != len(wantCM) {
		t.Fatalf("consensus-module snapshot templates %v, want %v", cm, wantCM)
	}
	for i := range cm {
		if cm[i] != wantCM[i] {
			t.Fatalf("consensus-module snapshot templates %v, want %v", cm, wantCM)
		}
	}
}

var _ = snapshot.ErrLoad
