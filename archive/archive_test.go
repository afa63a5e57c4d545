package archive

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// fillTerm publishes messages of 4064 bytes (frames of 4096) so that terms
// fill exactly, with no padding; it records as it goes.
func fillTerms(t testing.TB, h *harness, r *Recording, terms int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	n := terms * h.log.TermLength() / 4096
	for i := 0; i < n; {
		if h.offer(rng, 4096-32) {
			i++
			continue
		}
		h.catchUp()
		if _, err := r.Record(h.pub.Position()); err != nil {
			t.Fatal(err)
		}
		h.limit()
	}
	h.catchUp()
	if _, err := r.Record(h.pub.Position()); err != nil {
		t.Fatal(err)
	}
	h.limit()
}

// TestStopOnSegmentBoundary: a recording stopped exactly on a segment
// boundary has the next, empty, full-length segment (Aeron's rule), Verify
// accepts it, and an extension continues in that file.
func TestStopOnSegmentBoundary(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fs, dir := fc.make(t)
			opts := Options{SegmentLength: 128 << 10, FileIoMaxLength: 64 << 10, FileSyncLevel: 1, CatalogSyncLevel: 1, MarkErrorBufferLength: 4096}
			a := openTest(t, fs, dir, opts)
			h := newHarness(t, 64<<10, 8192, 0, 1, 0)
			r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
			if err != nil {
				t.Fatal(err)
			}
			fillTerms(t, h, r, 4)
			if r.Position() != 256<<10 {
				t.Fatalf("position %d", r.Position())
			}
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			for _, base := range []int64{0, 128 << 10, 256 << 10} {
				size, err := fs.Stat(fs.Join(dir, SegmentFileName(r.ID(), base)))
				if err != nil || size != 128<<10 {
					t.Fatalf("segment %d: size %d, %v", base, size, err)
				}
			}
			verifyOK(t, fs, dir)
			checkSegmentLayout(t, fs, dir, a, r.ID())
			h2 := newHarness(t, 64<<10, 8192, 0, 2, 256<<10)
			r2, err := a.ExtendRecording(r.ID(), Source{Log: h2.log, Image: h2.img})
			if err != nil {
				t.Fatal(err)
			}
			fillTerms(t, h2, r2, 1)
			if err := r2.Stop(); err != nil {
				t.Fatal(err)
			}
			sameFrames(t, replayAll(t, a, r.ID(), 0, NullPosition), append(h.frames, h2.frames...))
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			verifyOK(t, fs, dir)
		})
	}
}

