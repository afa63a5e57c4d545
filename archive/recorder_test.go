package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// fsCase is a file system a test runs on: make returns it and the archive
// directory on it.
type fsCase struct {
	name string
	make func(t *testing.T) (vfs.FS, string)
}

// fsCases run a test over the OS file system in a temp dir and over the
// memory file system.
var fsCases = []fsCase{
	{"os", func(t *testing.T) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("arch"); err != nil {
			t.Fatal(err)
		}
		if err := fs.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		return fs, "arch"
	}},
}

// testClock is a settable clock in epoch ms.
type testClock struct{ ms int64 }

func (c *testClock) now() int64 { c.ms++; return c.ms }

// published is a frame seen by the witness reader: its position and bytes.
type published struct {
	pos   int64
	frame []byte
}

// harness is a log buffer with a publication, the image a recording reads,
// and a witness image that copies every published frame.
type harness struct {
	t       testing.TB
	log     *logbuf.Log
	pub     *logbuf.ExclusivePublication
	img     *logbuf.Image
	witness *logbuf.Image
	frames  []published
	payload []byte
}

func newHarness(t testing.TB, termLength, mtu int, initialTermID, sessionID int32, start int64) *harness {
	l, err := logbuf.NewAt(termLength, mtu, initialTermID, sessionID, 7, start)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, log: l, pub: l.Publication(), img: l.Image(), witness: l.Image(), payload: make([]byte, mtu)}
	h.limit()
	return h
}

func (h *harness) limit() {
	h.pub.SetPositionLimit(min(h.img.Position(), h.witness.Position()) + int64(h.log.TermWindowLength()))
}

// offer publishes one message of n random bytes; false when back pressured.
func (h *harness) offer(rng *rand.Rand, n int) bool {
	for i := range h.payload[:n] {
		h.payload[i] = byte(rng.Uint32())
	}
	pos, err := h.pub.Offer(h.payload[:n])
	if err != nil {
		h.t.Fatal(err)
	}
	return pos >= 0
}

// catchUp copies new frames through the witness.
func (h *harness) catchUp() {
	h.witness.Poll(func(buf []byte, offset, length int, hdr logbuf.Header) {
		start := offset - logbuf.HeaderLength
		h.frames = append(h.frames, published{
			pos:   hdr.Position() - AlignedFrameLength(hdr.FrameLength()),
			frame: bytes.Clone(buf[start : start+int(hdr.FrameLength())]),
		})
	}, 1<<30)
	h.limit()
}

// run publishes about total bytes of random messages (sizes up to the max
// payload), recording as it goes, and returns the recorded position.
func (h *harness) run(rng *rand.Rand, r *Recording, total int64) int64 {
	pos, err := h.runErr(rng, r, total)
	if err != nil {
		h.t.Fatal(err)
	}
	return pos
}

// runErr is run returning the recorder's error.
func (h *harness) runErr(rng *rand.Rand, r *Recording, total int64) (int64, error) {
	end := h.pub.Position() + total
	for h.pub.Position() < end {
		n := rng.IntN(h.pub.MaxPayloadLength() + 1)
		if rng.IntN(4) == 0 {
			n = rng.IntN(100)
		}
		if !h.offer(rng, n) {
			h.catchUp()
			if _, err := r.Record(h.pub.Position()); err != nil {
				return r.Position(), err
			}
			h.limit()
		}
	}
	h.catchUp()
	pos, err := r.Record(h.pub.Position())
	if err != nil {
		return pos, err
	}
	h.limit()
	if pos != h.pub.Position() {
		h.t.Fatalf("recorded %d, published %d", pos, h.pub.Position())
	}
	return pos, nil
}

func openTest(t testing.TB, fs vfs.FS, dir string, opts Options) *Archive {
	t.Helper()
	a, err := Open(fs, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// replayAll replays [from, limit) and returns the frames.
func replayAll(t testing.TB, a *Archive, id, from, limit int64) []published {
	t.Helper()
	var got []published
	if _, err := a.Replay(id, from, limit, func(pos int64, frame []byte) error {
		got = append(got, published{pos, bytes.Clone(frame)})
		return nil
	}); err != nil {
		t.Fatalf("replay %d from %d to %d: %v", id, from, limit, err)
	}
	return got
}

func sameFrames(t testing.TB, got, want []published) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d frames, published %d", len(got), len(want))
	}
	for i := range got {
		if got[i].pos != want[i].pos || !bytes.Equal(got[i].frame, want[i].frame) {
			t.Fatalf("frame %d: replayed at %d (%d bytes), published at %d (%d bytes)", i, got[i].pos, len(got[i].frame), want[i].pos, len(want[i].frame))
		}
	}
}

