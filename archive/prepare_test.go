package archive

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// prepNames lists the prepared (*.rec.prep) files in dir.
func prepNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if errors.Is(err, vfs.ErrNotExist) {
		return nil // a crash at level 0 may lose the directory
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, PreparedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestPreparedSegment: the segment after the current one is prepared under
// its temporary name, renamed into place when the recording enters it, and
// removed at Stop; a stop on a segment boundary still leaves Aeron's empty
// following segment and nothing else.
func TestPreparedSegment(t *testing.T) {
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		mem := vfs.NewMem()
		clock := &testClock{ms: 1_700_000_000_000}
		opts := crashOptions(level, 64<<10, clock.now)
		a := openTest(t, mem, "arch", opts)
		h := newHarness(t, crashTermLength, 2048, 0, 1, 0)
		r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
		if err != nil {
			t.Fatal(err)
		}
		segLen := int64(opts.SegmentLength)
		if r.prep != nil || len(prepNames(t, mem, "arch")) != 0 {
			t.Fatalf("sync %d: prepared at the start", level)
		}
		rng := rand.New(rand.NewPCG(1, uint64(level)))
		h.run(rng, r, 2*segLen+3*segLen/4)
		pos := r.Position()
		base := pos &^ (segLen - 1)
		if pos-base < segLen/2 {
			t.Fatalf("sync %d: position %d not in the second half of a segment", level, pos)
		}
		<-r.prep.done
		if got, want := prepNames(t, mem, "arch"), SegmentFileName(r.ID(), base+segLen)+".prep"; len(got) != 1 || got[0] != want {
			t.Fatalf("sync %d: prepared %v, want %s", level, got, want)
		}
		if r.seg.Name() != mem.Join("arch", SegmentFileName(r.ID(), base)) {
			t.Fatalf("sync %d: segment named %s", level, r.seg.Name())
		}
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
		if got := prepNames(t, mem, "arch"); len(got) != 0 {
			t.Fatalf("sync %d: prepared files left after Stop: %v", level, got)
		}
		rep, err := Verify(mem, "arch", VerifyOptions{AllSegments: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range rep.Recordings {
			if rr.Status != StatusOK || len(rr.OrphanSegments) > 0 {
				t.Fatalf("sync %d: verify: %+v", level, rr)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// prepHookFS is an injector that calls hook before a prepared segment is
// created and around its preallocation, on the preparer's goroutine; fail,
// if set, fails that operation (or the prepared file's sync).
type prepHookFS struct {
	*vfs.Injector
	hook func()
	fail vfs.Op
}

var errPrep = fmt.Errorf("prepare: %w", vfs.ErrInjected)

func newPrepHookFS(fs vfs.FS, fail vfs.Op) *prepHookFS {
	s := &prepHookFS{fail: fail}
	prepared := func(name string) bool { return strings.HasSuffix(name, PreparedSuffix) }
	s.Injector = vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpCreate, vfs.OpPreallocate, vfs.OpSync),
		Before: func(op vfs.Op, name string) error {
			if !prepared(name) {
				return nil
			}
			if op != vfs.OpSync {
				s.hook()
			}
			if s.fail == op {
				return errPrep
			}
			return nil
		},
		After: func(op vfs.Op, name string, _ vfs.File, _ error) {
			if op == vfs.OpPreallocate && prepared(name) {
				s.hook()
			}
		}})
	return s
}

// TestCrashWhilePreparing takes crash clones while the next segment is
// being prepared in the background (before its creation, before and after
// its preallocation): Open removes the prepared file, settles the recording
// without losing anything synced, and Verify finds no orphan.
func TestCrashWhilePreparing(t *testing.T) {
	type crash struct {
		fs       *vfs.MemFS
		recorded int64
	}
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		fs0, _ := fsCases[1].make(t)
		mem := fs0.(*vfs.MemFS)
		var (
			cur     atomic.Pointer[Recording]
			mu      sync.Mutex
			crashes []crash
			seed    atomic.Uint64
		)
		fs := newPrepHookFS(mem, vfs.OpMkdir)
		fs.hook = func() {
			r := cur.Load()
			if r == nil {
				return
			}
			recorded := r.Position() // before the clone: durable in it at level >= 1
			s := seed.Add(1)
			c := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: int(s*37) % 101, Rand: rand.New(rand.NewPCG(s, uint64(level)))})
			mu.Lock()
			crashes = append(crashes, crash{c, recorded})
			mu.Unlock()
		}
		clock := &testClock{ms: 1_700_000_000_000}
		opts := crashOptions(level, 64<<10, clock.now)
		a := openTest(t, fs, "arch", opts)
		h := newHarness(t, crashTermLength, 2048, 0, 1, 0)
		r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
		if err != nil {
			t.Fatal(err)
		}
		cur.Store(r)
		rng := rand.New(rand.NewPCG(2, uint64(level)))
		h.run(rng, r, 4*int64(opts.SegmentLength))
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
		cur.Store(nil)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(crashes) < 6 {
			t.Fatalf("sync %d: only %d crash clones", level, len(crashes))
		}
		withPrep := 0
		for _, c := range crashes {
			if len(prepNames(t, c.fs, "arch")) > 0 {
				withPrep++
			}
			checkCrashed(t, c.fs, "arch", level, 64<<10, r.ID(), 0, c.recorded, false, h.frames, clock.ms+DefaultMarkTimeout.Milliseconds()+1)
			if level == 0 {
				continue // Open may have refused what survived
			}
			if got := prepNames(t, c.fs, "arch"); len(got) != 0 {
				t.Fatalf("sync %d: prepared files left after Open: %v", level, got)
			}
			rep, err := Verify(c.fs, "arch", VerifyOptions{})
			if err != nil {
				if level == 0 {
					continue
				}
				t.Fatal(err)
			}
			for _, rr := range rep.Recordings {
				if len(rr.OrphanSegments) > 0 {
					t.Fatalf("sync %d: orphans after crash: %v", level, rr.OrphanSegments)
				}
			}
		}
		if withPrep == 0 {
			t.Fatalf("sync %d: no crash clone held a prepared file", level)
		}
	})
}

// TestPrepareErrorSurfaces: a failure of the background preparation is the
// recording's error on the next Poll, and Stop reports it and settles.
func TestPrepareErrorSurfaces(t *testing.T) {
	for _, op := range []vfs.Op{vfs.OpCreate, vfs.OpPreallocate, vfs.OpSync} {
		mem := vfs.NewMem()
		in := newPrepHookFS(mem, op)
		in.hook = func() {}
		clock := &testClock{ms: 1_700_000_000_000}
		opts := crashOptions(1, 64<<10, clock.now)
		a, err := Open(in, "arch", opts)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, crashTermLength, 2048, 0, 1, 0)
		r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		rng := rand.New(rand.NewPCG(3, 3))
		// The preparation starts once the segment is half full; its
		// failure is the error of the next Poll.
		_, err = h.runErr(rng, r, int64(opts.SegmentLength)/2+4096)
		if err == nil {
			if r.prep == nil {
				t.Fatalf("%v: no preparation started at %d", op, r.Position())
			}
			<-r.prep.done
			h.offer(rng, 100)
			_, err = r.Poll()
		}
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("%v: error %v, want the injected error", op, err)
		}
		if err := r.Stop(); !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("%v: Stop = %v", op, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		a2 := openTest(t, mem, "arch", opts)
		if got := prepNames(t, mem, "arch"); len(got) != 0 {
			t.Fatalf("%v: prepared files left: %v", op, got)
		}
		if err := a2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