// TestReplayFollowsActiveRecording: a replay with no limit of an active
// recording delivers frames as they are recorded and ends after Stop.
func TestReplayFollowsActiveRecording(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	a := openTest(t, fs, dir, Options{SegmentLength: 64 << 10, FileIoMaxLength: 64 << 10, MarkErrorBufferLength: 4096})
	defer a.Close()
	h := newHarness(t, 64<<10, 1408, 5, 1, 0)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := a.StartReplay(r.ID(), 0, NullPosition)
	if err != nil {
		t.Fatal(err)
	}
	if infos := a.Replays(); len(infos) != 1 || infos[0].Limit != NullPosition {
		t.Fatalf("replays %+v", infos)
	}
	var got []published
	handler := func(pos int64, frame []byte) error {
		got = append(got, published{pos, append([]byte(nil), frame...)})
		return nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		h.run(rng, r, 50<<10)
		for {
			n, err := rp.Poll(handler)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && rp.Position() == r.Position() {
				break
			}
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Poll(handler); err == nil {
		if _, err := rp.Poll(handler); err == nil {
			t.Fatal("replay did not end after the recording stopped")
		}
	}
	sameFrames(t, got, h.frames)
	if err := rp.Close(); err != nil {
		t.Fatal(err)
	}
	if len(a.Replays()) != 0 {
		t.Fatal("replay still listed")
	}
}

// TestMarkFile: Open writes a ready mark file, refuses a directory with a
// live one, and Close leaves activity -1 so a reopen proceeds.
func TestMarkFile(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fs, dir := fc.make(t)
			clock := &testClock{ms: 1_000_000}
			opts := Options{Clock: clock.now, MarkErrorBufferLength: 4096}
			a := openTest(t, fs, dir, opts)
			m, err := ReadMarkFileIn(fs, dir)
			if err != nil || m.Version != SemanticVersion || !m.IsLive(clock.ms, 1000) {
				t.Fatalf("mark %+v, %v", m, err)
			}
			if _, err := Open(fs, dir, opts); !errors.Is(err, ErrArchiveActive) {
				t.Fatalf("second open: %v", err)
			}
			clock.ms += 5000
			if err := a.UpdateActivity(); err != nil {
				t.Fatal(err)
			}
			if m, _ := ReadMarkFileIn(fs, dir); m.ActivityTimestamp != clock.ms {
				t.Fatalf("activity %d, want %d", m.ActivityTimestamp, clock.ms)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if m, _ := ReadMarkFileIn(fs, dir); m.ActivityTimestamp != NullTimestamp {
				t.Fatalf("activity after close %d", m.ActivityTimestamp)
			}
			if err := a.UpdateActivity(); !errors.Is(err, ErrArchiveClosed) {
				t.Fatalf("update after close: %v", err)
			}
			// A stale mark file (no clean stop) is taken over after the timeout.
			a = openTest(t, fs, dir, opts)
			a.markMu.Lock()
			a.mark = nil // simulate a crash: the mark keeps its activity
			a.markMu.Unlock()
			a.Close()
			if _, err := Open(fs, dir, opts); !errors.Is(err, ErrArchiveActive) {
				t.Fatalf("open over a fresh crashed mark: %v", err)
			}
			clock.ms += DefaultMarkTimeout.Milliseconds() + 1
			a = openTest(t, fs, dir, opts)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestActivityTicker: the owned ticker refreshes the activity timestamp and
// Close stops it.
func TestActivityTicker(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	a := openTest(t, fs, dir, Options{ActivityInterval: time.Millisecond, MarkErrorBufferLength: 4096})
	m0, _ := ReadMarkFileIn(fs, dir)
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := ReadMarkFileIn(fs, dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.ActivityTimestamp > m0.ActivityTimestamp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ticker did not refresh the activity timestamp")
		}
		time.Sleep(time.Millisecond)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if m, _ := ReadMarkFileIn(fs, dir); m.ActivityTimestamp != NullTimestamp {
		t.Fatalf("activity after close %d", m.ActivityTimestamp)
	}
}

func TestOptionsValidation(t *testing.T) {
	fs := vfs.NewMem()
	for _, o := range []Options{
		{FileSyncLevel: 1, CatalogSyncLevel: 0},
		{FileSyncLevel: 2, CatalogSyncLevel: 1},
		{FileSyncLevel: 3, CatalogSyncLevel: 3},
		{SegmentLength: 100000},
		{SegmentLength: 32 << 10},
		{FileIoMaxLength: 3 << 20},
		{FileIoMaxLength: 32 << 10},
	} {
		if _, err := Open(fs, "x", o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

// TestRecorderDoesNotAllocate: the hot path (Poll of a block) does not
// allocate.
func TestRecorderDoesNotAllocate(t *testing.T) {
	fs, dir := fsCases[0].make(t)
	a := openTest(t, fs, dir, Options{SegmentLength: 64 << 20, FileIoMaxLength: 64 << 10, FileSyncLevel: 1, CatalogSyncLevel: 1, MarkErrorBufferLength: 4096})
	defer a.Close()
	h := newHarness(t, 1<<20, 8192, 0, 1, 0)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 8192-32)
	publish := func() {
		h.pub.SetPositionLimit(h.img.Position() + int64(h.log.TermWindowLength()))
		for range 8 {
			if pos, err := h.pub.Offer(payload); err != nil || pos < 0 {
				t.Fatalf("offer: %d %v", pos, err)
			}
		}
	}
	publish()
	r.Poll()
	allocs := testing.AllocsPerRun(200, func() {
		publish()
		n, err := r.Poll()
		if err != nil || n != 64<<10 {
			t.Fatalf("poll %d %v", n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per block", allocs)
	}
}

// TestRecordConcurrentPublisher records while another goroutine publishes
// (the race detector checks the recorder's reads of the terms) and replays
// every payload in order.
func TestRecordConcurrentPublisher(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	a := openTest(t, fs, dir, Options{SegmentLength: 128 << 10, FileIoMaxLength: 64 << 10, MarkErrorBufferLength: 4096})
	defer a.Close()
	l, err := logbuf.New(64<<10, 1408, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	pub, img := l.Publication(), l.Image()
	pub.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
	r, err := a.StartRecording(Source{Log: l, Image: img})
	if err != nil {
		t.Fatal(err)
	}
	const messages = 3000
	payloadOf := func(i int) []byte {
		b := make([]byte, 1+(i*37)%1300)
		for j := range b {
			b[j] = byte(i + j)
		}
		return b
	}
	done := make(chan int64)
	go func() {
		var pos int64
		for i := 0; i < messages; {
			p, err := pub.Offer(payloadOf(i))
			if err != nil {
				panic(err)
			}
			if p >= 0 {
				pos = p
				i++
			} else {
				runtime.Gosched()
			}
		}
		done <- pos
	}()
	end := int64(-1)
	for end < 0 || r.Position() < end {
		if _, err := r.Record(1 << 62); err != nil {
			t.Fatal(err)
		}
		pub.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
		select {
		case end = <-done:
		default:
			runtime.Gosched()
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	i := 0
	if _, err := a.Replay(r.ID(), 0, NullPosition, func(pos int64, frame []byte) error {
		if !bytes.Equal(frame[FrameHeaderLength:], payloadOf(i)) {
			return fmt.Errorf("message %d at %d differs", i, pos)
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != messages {
		t.Fatalf("replayed %d of %d messages", i, messages)
	}
}

// TestLeaveMarkFile: an offline open neither creates nor rewrites
// archive-mark.dat, and still refuses a live archive.
func TestLeaveMarkFile(t *testing.T) {
	fs := vfs.NewMem()
	clock := &testClock{ms: 1_700_000_000_000}
	opts := Options{Clock: clock.now, CatalogCapacity: 4096, MarkErrorBufferLength: 4096}
	a := openTest(t, fs, "arch", opts)
	// A live archive (its mark file fresh, our pid running) is refused.
	live := opts
	live.LeaveMarkFile = true
	if _, err := Open(fs, "arch", live); !errors.Is(err, ErrArchiveActive) {
		t.Fatalf("offline open of a live archive: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	name := fs.Join("arch", MarkFileName)
	before := markBytes(t, fs, name)
	b := openTest(t, fs, "arch", live)
	if err := b.UpdateActivity(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if after := markBytes(t, fs, name); !bytes.Equal(before, after) {
		t.Fatal("an offline open changed archive-mark.dat")
	}
	// Without a mark file none is created.
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, fs, "arch", live)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(name); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("an offline open created archive-mark.dat: %v", err)
	}
}

func markBytes(t testing.TB, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