func verifyOK(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	rep, err := Verify(fs, dir, VerifyOptions{AllSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.UnknownSegments) != 0 {
		t.Fatalf("unknown segment files %v (the sidecar index must not look like one)", rep.UnknownSegments)
	}
	if !rep.OK() {
		for _, r := range rep.Recordings {
			t.Logf("recording %d: %v %v", r.RecordingID, r.Status, r.Problems)
		}
		t.Fatal("verify found problems")
	}
}

// TestRecordReplayRoundTrip records a publication of random message sizes
// over several terms, starting mid-term, stops, extends it with a new
// session, and replays everything byte for byte, at every sync level and
// several block sizes, on both file systems.
func TestRecordReplayRoundTrip(t *testing.T) {
	suite{FS: fsCases, Blocks: []int{64 << 10, 128 << 10, 1 << 20}}.run(t, func(t *testing.T, sc suiteCase) {
		testRoundTrip(t, sc.FS, sc.Dir, Options{SegmentLength: 128 << 10, FileIoMaxLength: sc.Block,
			FileSyncLevel: SyncLevel(sc.Level), CatalogSyncLevel: SyncLevel(sc.Level), MarkErrorBufferLength: 4096},
			rand.New(rand.NewPCG(uint64(sc.Level), uint64(sc.Block))))
	})
}

func testRoundTrip(t *testing.T, fs vfs.FS, dir string, opts Options, rng *rand.Rand) {
	clock := &testClock{ms: 1_700_000_000_000}
	opts.Clock = clock.now
	a := openTest(t, fs, dir, opts)
	const termLength = 64 << 10
	start := int64(3*termLength + 4096 + 64) // mid-term
	h := newHarness(t, termLength, 4096, 100, 11, start)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img, Channel: "aeron:ipc?alias=test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := replayAll(t, a, r.ID(), start, NullPosition); len(got) != 0 {
		t.Fatalf("empty active recording replayed %d frames", len(got))
	}
	stop1 := h.run(rng, r, 5*termLength+rng.Int64N(termLength))
	if pos, _ := a.RecordedPosition(r.ID()); pos != stop1 {
		t.Fatalf("recorded position %d, want %d", pos, stop1)
	}
	if d, _ := a.Catalog().Descriptor(r.ID()); d.StopPosition != NullPosition {
		t.Fatalf("active recording has stop position %d in the catalog", d.StopPosition)
	}
	// Replay of the active recording up to its recorded position.
	sameFrames(t, replayAll(t, a, r.ID(), start, NullPosition), h.frames)
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.Catalog().Descriptor(r.ID()); d.StopPosition != stop1 || d.StopTimestamp == NullTimestamp {
		t.Fatalf("stopped descriptor %+v, want stop %d", d, stop1)
	}
	checkSegmentLayout(t, fs, dir, a, r.ID())
	verifyOK(t, fs, dir)

	// Extend with a new session at the stop position.
	h2 := newHarness(t, termLength, 4096, 100, 12, stop1)
	r2, err := a.ExtendRecording(r.ID(), Source{Log: h2.log, Image: h2.img})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ExtendRecording(r.ID(), Source{Log: h2.log, Image: h2.img}); !errors.Is(err, ErrRecordingActive) {
		t.Fatalf("second extend: %v", err)
	}
	stop2 := h2.run(rng, r2, 3*termLength+rng.Int64N(termLength))
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	d, _ := a.Catalog().Descriptor(r.ID())
	if d.StopPosition != stop2 || d.SessionID != 12 || d.StartPosition != start {
		t.Fatalf("extended descriptor %+v", d)
	}
	want := append(slices.Clone(h.frames), h2.frames...)
	if len(want) < 100 {
		t.Fatalf("only %d frames published", len(want))
	}
	sameFrames(t, replayAll(t, a, r.ID(), start, NullPosition), want)
	checkSegmentLayout(t, fs, dir, a, r.ID())

	// Replay from random frames to random limits.
	for range 20 {
		i := rng.IntN(len(want))
		j := i + rng.IntN(len(want)-i)
		limit := want[j].pos
		sameFrames(t, replayAll(t, a, r.ID(), want[i].pos, limit), want[i:j])
	}
	// Invalid positions.
	for _, p := range []int64{start - 32, stop2 + 32, want[1].pos + 32, want[0].pos + 1} {
		if want[1].pos+32 == want[2].pos && p == want[1].pos+32 {
			continue
		}
		if _, err := a.StartReplay(r.ID(), p, NullPosition); !errors.Is(err, ErrInvalidPosition) {
			t.Fatalf("replay from %d: %v, want ErrInvalidPosition", p, err)
		}
	}
	if _, err := a.StartReplay(r.ID(), start, stop2+32); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("replay past the stop: %v", err)
	}
	if n := len(a.Replays()); n != 0 {
		t.Fatalf("%d replays left open", n)
	}

	// The sidecar index covers every segment with increasing timestamps.
	segs, err := a.SegmentTimes(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	base := SegmentFileBasePosition(start, start, termLength, d.SegmentFileLength)
	last := SegmentFileBasePosition(start, stop2, termLength, d.SegmentFileLength)
	if n := (last-base)/int64(d.SegmentFileLength) + 1; int64(len(segs)) < n-1 {
		t.Fatalf("index has %d segments, want about %d: %+v", len(segs), n, segs)
	}
	for i, s := range segs {
		if s.Base != base+int64(i)*int64(d.SegmentFileLength) || (i > 0 && s.LastTimestamp < segs[i-1].LastTimestamp) {
			t.Fatalf("index %+v", segs)
		}
	}
	if c, err := a.AgeCutoff(r.ID(), segs[1].LastTimestamp+1); err != nil || c != segs[2].Base {
		t.Fatalf("age cutoff %d (%v), want %d", c, err, segs[2].Base)
	}
	if c, _ := a.AgeCutoff(r.ID(), 1<<62); c != last {
		t.Fatalf("age cutoff for everything %d, want the last segment %d", c, last)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, fs, dir)
	// Reopen: nothing to settle, same catalog, index readable.
	a = openTest(t, fs, dir, opts)
	if len(a.Recovered()) != 0 {
		t.Fatalf("reopen settled %d recordings", len(a.Recovered()))
	}
	sameFrames(t, replayAll(t, a, r.ID(), start, NullPosition), want)
	if segs2, err := a.SegmentTimes(r.ID()); err != nil || !slices.Equal(segs2, segs) {
		t.Fatalf("index after reopen %+v (%v), want %+v", segs2, err, segs)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkSegmentLayout compares the segment files with Aeron's layout rules:
// full length, zeros before a mid-term start, every frame at its term
// offset with the right header fields, zero alignment bytes, padding frames
// with a header and a zero body, zeros after the stop.
func checkSegmentLayout(t testing.TB, fs vfs.FS, dir string, a *Archive, id int64) {
	t.Helper()
	d, err := a.Catalog().Descriptor(id)
	if err != nil {
		t.Fatal(err)
	}
	tl, sl := int64(d.TermBufferLength), int64(d.SegmentFileLength)
	startBase := SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength)
	stopBase := SegmentFileBasePosition(d.StartPosition, d.StopPosition, d.TermBufferLength, d.SegmentFileLength)
	for base := startBase; base <= stopBase; base += sl {
		f, err := fs.Open(fs.Join(dir, SegmentFileName(id, base)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := readAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != sl {
			t.Fatalf("segment %d is %d bytes, want %d", base, len(b), sl)
		}
		off := max(d.StartPosition, base) - base
		if !allZero(b[:off]) {
			t.Fatalf("segment %d: bytes before the start are not zero", base)
		}
		end := min(d.StopPosition-base, sl)
		for off < end {
			pos := base + off
			h := DecodeFrameHeader(b[off:])
			wantTermID := d.InitialTermID + int32(pos/tl)
			if h.TermOffset != int32(pos%tl) || h.TermID != wantTermID || h.StreamID != d.StreamID || h.Version != 0 || h.Flags != FrameFlagsUnfragmented {
				t.Fatalf("segment %d offset %d: header %+v", base, off, h)
			}
			aligned := AlignedFrameLength(h.FrameLength)
			switch h.Type {
			case FrameTypeData:
				if !allZero(b[off+int64(h.FrameLength) : off+aligned]) {
					t.Fatalf("segment %d offset %d: alignment bytes not zero", base, off)
				}
			case FrameTypePad:
				if pos%tl+aligned != tl {
					t.Fatalf("segment %d offset %d: padding does not reach the term end", base, off)
				}
				if !allZero(b[off+FrameHeaderLength : off+aligned]) {
					t.Fatalf("segment %d offset %d: padding body not zero", base, off)
				}
			default:
				t.Fatalf("segment %d offset %d: type %d", base, off, h.Type)
			}
			off += aligned
		}
		if end < sl && !allZero(b[max(end, 0):]) {
			t.Fatalf("segment %d: bytes after the stop are not zero", base)
		}
	}
	if _, err := fs.Stat(fs.Join(dir, SegmentFileName(id, stopBase+sl))); err == nil {
		t.Fatalf("segment after the stop segment exists")
	}
	_ = binary.LittleEndian
}
