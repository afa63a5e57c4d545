package aeronhost

import (
	"errors"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	"github.com/lirm/aeron-go/aeron/logbuffer/term"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/stream"
)

func TestPublicationResults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       int64
		wantPos int64
		wantErr bool
	}{
		{"back-pressured", aeron.BackPressured, stream.BackPressured, false},
		{"admin action", aeron.AdminAction, stream.AdminAction, false},
		{"not connected", aeron.NotConnected, stream.BackPressured, false},
		{"closed", aeron.PublicationClosed, aeron.PublicationClosed, true},
		{"max position", aeron.MaxPositionExceeded, aeron.MaxPositionExceeded, true},
		{"unknown", -9, -9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakePub()
			fp.results = []int64{tc.r}
			p := newSnapshotPublication(fp, 100, time.Hour)
			b, pos, err := p.TryClaim(10)
			if pos != tc.wantPos || (err != nil) != tc.wantErr || b != nil || p.claimed {
				t.Fatalf("TryClaim: %v %d %v, claimed %v", b, pos, err, p.claimed)
			}
			fp.results = []int64{tc.r}
			pos, err = p.Offer([]byte("x"))
			if pos != tc.wantPos || (err != nil) != tc.wantErr {
				t.Fatalf("Offer: %d %v", pos, err)
			}
		})
	}
}

func TestPublicationNotConnectedTimesOut(t *testing.T) {
	fp := newFakePub()
	p := newSnapshotPublication(fp, 100, time.Second)
	now := time.Unix(0, 0)
	p.now = func() time.Time { return now }
	for i := 0; i < 3; i++ {
		fp.results = []int64{aeron.NotConnected}
		if _, pos, err := p.TryClaim(4); err != nil || pos != stream.BackPressured {
			t.Fatalf("within the timeout: %d %v", pos, err)
		}
		now = now.Add(400 * time.Millisecond)
	}
	fp.results = []int64{aeron.NotConnected}
	if _, _, err := p.TryClaim(4); err == nil {
		t.Fatal("not connected for longer than the timeout is not an error")
	}
	// A success resets the clock.
	if _, _, err := p.TryClaim(4); err != nil {
		t.Fatal(err)
	}
	p.Commit()
	fp.results = []int64{aeron.NotConnected}
	if _, pos, err := p.TryClaim(4); err != nil || pos != stream.BackPressured {
		t.Fatalf("after a success: %d %v", pos, err)
	}
}

func TestPublicationClaims(t *testing.T) {
	fp := newFakePub()
	p := newSnapshotPublication(fp, 64, time.Second)
	if p.MaxPayloadLength() != 64 {
		t.Fatal(p.MaxPayloadLength())
	}
	if _, _, err := p.TryClaim(65); err == nil {
		t.Fatal("claim above the max payload accepted")
	}
	if _, err := p.Offer(make([]byte, 65)); err == nil {
		t.Fatal("offer above the max payload accepted")
	}
	b, pos, err := p.TryClaim(5)
	if err != nil || pos <= 0 || len(b) != 5 {
		t.Fatalf("%v %d %v", b, pos, err)
	}
	copy(b, "hello")
	if _, _, err := p.TryClaim(5); !errors.Is(err, ErrClaimOutstanding) {
		t.Fatalf("second claim: %v", err)
	}
	if _, err := p.Offer([]byte("x")); !errors.Is(err, ErrClaimOutstanding) {
		t.Fatalf("offer during a claim: %v", err)
	}
	p.Commit()
	b, _, _ = p.TryClaim(3)
	copy(b, "bad")
	p.Abort()
	if _, err := p.Offer([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Offer(nil); err != nil {
		t.Fatal(err)
	}
	got := fp.frames()
	if len(got) != 3 || string(got[0]) != "hello" || string(got[1]) != "world" || len(got[2]) != 0 {
		t.Fatalf("frames %q", got)
	}
	p.Commit() // nothing outstanding: no effect
	p.Abort()
}

func TestChannelMTU(t *testing.T) {
	for ch, want := range map[string]int{
		"aeron:ipc?alias=snapshot|mtu=8k": 8192,
		"aeron:ipc?mtu=4096":              4096,
		"aeron:ipc?alias=snapshot":        0,
		"aeron:ipc":                       0,
		"aeron:ipc?mtu=x":                 0,
		"aeron:ipc?mtu=1m":                0,
		"aeron:ipc?mtu=16":                0,
	} {
		got, ok := channelMTU(ch)
		if (want == 0) == ok || (ok && got != want) {
			t.Errorf("%s: %d %v", ch, got, ok)
		}
	}
	o := Options{}.withDefaults()
	if o.SnapshotMaxPayloadLength != DefaultMTU-DataFrameHeaderLength {
		t.Fatal(o.SnapshotMaxPayloadLength)
	}
}

// claimSvc claims in its snapshot and returns without committing.
type claimSvc struct{ recSvc }

func (c *claimSvc) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	if _, err := pub.Offer([]byte("kept")); err != nil {
		return err
	}
	b, _, err := pub.TryClaim(4)
	if err != nil {
		return err
	}
	copy(b, "lost")
	return nil
}

func TestSnapshotClaimLeftOutstanding(t *testing.T) {
	a := New(&claimSvc{}, Options{})
	a.OnStart(newFakeCluster(), nil)
	pub := newFakePub()
	a.takeSnapshot(pub)
	if a.Err() == nil {
		t.Fatal("snapshot returned with a claim outstanding accepted")
	}
	if got := pub.frames(); len(got) != 1 || string(got[0]) != "kept" {
		t.Fatalf("frames %q: the outstanding claim was not aborted", got)
	}
}

func TestSnapshotImageBadFragment(t *testing.T) {
	img := newFakeImage(0, [][]byte{[]byte("x")})
	src := newImageSource(&badImage{img}, func() error { return nil }, time.Second)
	n := src.Poll(func([]byte, int, int, int64) { t.Fatal("bad fragment handed on") }, 10)
	if n != 1 || src.err == nil {
		t.Fatalf("polled %d, err %v", n, src.err)
	}
	if src.Poll(func([]byte, int, int, int64) {}, 10) != 0 {
		t.Fatal("poll after a bad fragment")
	}
}

// badImage hands fragments with a length past their buffer.
type badImage struct{ *fakeImage }

func (b *badImage) Poll(h term.FragmentHandler, limit int) int {
	return b.fakeImage.Poll(func(buf *atomic.Buffer, off, n int32, hdr *logbuffer.Header) {
		h(buf, off, buf.Capacity(), hdr)
	}, limit)
}
