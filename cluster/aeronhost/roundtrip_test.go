package aeronhost

import (
	"errors"
	"testing"

	"github.com/lirm/aeron-go/aeron"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/lirm/aeron-go/cluster/codecs"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/snapshot"
	"github.com/matchlog/matchlog/wire"
)

// commands generates n commands that have an enginesbe message.
func commands(t testing.TB, seed int64, n int) [][]byte {
	t.Helper()
	g := enginetest.NewGen(seed, enginetest.GenConfig{})
	out := make([][]byte, 0, n)
	var c engine.Command
	for len(out) < n {
		g.Next(&c)
		if c.Kind < engine.CmdDefineInstrument || c.Kind > engine.CmdMarkPrice {
			continue
		}
		b, err := wire.AppendCommand(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// runEngine starts an enginesvc in an adapter, opens a session and
// delivers msgs through the log.
func runEngine(t *testing.T, msgs [][]byte) (*Adapter, *enginesvc.Service, *fakeCluster, *fakeSession) {
	t.Helper()
	svc := enginesvc.New(enginesvc.Options{AppVersion: 1 << 16})
	a := New(svc, Options{AppVersion: 1 << 16})
	fc := newFakeCluster()
	fc.role = acluster.Leader
	a.OnStart(fc, nil)
	a.OnRoleChange(acluster.Leader)
	a.OnNewLeadershipTermEvent(2, 0, 0, 0, 0, 0, codecs.ClusterTimeUnit.NANOS, 1<<16)
	s := &fakeSession{id: 11, stream: 102, channel: "aeron:ipc"}
	a.OnSessionOpen(s, 100)
	lm := make([]logMessage, len(msgs))
	for i, m := range msgs {
		lm[i] = logMessage{session: 11, ts: int64(1000 + i), payload: m}
	}
	deliver(a, logImage(t, 0, lm), map[int64]acluster.ClientSession{11: s})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	return a, svc, fc, s
}

func TestEngineSnapshotRoundTrip(t *testing.T) {
	msgs := commands(t, 7, 3000)
	a, svc, fc, sess := runEngine(t, msgs)
	if len(sess.egress) == 0 {
		t.Fatal("no events offered to the session")
	}
	if svc.Skipped != 0 {
		t.Fatalf("%d messages skipped", svc.Skipped)
	}
	hash := svc.Engine().StateHash()

	fc.pos = 1 << 20
	pub := newFakePub()
	// Back-pressure and admin actions along the way: the service idles
	// and retries.
	pub.results = []int64{aeron.BackPressured, aeron.AdminAction, aeron.NotConnected}
	idles := fc.idler.n
	a.takeSnapshot(pub)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if fc.idler.n-idles < 3 {
		t.Fatalf("%d idles for 3 refusals", fc.idler.n-idles)
	}
	frames := pub.frames()
	if len(frames) < 4 {
		t.Fatalf("%d snapshot frames", len(frames))
	}

	// A fresh container restores it: the replay image after the
	// container's section, with a few empty polls as a live replay has.
	svc2 := enginesvc.New(enginesvc.Options{AppVersion: 1 << 16})
	b := New(svc2, Options{AppVersion: 1 << 16})
	fc2 := newFakeCluster()
	fc2.pos = fc.pos
	img := newFakeImage(256, frames)
	img.emptyPolls = 3
	b.OnStart(fc2, img)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if got := svc2.Engine().StateHash(); got != hash {
		t.Fatalf("restored hash %016x, want %016x", got, hash)
	}
	if b.h.LeadershipTermID() != 2 {
		t.Fatalf("leadership term after restore %d, want the snapshot's 2", b.h.LeadershipTermID())
	}
	if fc2.idler.n < 3 {
		t.Fatalf("%d idles for 3 empty polls", fc2.idler.n)
	}

	// Both go on the same way.
	more := commands(t, 8, 500)
	for _, x := range []*Adapter{a, b} {
		lm := make([]logMessage, len(more))
		for i, m := range more {
			lm[i] = logMessage{session: 11, ts: int64(90000 + i), payload: m}
		}
		s := &fakeSession{id: 11}
		x.OnSessionOpen(s, 1)
		deliver(x, logImage(t, 0, lm), map[int64]acluster.ClientSession{11: s})
		if err := x.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if svc.Engine().StateHash() != svc2.Engine().StateHash() {
		t.Fatal("restored engine diverges from the original")
	}
}

func TestEngineSnapshotDamage(t *testing.T) {
	a, _, fc, _ := runEngine(t, commands(t, 9, 500))
	fc.pos = 4096
	pub := newFakePub()
	a.takeSnapshot(pub)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	frames := pub.frames()

	restore := func(frames [][]byte, pos int64) error {
		b := New(enginesvc.New(enginesvc.Options{AppVersion: 1 << 16}), Options{AppVersion: 1 << 16, SnapshotImageTimeout: 1})
		fc := newFakeCluster()
		fc.pos = pos
		b.OnStart(fc, newFakeImage(0, frames))
		return b.Err()
	}
	if err := restore(frames, 4096); err != nil {
		t.Fatal(err)
	}
	if err := restore(frames[:len(frames)-1], 4096); err == nil {
		t.Fatal("snapshot without END restored")
	}
	if err := restore(frames, 8192); err == nil {
		t.Fatal("snapshot at another log position restored")
	}
	bad := append([][]byte(nil), frames...)
	bad[len(bad)/2] = append([]byte(nil), bad[len(bad)/2]...)
	bad[len(bad)/2][len(bad[len(bad)/2])-1] ^= 0xff
	if err := restore(bad, 4096); err == nil {
		t.Fatal("damaged snapshot restored")
	}

	// A snapshot the publication refuses is an error, recorded.
	pub = newFakePub()
	pub.results = []int64{aeron.PublicationClosed}
	a.takeSnapshot(pub)
	if err := a.Err(); !errors.Is(err, snapshot.ErrPublish) {
		t.Fatalf("Err() = %v", err)
	}
}
