package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

const crashTermLength = 64 << 10

func crashOptions(level, block int, clock func() int64) Options {
	return Options{SegmentLength: 128 << 10, FileIoMaxLength: block, FileSyncLevel: SyncLevel(level), CatalogSyncLevel: SyncLevel(level),
		Clock: clock, CatalogCapacity: 4096, MarkErrorBufferLength: 4096}
}

// TestCrashRecovery records, stops and extends on the memory FS and takes a
// crash clone (random survival of unsynced writes) at many points. For each
// clone: Verify with truncation repairs every torn tail, Open settles the
// recording, and at sync level >= 1 nothing recorded (so synced) before the
// crash is lost and everything kept replays byte for byte as published.
func TestCrashRecovery(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	suite{Blocks: []int{64 << 10, 256 << 10}}.run(t, func(t *testing.T, sc suiteCase) {
		for seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				testCrash(t, sc.Level, sc.Block, uint64(seed))
			})
		}
	})
}

func testCrash(t *testing.T, level, block int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(level*7+block)))
	fs, dir := fsCases[1].make(t)
	fs0 := fs.(*vfs.MemFS)
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, fs, dir, crashOptions(level, block, clock.now))
	start := int64(crashTermLength + 2048)
	h := newHarness(t, crashTermLength, 2048, 9, 1, start)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		t.Fatal(err)
	}
	id := r.ID()
	var all []published
	crashAt := func(recorded int64, stopped bool) {
		t.Helper()
		pct := rng.IntN(101)
		crashed := fs0.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: rand.New(rand.NewPCG(seed, uint64(recorded)))})
		checkCrashed(t, crashed, dir, level, block, id, start, recorded, stopped, append(all, h.frames...), clock.ms+DefaultMarkTimeout.Milliseconds()+1)
	}
	crashAt(start, false)
	for range 3 {
		pos := h.run(rng, r, rng.Int64N(2*crashTermLength))
		crashAt(pos, false)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	crashAt(r.Position(), true)
	all = append(all, h.frames...)
	h2 := newHarness(t, crashTermLength, 2048, 9, 2, r.Position())
	r2, err := a.ExtendRecording(id, Source{Log: h2.log, Image: h2.img})
	if err != nil {
		t.Fatal(err)
	}
	h = h2
	crashAt(r2.Position(), false)
	for range 2 {
		pos := h.run(rng, r2, rng.Int64N(2*crashTermLength))
		crashAt(pos, false)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	crashAt(r2.Position(), true)
}

func checkCrashed(t *testing.T, fs vfs.FS, dir string, level, block int, id, start, recorded int64, stopped bool, frames []published, nowMs int64) {
	t.Helper()
	if _, err := Verify(fs, dir, VerifyOptions{Truncate: true, Now: func() int64 { return nowMs }}); err != nil {
		if level == 0 && strings.HasPrefix(err.Error(), "archive: ") {
			return // nothing was made durable: a clean error is all we ask
		}
		t.Fatalf("verify after crash at %d: %v", recorded, err)
	}
	clock := &testClock{ms: nowMs}
	a, err := Open(fs, dir, crashOptions(level, block, clock.now))
	if err != nil {
		if level == 0 && strings.HasPrefix(err.Error(), "archive: ") {
			return
		}
		t.Fatalf("open after crash at %d: %v", recorded, err)
	}
	defer a.Close()
	d, err := a.Catalog().Descriptor(id)
	if err != nil {
		if level == 0 {
			return
		}
		t.Fatalf("crash at %d: %v", recorded, err)
	}
	if d.StopPosition == NullPosition {
		t.Fatalf("crash at %d: recording not settled: %+v", recorded, a.Recovered())
	}
	if level > 0 {
		if d.StopPosition < recorded || (stopped && d.StopPosition != recorded) {
			t.Fatalf("crash at %d: stop position %d lost synced data", recorded, d.StopPosition)
		}
		var want []published
		for _, f := range frames {
			if f.pos < d.StopPosition {
				want = append(want, f)
			}
		}
		sameFrames(t, replayAll(t, a, id, start, NullPosition), want)
		rep, err := Verify(fs, dir, VerifyOptions{AllSegments: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range rep.Recordings {
			if rr.Status != StatusOK {
				t.Fatalf("crash at %d: after reopen: %v %v", recorded, rr.Status, rr.Problems)
			}
		}
		segs, err := a.SegmentTimes(id)
		if err != nil || (d.StopPosition > start && (len(segs) == 0 || segs[len(segs)-1].Position != d.StopPosition)) {
			t.Fatalf("crash at %d: index %+v (%v)", recorded, segs, err)
		}
	}
}

// TestInjectedErrors sweeps an injected failure over every file-system
// operation of a scripted run (open, record, stop, extend, record, close):
// the run fails with the injected error (never a panic) until a run passes
// every point, and after each failure reopening gives a settled catalog and
// files Verify accepts.
func TestInjectedErrors(t *testing.T) {
	levels := []int{0, 1, 2}
	if testing.Short() {
		levels = []int{1}
	}
	suite{Levels: levels}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		for i := int64(0); ; i++ {
			base := vfs.NewMem()
			if err := base.MkdirAll("arch"); err != nil {
				t.Fatal(err)
			}
			inj := vfs.NewInjector(base, vfs.AllOps, i)
			clock := &testClock{ms: 1_700_000_000_000}
			err := scriptedRun(t, inj, crashOptions(level, 64<<10, clock.now))
			injected := inj.Injected()
			if injected == nil {
				if err != nil {
					t.Fatalf("run without injection failed: %v", err)
				}
				t.Logf("%d failure points", i)
				return
			}
			if err == nil {
				var ie *vfs.InjectedError
				if errors.As(injected, &ie) && (ie.Op == vfs.OpRead || ie.Op == vfs.OpOpen || ie.Op == vfs.OpStat || ie.Op == vfs.OpList) {
					// A failed read of something advisory (an old mark file,
					// an index) is handled by starting afresh.
				} else {
					t.Fatalf("op %d (%v): run succeeded", i, injected)
				}
			} else if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("op %d (%v): error does not wrap the injected one: %v", i, injected, err)
			}
			clock.ms += DefaultMarkTimeout.Milliseconds() + 1
			a, err := Open(base, "arch", crashOptions(level, 64<<10, clock.now))
			if err != nil {
				t.Fatalf("op %d (%v): reopen: %v", i, injected, err)
			}
			for _, d := range a.ListRecordings() {
				if d.StopPosition == NullPosition {
					t.Fatalf("op %d (%v): recording %d not settled", i, injected, d.RecordingID)
				}
				if _, err := a.Replay(d.RecordingID, d.StartPosition, NullPosition, func(int64, []byte) error { return nil }); err != nil {
					t.Fatalf("op %d (%v): replay: %v", i, injected, err)
				}
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(base, "arch", VerifyOptions{AllSegments: true})
			if err != nil {
				t.Fatalf("op %d (%v): verify: %v", i, injected, err)
			}
			for _, rr := range rep.Recordings {
				if rr.Status != StatusOK {
					t.Fatalf("op %d (%v): recording %d: %v %v", i, injected, rr.RecordingID, rr.Status, rr.Problems)
				}
			}
		}
	})
}

// scriptedRun opens an archive, records about three terms, stops, extends
// by about a term and a half and closes, returning the first error.
func scriptedRun(t *testing.T, fs vfs.FS, opts Options) (err error) {
	a, err := Open(fs, "arch", opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.Close()) }()
	rng := rand.New(rand.NewPCG(5, 6))
	h := newHarness(t, crashTermLength, 2048, 0, 1, 4096)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		return err
	}
	if _, err := h.runErr(rng, r, 3*crashTermLength); err != nil {
		return err
	}
	if err := r.Stop(); err != nil {
		return err
	}
	h2 := newHarness(t, crashTermLength, 2048, 0, 2, r.Position())
	r2, err := a.ExtendRecording(r.ID(), Source{Log: h2.log, Image: h2.img})
	if err != nil {
		return err
	}
	if _, err := h2.runErr(rng, r2, crashTermLength+crashTermLength/2); err != nil {
		return err
	}
	return r2.Stop()
}

