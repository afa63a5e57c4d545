package archive

import (
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestLevel0Durability records at file sync level 0 (catalog at 1, as the
// cluster node runs) under each level-0 policy, checks what
// DurablePosition reports after Record and SyncTo, and that it is true: a
// crash clone keeping no unsynced write still replays every frame before
// the durable position byte for byte.
func TestLevel0Durability(t *testing.T) {
	const segLen = 128 << 10
	type step struct {
		bytes  int64 // published and recorded with Record
		syncTo bool  // then SyncTo(Position())
	}
	cases := []struct {
		name     string
		opts     func(*Options)
		syncEach bool
		steps    []step
		// want is the range [lo, hi] of the durable position expected
		// after the steps, from the start, the recorded position and its
		// segment base.
		want func(start, pos, base int64) (lo, hi int64)
	}{
		{"none", nil, false, []step{{3 * segLen, false}},
			func(start, pos, base int64) (int64, int64) { return start, start }},
		{"sync to", nil, false, []step{{segLen / 2, true}, {2 * segLen, true}},
			func(start, pos, base int64) (int64, int64) { return pos, pos }},
		{"roll over", func(o *Options) { o.SyncOnRollOver = true }, false, []step{{3 * segLen, false}},
			func(start, pos, base int64) (int64, int64) { return max(start, base), pos }},
		{"each record", func(o *Options) { o.SyncOnRollOver = true }, true, []step{{3 * segLen, false}},
			func(start, pos, base int64) (int64, int64) { return pos, pos }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, dir := fsCases[1].make(t)
			clock := &testClock{ms: 1_700_000_000_000}
			opts := crashOptions(0, 64<<10, clock.now)
			opts.CatalogSyncLevel = SyncData
			if tc.opts != nil {
				tc.opts(&opts)
			}
			a := openTest(t, fs, dir, opts)
			start := int64(crashTermLength + 2048)
			h := newHarness(t, crashTermLength, 2048, 9, 1, start)
			r, err := a.StartRecording(Source{Log: h.log, Image: h.img, SyncEachRecord: tc.syncEach})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			if got := r.DurablePosition(); got != start {
				t.Fatalf("durable position %d before any write, want the start %d", got, start)
			}
			for _, s := range tc.steps {
				pos := h.run(rng, r, s.bytes)
				if tc.syncEach && r.DurablePosition() != pos {
					t.Fatalf("each record: durable position %d after Record, recorded %d", r.DurablePosition(), pos)
				}
				if s.syncTo {
					if d, err := r.SyncTo(pos + 1); err != nil || d != r.DurablePosition() || d >= pos+1 {
						t.Fatalf("SyncTo beyond the recorded position %d: %d, %v (durable %d)", pos, d, err, r.DurablePosition())
					}
					d, err := r.SyncTo(pos)
					if err != nil {
						t.Fatal(err)
					}
					if d != pos || r.DurablePosition() != pos {
						t.Fatalf("SyncTo(%d) = %d, durable position %d", pos, d, r.DurablePosition())
					}
				}
			}
			pos := r.Position()
			base := SegmentFileBasePosition(start, pos, crashTermLength, segLen)
			durable := r.DurablePosition()
			if lo, hi := tc.want(start, pos, base); durable < lo || durable > hi {
				t.Fatalf("durable position %d (recorded %d, segment base %d), want [%d, %d]", durable, pos, base, lo, hi)
			}
			checkDurable(t, fs.(*vfs.MemFS), dir, r.ID(), start, durable, h.frames)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBackgroundSync: with Options.BackgroundSyncEvery, Record starts a
// sync of the bytes recorded within a segment on a goroutine of its own;
// its position counts as durable from a later Record on, and it is.
func TestBackgroundSync(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	opts := crashOptions(0, 64<<10, clock.now)
	opts.CatalogSyncLevel = SyncData
	opts.SegmentLength = 1 << 20
	opts.SyncOnRollOver = true
	opts.BackgroundSyncEvery = 32 << 10
	a := openTest(t, fs, dir, opts)
	start := int64(crashTermLength + 2048)
	h := newHarness(t, crashTermLength, 2048, 9, 1, start)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		t.Fatal(err)
	}
	pos := h.run(rand.New(rand.NewPCG(3, 4)), r, 3*crashTermLength)
	// The background sync runs on its own goroutine; a bounded wait for
	// it (the test fails when it never completes).
	for deadline := time.Now().Add(10 * time.Second); r.DurablePosition() == start; {
		if time.Now().After(deadline) {
			t.Fatalf("no background sync made anything durable (recorded %d)", pos)
		}
		time.Sleep(time.Millisecond)
		if _, err := r.Record(pos); err != nil {
			t.Fatal(err)
		}
	}
	durable := r.DurablePosition()
	if durable-start < opts.BackgroundSyncEvery || durable > pos {
		t.Fatalf("durable position %d: start %d, recorded %d, background sync every %d", durable, start, pos, opts.BackgroundSyncEvery)
	}
	// The background sync does not sync the directory; the catalog and
	// the segment's creation are made durable here so the crash clone
	// finds the file.
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	checkDurable(t, fs.(*vfs.MemFS), dir, r.ID(), start, durable, h.frames)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDurablePositionSynced: at file sync level >= 1 the durable position
// is the recorded position and SyncTo syncs nothing more.
func TestDurablePositionSynced(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, fs, dir, crashOptions(1, 64<<10, clock.now))
	start := int64(crashTermLength + 2048)
	h := newHarness(t, crashTermLength, 2048, 9, 1, start)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img})
	if err != nil {
		t.Fatal(err)
	}
	pos := h.run(rand.New(rand.NewPCG(5, 6)), r, 2*crashTermLength)
	if d := r.DurablePosition(); d != pos {
		t.Fatalf("durable position %d, recorded %d", d, pos)
	}
	if d, err := r.SyncTo(pos); err != nil || d != pos {
		t.Fatalf("SyncTo(%d) = %d, %v", pos, d, err)
	}
	checkDurable(t, fs.(*vfs.MemFS), dir, r.ID(), start, pos, h.frames)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkDurable crashes a copy of mem keeping no unsynced write, opens it
// and checks that recording id replays every published frame before
// durable, byte for byte.
func checkDurable(t *testing.T, mem *vfs.MemFS, dir string, id, start, durable int64, frames []published) {
	t.Helper()
	crashed := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 0})
	clock := &testClock{ms: 1_800_000_000_000}
	opts := crashOptions(0, 64<<10, clock.now)
	opts.CatalogSyncLevel = SyncData
	a, err := Open(crashed, dir, opts)
	if err != nil {
		if durable == start {
			return // nothing was made durable: a clean refusal is all we ask
		}
		t.Fatalf("open after a crash with durable position %d: %v", durable, err)
	}
	defer a.Close()
	d, err := a.Descriptor(id)
	if err != nil {
		t.Fatal(err)
	}
	if d.StopPosition < durable {
		t.Fatalf("after a crash the recording stops at %d, before the durable position %d", d.StopPosition, durable)
	}
	var want []published
	for _, f := range frames {
		if f.pos+AlignedFrameLength(int32(len(f.frame))) <= durable {
			want = append(want, f)
		}
	}
	sameFrames(t, replayAll(t, a, id, start, durable), want)
}

// TestLevel0SyncFailureSticky fails one level-0 sync of a segment file under
// each policy and checks the failure is sticky: the durable position stays,
// every later Record and SyncTo returns the first failure although syncing
// works again, and Stop leaves the catalog's stop position at -1 instead of
// the position reached in memory.
func TestLevel0SyncFailureSticky(t *testing.T) {
	const segLen = 128 << 10
	cases := []struct {
		name     string
		opts     func(*Options)
		syncEach bool
		syncTo   bool
	}{
		{"roll over", func(o *Options) { o.SyncOnRollOver = true }, false, false},
		{"each record", func(o *Options) { o.SyncOnRollOver = true }, true, false},
		{"background", func(o *Options) { o.SegmentLength = 1 << 20; o.BackgroundSyncEvery = 16 << 10 }, false, false},
		{"sync to", nil, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			if err := mem.MkdirAll("arch"); err != nil {
				t.Fatal(err)
			}
			var armed, failed atomic.Bool
			inj := vfs.NewInjector(mem, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpSync), Before: func(_ vfs.Op, name string) error {
				if armed.Load() && strings.HasSuffix(name, ".rec") && failed.CompareAndSwap(false, true) {
					return errors.New("injected EIO on fsync")
				}
				return nil
			}})
			clock := &testClock{ms: 1_700_000_000_000}
			opts := crashOptions(0, 64<<10, clock.now)
			opts.CatalogSyncLevel = SyncData
			if tc.opts != nil {
				tc.opts(&opts)
			}
			a := openTest(t, inj, "arch", opts)
			start := int64(crashTermLength + 2048)
			h := newHarness(t, crashTermLength, 2048, 9, 1, start)
			r, err := a.StartRecording(Source{Log: h.log, Image: h.img, SyncEachRecord: tc.syncEach})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			armed.Store(true)
			// Record until the failure is reported (bounded: the policy
			// syncs within a few segments).
			var first error
			for i := 0; i < 200 && first == nil; i++ {
				pos, err := h.runErr(rng, r, segLen/4)
				if err == nil && tc.syncTo {
					_, err = r.SyncTo(pos)
				}
				if err == nil && !failed.Load() {
					continue
				}
				if err == nil { // the background sync failed: a later Record says so
					for j := 0; j < 1000 && err == nil; j++ {
						time.Sleep(time.Millisecond)
						_, err = r.Record(r.Position())
					}
				}
				first = err
			}
			if first == nil || !failed.Load() {
				t.Fatalf("the injected sync failure was never reported (failed %v)", failed.Load())
			}
			durable := r.DurablePosition()
			// Syncing works again; the failure must still be returned.
			if _, err := r.Record(r.Position() + 1); err == nil {
				t.Fatal("Record after a failed sync succeeded")
			}
			if d, err := r.SyncTo(r.Position()); err == nil || d != durable {
				t.Fatalf("SyncTo after a failed sync: %d, %v (durable %d)", d, err, durable)
			}
			if r.DurablePosition() != durable {
				t.Fatalf("durable position moved from %d to %d after the failure", durable, r.DurablePosition())
			}
			id := r.ID()
			if err := r.Stop(); err == nil {
				t.Fatal("Stop after a failed sync reported no error")
			}
			d, err := a.Descriptor(id)
			if err != nil {
				t.Fatal(err)
			}
			if d.StopPosition != NullPosition {
				t.Fatalf("stop position %d written after a failed sync (durable %d): want -1, settled by the next Open", d.StopPosition, durable)
			}
			_ = a.Close()
		})
	}
}