// syncHookFS is an injector that calls hook before every Sync or SyncAll,
// that is between a block's write and its sync.
type syncHookFS struct {
	*vfs.Injector
	hook func(name string)
}

func newSyncHookFS(fs vfs.FS) *syncHookFS {
	s := &syncHookFS{}
	s.Injector = vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpSync), Before: func(_ vfs.Op, name string) error {
		s.hook(name)
		return nil
	}})
	return s
}

// TestCrashTornBlock crashes between a block's write and its sync, keeps
// the unsynced block and tears it at a random byte, as a power cut during
// the write could: Verify with truncation cuts the torn tail, Open settles
// the recording, nothing recorded before the block is lost, and everything
// kept replays as published.
func TestCrashTornBlock(t *testing.T) {
	torn := 0
	suite{Levels: []int{1, 2}}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		for seed := range uint64(3) {
			rng := rand.New(rand.NewPCG(seed, uint64(level)))
			mem := vfs.NewMem()
			if err := mem.MkdirAll("arch"); err != nil {
				t.Fatal(err)
			}
			fs := newSyncHookFS(mem)
			var r *Recording
			var h *harness
			clock := &testClock{ms: 1_700_000_000_000}
			fs.hook = func(name string) {
				if !strings.HasSuffix(name, SegmentSuffix) || r == nil || r.segOffset >= int64(r.segLen) || rng.IntN(3) != 0 {
					return
				}
				crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
				cut := r.segOffset + 1 + rng.Int64N(4096)
				if err := crashed.CutFile(name, min(cut, int64(r.segLen))); err != nil {
					t.Fatal(err)
				}
				before := fileBytes(t, crashed, name)
				type kept struct {
					seg  string
					off  int64
					data []byte
				}
				var cuts []kept
				rep, err := Verify(crashed, "arch", VerifyOptions{Truncate: true, Now: func() int64 { return clock.ms },
					KeepCut: func(seg string, off int64, data []byte) error {
						cuts = append(cuts, kept{seg, off, slices.Clone(data)})
						return nil
					}})
				if err != nil {
					t.Fatal(err)
				}
				for _, rr := range rep.Recordings {
					if rr.Truncated {
						torn++
						// KeepCut got exactly the bytes the repair cut,
						// before it cut them.
						want := bytes.TrimRight(before[rr.TruncatedAt:], "\x00")
						if len(cuts) != 1 || cuts[0].seg != rr.LastSegment || cuts[0].off != rr.TruncatedAt || !bytes.Equal(cuts[0].data, want) {
							t.Fatalf("KeepCut got %d cuts, want the %d bytes cut from %s at %d", len(cuts), len(want), rr.LastSegment, rr.TruncatedAt)
						}
					}
				}
				checkCrashed(t, crashed, "arch", level, 64<<10, r.ID(), r.StartPosition(), r.Position(), false, h.frames, clock.ms+DefaultMarkTimeout.Milliseconds()+1)
			}
			a := openTest(t, fs, "arch", crashOptions(level, 64<<10, clock.now))
			h = newHarness(t, crashTermLength, 2048, 3, 1, 0)
			var err error
			if r, err = a.StartRecording(Source{Log: h.log, Image: h.img}); err != nil {
				t.Fatal(err)
			}
			h.run(rng, r, 4*crashTermLength)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if torn == 0 {
		t.Fatal("no crash left a torn tail")
	}
	t.Logf("%d torn tails truncated", torn)
}

// fileBytes reads the whole file name of fsys.
func fileBytes(t testing.TB, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}
