package archive

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

const (
	rmTerm = 64 << 10
	rmSeg  = 128 << 10
)

func removeOptions(level int, clock func() int64) Options {
	return Options{SegmentLength: rmSeg, FileIoMaxLength: 64 << 10, FileSyncLevel: SyncLevel(level), CatalogSyncLevel: SyncLevel(level),
		Clock: clock, CatalogCapacity: 4096, MarkErrorBufferLength: 4096}
}

// recordTerms records terms full terms of 4096-byte frames from start and
// returns the active recording and its harness.
func recordTerms(t testing.TB, a *Archive, start int64, terms int, now func() int64) (*Recording, *harness) {
	t.Helper()
	h := newHarness(t, rmTerm, 8192, 3, 1, start)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	fillTerms(t, h, r, terms)
	return r, h
}

func exists(fs vfs.FS, dir, name string) bool {
	_, err := fs.Stat(fs.Join(dir, name))
	return err == nil
}

func wantRule(t testing.TB, err error, rule DetachRule) {
	t.Helper()
	var de *DetachError
	if !errors.As(err, &de) || de.Rule != rule || !errors.Is(err, ErrInvalidDetach) {
		t.Fatalf("got %v, want a refusal for rule %q", err, rule)
	}
	if !strings.Contains(err.Error(), rule.String()) {
		t.Fatalf("error %q does not name the rule %q", err, rule)
	}
}

// TestDetachRules: every rule of isValidDetach is refused with its own
// error, a valid detach moves the catalog start (durably) and leaves the
// files, and an active recording may be detached up to its active segment.
func TestDetachRules(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, fs, dir, removeOptions(1, clock.now))
	start := int64(4096)
	r, h := recordTerms(t, a, start, 6, nil)
	id := r.ID()
	stop := r.Position() // 6 terms + 4096: in the segment at 3*rmSeg
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Detach(id, 100); err == nil {
		t.Fatal("detach to 100 accepted")
	} else {
		wantRule(t, err, DetachNotSegmentBoundary)
	}
	wantRule(t, a.Detach(id, rmTerm), DetachNotSegmentBoundary)
	wantRule(t, a.Detach(id, -rmSeg), DetachNotSegmentBoundary)
	wantRule(t, a.Detach(id, 0), DetachNotAfterStart)
	wantRule(t, a.Detach(id, 4*rmSeg), DetachPastStopSegment)
	if err := a.Detach(99, rmSeg); !errors.Is(err, ErrRecordingNotFound) {
		t.Fatalf("unknown recording: %v", err)
	}

	// A replay below the new start blocks it until it has moved past.
	rp, err := a.StartReplay(id, start, NullPosition)
	if err != nil {
		t.Fatal(err)
	}
	wantRule(t, a.Detach(id, rmSeg), DetachReplaying)
	for rp.Position() < rmSeg {
		if _, err := rp.Poll(func(int64, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	wantRule(t, a.Detach(id, 3*rmSeg), DetachReplaying)
	if err := a.Detach(id, rmSeg); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := rp.Poll(func(int64, []byte) error { return nil }); err != nil {
			break
		}
	}
	if rp.Position() != stop {
		t.Fatalf("replay across the detach stopped at %d, want %d", rp.Position(), stop)
	}
	rp.Close()
	d, _ := a.Catalog().Descriptor(id)
	if d.StartPosition != rmSeg || !exists(fs, dir, SegmentFileName(id, 0)) {
		t.Fatalf("start %d; first segment kept: %v", d.StartPosition, exists(fs, dir, SegmentFileName(id, 0)))
	}
	wantRule(t, a.Detach(id, rmSeg), DetachNotAfterStart)
	if err := a.Detach(id, 3*rmSeg); err != nil { // the stop segment's base
		t.Fatal(err)
	}
	var want []published
	for _, f := range h.frames {
		if f.pos >= 3*rmSeg {
			want = append(want, f)
		}
	}
	sameFrames(t, replayAll(t, a, id, 3*rmSeg, NullPosition), want)
	if _, err := a.StartReplay(id, 2*rmSeg, NullPosition); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("replay below the new start: %v", err)
	}

	// An active recording: up to the base of the segment being written.
	h2 := newHarness(t, rmTerm, 8192, 3, 2, stop)
	r2, err := a.ExtendRecording(id, Source{Log: h2.log, Image: h2.img})
	if err != nil {
		t.Fatal(err)
	}
	fillTerms(t, h2, r2, 3) // to 9 terms + 4096: active segment at 4*rmSeg
	wantRule(t, a.Detach(id, 5*rmSeg), DetachActiveSegment)
	if err := a.Detach(id, 4*rmSeg); err != nil {
		t.Fatal(err)
	}
	if r2.StartPosition() != 4*rmSeg {
		t.Fatalf("active recording start %d", r2.StartPosition())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Detach(id, 4*rmSeg); !errors.Is(err, ErrArchiveClosed) {
		t.Fatalf("after close: %v", err)
	}
	a = openTest(t, fs, dir, removeOptions(1, clock.now))
	defer a.Close()
	if d, _ := a.Catalog().Descriptor(id); d.StartPosition != 4*rmSeg {
		t.Fatalf("start after reopen %d", d.StartPosition)
	}
	for b := int64(0); b <= 4*rmSeg; b += rmSeg {
		if !exists(fs, dir, SegmentFileName(id, b)) {
			t.Fatalf("detach removed %s", SegmentFileName(id, b))
		}
	}
}

// TestDeleteTwoPhase: DeleteDetached renames every file below the start at
// once; readers can still read them (open handles and the .deleted name)
// until the delay has passed, then DeleteStep unlinks one file per call.
func TestDeleteTwoPhase(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fs, dir := fc.make(t)
			clock := &testClock{ms: 1_700_000_000_000}
			a := openTest(t, fs, dir, removeOptions(1, clock.now))
			defer a.Close()
			r, h := recordTerms(t, a, 0, 8, nil)
			id := r.ID()
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			if n, err := a.DeleteDetached(id); n != 0 || err != nil {
				t.Fatalf("nothing detached: %d %v", n, err)
			}
			// A reader holding the first segment open.
			held, err := fs.Open(fs.Join(dir, SegmentFileName(id, 0)))
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			orig := make([]byte, rmSeg)
			if err := readFull(held, orig, 0); err != nil {
				t.Fatal(err)
			}
			if err := a.Detach(id, 3*rmSeg); err != nil {
				t.Fatal(err)
			}
			n, err := a.DeleteDetached(id)
			if n != 3 || err != nil {
				t.Fatalf("renamed %d: %v", n, err)
			}
			for b := int64(0); b < 3*rmSeg; b += rmSeg {
				name := SegmentFileName(id, b)
				if exists(fs, dir, name) || !exists(fs, dir, name+DeletedSuffix) {
					t.Fatalf("%s not renamed", name)
				}
			}
			for b := int64(3 * rmSeg); b <= 4*rmSeg; b += rmSeg {
				if !exists(fs, dir, SegmentFileName(id, b)) {
					t.Fatalf("%s above the start is gone", SegmentFileName(id, b))
				}
			}
			if _, err := a.DeleteDetached(id); !errors.Is(err, ErrDeleteInProgress) {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := a.Purge(id, 4*rmSeg); !errors.Is(err, ErrDeleteInProgress) {
				t.Fatalf("purge during delete: %v", err)
			}
			if !a.DeleteInProgress(id) || len(a.PendingDeletes()) != 3 {
				t.Fatalf("pending %+v", a.PendingDeletes())
			}
			// Readers still read: the open handle and the new name.
			got := make([]byte, rmSeg)
			if err := readFull(held, got, 0); err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("held reader after rename: %v", err)
			}
			f, err := fs.Open(fs.Join(dir, SegmentFileName(id, 0)+DeletedSuffix))
			if err != nil {
				t.Fatal(err)
			}
			if err := readFull(f, got, 0); err != nil || !bytes.Equal(got, orig) {
				t.Fatalf("reader of the .deleted name: %v", err)
			}
			f.Close()
			// Not before the delay.
			clock.ms += DefaultDeleteDelay.Milliseconds() - 100
			if n, err := a.DeleteStep(); n != 0 || err != nil {
				t.Fatalf("step before the delay: %d %v", n, err)
			}
			clock.ms += 200
			for i := 1; i <= 3; i++ {
				if n, err := a.DeleteStep(); n != 1 || err != nil {
					t.Fatalf("step %d: %d %v", i, n, err)
				}
				left := 0
				for b := int64(0); b < 3*rmSeg; b += rmSeg {
					if exists(fs, dir, SegmentFileName(id, b)+DeletedSuffix) {
						left++
					}
				}
				if left != 3-i {
					t.Fatalf("after step %d: %d files left", i, left)
				}
			}
			if n, err := a.DeleteStep(); n != 0 || err != nil || a.DeleteInProgress(id) {
				t.Fatalf("extra step: %d %v", n, err)
			}
			if _, err := fs.Open(fs.Join(dir, SegmentFileName(id, 0)+DeletedSuffix)); !errors.Is(err, vfs.ErrNotExist) {
				t.Fatalf("the .deleted name after the unlink: %v", err)
			}
			var want []published
			for _, f := range h.frames {
				if f.pos >= 3*rmSeg {
					want = append(want, f)
				}
			}
			sameFrames(t, replayAll(t, a, id, 3*rmSeg, NullPosition), want)
			verifyOK(t, fs, dir)
		})
	}
}

// TestPurge: Purge checks every rule before changing anything, then
// detaches and renames; DrainDeletes unlinks; the archive verifies clean.
func TestPurge(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	opts := removeOptions(2, clock.now)
	opts.DeleteDelay = -1 // no wait
	a := openTest(t, fs, dir, opts)
	r, h := recordTerms(t, a, 2*rmTerm+4096, 8, nil)
	id := r.ID() // start base 2*rmTerm = rmSeg
	rp, err := a.StartReplay(id, r.StartPosition(), NullPosition)
	if err != nil {
		t.Fatal(err)
	}
	wantRule(t, func() error { _, err := a.Purge(id, 3*rmSeg); return err }(), DetachReplaying)
	rp.Close()
	wantRule(t, func() error { _, err := a.Purge(id, rmSeg); return err }(), DetachNotAfterStart)
	wantRule(t, func() error { _, err := a.Purge(id, 6*rmSeg); return err }(), DetachActiveSegment)
	if d, _ := a.Catalog().Descriptor(id); d.StartPosition != 2*rmTerm+4096 || !exists(fs, dir, SegmentFileName(id, rmSeg)) {
		t.Fatal("a refused purge changed something")
	}
	// Active recording: purge up to the active segment.
	n, err := a.Purge(id, 4*rmSeg)
	if n != 3 || err != nil {
		t.Fatalf("purge: %d %v", n, err)
	}
	if u, err := a.DrainDeletes(false); u != 3 || err != nil {
		t.Fatalf("drain: %d %v", u, err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List(dir)
	for _, name := range names {
		if strings.HasSuffix(name, DeletedSuffix) {
			t.Fatalf("left %s", name)
		}
		if _, base, err := ParseSegmentFileName(name); err == nil && base < 4*rmSeg {
			t.Fatalf("left %s", name)
		}
	}
	var want []published
	for _, f := range h.frames {
		if f.pos >= 4*rmSeg {
			want = append(want, f)
		}
	}
	sameFrames(t, replayAll(t, a, id, 4*rmSeg, NullPosition), want)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, fs, dir)
}

// TestDeleteLeftoversOnOpen: files renamed but not unlinked when the
// archive closed are scheduled again by Open (never renamed back); a
// .deleted file the catalog still covers is left alone.
func TestDeleteLeftoversOnOpen(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, fs, dir, removeOptions(1, clock.now))
	r, _ := recordTerms(t, a, 0, 8, nil)
	id := r.ID()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Purge(id, 2*rmSeg); n != 2 || err != nil {
		t.Fatalf("purge %d %v", n, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// A foreign rename of a segment the catalog covers.
	stray := SegmentFileName(id, 3*rmSeg)
	if err := fs.Rename(fs.Join(dir, stray), fs.Join(dir, stray+DeletedSuffix)); err != nil {
		t.Fatal(err)
	}
	a = openTest(t, fs, dir, removeOptions(1, clock.now))
	defer a.Close()
	p := a.PendingDeletes()
	if len(p) != 2 || p[0].Name != SegmentFileName(id, 0)+DeletedSuffix || p[1].Name != SegmentFileName(id, rmSeg)+DeletedSuffix {
		t.Fatalf("pending after reopen %+v", p)
	}
	if exists(fs, dir, SegmentFileName(id, 0)) {
		t.Fatal("a deleted segment came back")
	}
	clock.ms += DefaultDeleteDelay.Milliseconds() + 1
	if n, err := a.DrainDeletes(false); n != 2 || err != nil {
		t.Fatalf("drain %d %v", n, err)
	}
	if !exists(fs, dir, stray+DeletedSuffix) {
		t.Fatal("the .deleted file above the start was unlinked")
	}
	ds, err := DeletedSegments(fs, dir)
	if err != nil || len(ds) != 1 || ds[0].Name != stray+DeletedSuffix || ds[0].Size != rmSeg {
		t.Fatalf("DeletedSegments %+v %v", ds, err)
	}
}

// crashFS is an injector that calls hook before every operation that
// changes the file system or makes a change durable (create, write, sync,
// rename, remove, directory sync), so a test can crash between any two of
// them.
type crashFS struct {
	*vfs.Injector
	hook func()
}

func newCrashFS(fs vfs.FS) *crashFS {
	c := &crashFS{}
	c.Injector = vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{
		Ops: vfs.Ops(vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpRemove, vfs.OpSyncDir),
		Before: func(vfs.Op, string) error {
			if c.hook != nil {
				c.hook()
			}
			return nil
		}})
	return c
}

// TestRemoveCrash crashes (memory FS, random survival of unsynced changes)
// before every write, sync, rename, unlink and directory sync of a run of
// detach, delete, steps and purge, on data recorded and synced beforehand.
// After each crash the reopened archive's catalog start and files agree:
// every segment from the start's to the stop's is there at full length and
// replays as published, Verify finds nothing missing, torn or invalid
// (files below the start are only orphans), and finishing the delete
// leaves an archive Verify accepts.
func TestRemoveCrash(t *testing.T) {
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		level := sc.Level
		mem := vfs.NewMem()
		if err := mem.MkdirAll("arch"); err != nil {
			t.Fatal(err)
		}
		if err := mem.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		clock := &testClock{ms: 1_700_000_000_000}
		// The data is recorded and synced at level 1 first, so that
		// whatever a crash loses at level 0 is the removal's doing.
		a := openTest(t, mem, "arch", removeOptions(1, clock.now))
		r, h := recordTerms(t, a, 4096, 10, nil)
		id, stop := r.ID(), r.Position()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(level), 9))
		cfs := newCrashFS(mem)
		crashes := 0
		cfs.hook = func() {
			crashes++
			clone := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: rng.IntN(101), Rand: rand.New(rand.NewPCG(uint64(crashes), 1))})
			checkRemoveCrash(t, clone, level, id, stop, h.frames, clock.ms+DefaultMarkTimeout.Milliseconds()+1)
		}
		opts := removeOptions(level, clock.now)
		opts.DeleteDelay = -1
		a = openTest(t, cfs, "arch", opts)
		steps := []func() error{
			func() error { return a.Detach(id, 2*rmSeg) },
			func() error { _, err := a.DeleteDetached(id); return err },
			func() error { _, err := a.DeleteStep(); return err },
			func() error { _, err := a.Purge(id, 3*rmSeg); return err }, // refused: delete in progress
			func() error { _, err := a.DrainDeletes(false); return err },
			func() error { _, err := a.Purge(id, 4*rmSeg); return err },
			func() error { _, err := a.DeleteStep(); return err },
			func() error { return a.Close() },
		}
		for i, step := range steps {
			if err := step(); err != nil && !(i == 3 && errors.Is(err, ErrDeleteInProgress)) {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		cfs.hook()
		t.Logf("%d crash points", crashes)
	})
}

func checkRemoveCrash(t *testing.T, fs *vfs.MemFS, level int, id, stop int64, frames []published, nowMs int64) {
	t.Helper()
	clock := &testClock{ms: nowMs}
	opts := removeOptions(level, clock.now)
	opts.DeleteDelay = -1
	a, err := Open(fs, "arch", opts)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	d, err := a.Catalog().Descriptor(id)
	if err != nil || d.StopPosition != stop {
		t.Fatalf("descriptor after crash %+v %v", d, err)
	}
	startBase := SegmentFileBasePosition(d.StartPosition, d.StartPosition, rmTerm, rmSeg)
	for b := startBase; b <= SegmentFileBasePosition(d.StartPosition, stop, rmTerm, rmSeg); b += rmSeg {
		if size, err := fs.Stat(fs.Join("arch", SegmentFileName(id, b))); err != nil || size != rmSeg {
			t.Fatalf("start %d: segment %d: %d bytes, %v", d.StartPosition, b, size, err)
		}
	}
	var want []published
	for _, f := range frames {
		if f.pos >= d.StartPosition {
			want = append(want, f)
		}
	}
	sameFrames(t, replayAll(t, a, id, d.StartPosition, NullPosition), want)
	rep, err := Verify(fs, "arch", VerifyOptions{AllSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range rep.Recordings {
		if rr.Status == StatusInvalid || rr.Status == StatusTornTail || len(rr.MissingSegments) > 0 || len(rr.WrongSizeSegments) > 0 {
			t.Fatalf("start %d: verify %v %v", d.StartPosition, rr.Status, rr.Problems)
		}
		for _, o := range rr.OrphanSegments {
			if _, b, _ := ParseSegmentFileName(o); b >= startBase {
				t.Fatalf("orphan %s above the start %d", o, d.StartPosition)
			}
		}
	}
	// Finish what the crash interrupted.
	if _, err := a.DeleteDetached(id); err != nil && !errors.Is(err, ErrDeleteInProgress) {
		t.Fatal(err)
	}
	if _, err := a.DrainDeletes(true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteDetached(id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DrainDeletes(true); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	verifyOK(t, fs, "arch")
}

// TestRemoveInjectedErrors sweeps an injected failure over every
// file-system operation of a scripted run (open, detach, delete, steps,
// purge, steps, close) on a recorded archive: every failure surfaces as an
// error wrapping the injected one, and reopening gives a catalog start and
// files that agree.
func TestRemoveInjectedErrors(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("arch"); err != nil {
		t.Fatal(err)
	}
	if err := mem.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{ms: 1_700_000_000_000}
	a := openTest(t, mem, "arch", removeOptions(1, clock.now))
	r, h := recordTerms(t, a, 0, 10, nil)
	id, stop := r.ID(), r.Position()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); ; i++ {
		base := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		inj := vfs.NewInjector(base, vfs.AllOps, i)
		opts := removeOptions(1, clock.now)
		opts.DeleteDelay = -1
		err := removeScript(inj, opts, id)
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
			if !errors.As(injected, &ie) || (ie.Op != vfs.OpRead && ie.Op != vfs.OpOpen && ie.Op != vfs.OpStat) {
				t.Fatalf("op %d (%v): run succeeded", i, injected)
			}
		} else if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("op %d (%v): error does not wrap the injected one: %v", i, injected, err)
		}
		clock.ms += DefaultMarkTimeout.Milliseconds() + 1
		checkRemoveCrash(t, base, 1, id, stop, h.frames, clock.ms)
	}
}

func removeScript(fs vfs.FS, opts Options, id int64) (err error) {
	a, err := Open(fs, "arch", opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.Close()) }()
	if err := a.Detach(id, 2*rmSeg); err != nil {
		return err
	}
	if _, err := a.DeleteDetached(id); err != nil {
		return err
	}
	if _, err := a.DeleteStep(); err != nil {
		return err
	}
	if _, err := a.Purge(id, 3*rmSeg); !errors.Is(err, ErrDeleteInProgress) {
		return fmt.Errorf("purge during a delete: %w", err)
	}
	if _, err := a.DrainDeletes(false); err != nil {
		return err
	}
	if _, err := a.Purge(id, 3*rmSeg); err != nil {
		return err
	}
	for a.DeleteInProgress(id) {
		if _, err := a.DeleteStep(); err != nil {
			return err
		}
	}
	return nil
}

// freeSpace is the free space a test sets for an injector's FreeBytes.
type freeSpace struct {
	free uint64
	err  error
}

// TestRetentionProposals: the age, size and free-disk rules propose
// segment-aligned cutoffs that never reach past the active segment or the
// stop segment, only when the check interval has passed, and change
// nothing until a caller purges.
func TestRetentionProposals(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("arch"); err != nil {
		t.Fatal(err)
	}
	ffs := &freeSpace{free: 1 << 40}
	clock := &testClock{ms: 1_700_000_000_000}
	opts := removeOptions(1, clock.now)
	opts.Retention = RetentionPolicy{MaxAge: time.Hour, CheckInterval: time.Minute}
	a := openTest(t, vfs.NewInjector(mem, 0, -1).WithFreeBytes(func(string) (uint64, error) { return ffs.free, ffs.err }), "arch", opts)
	defer a.Close()
	// Two terms (one segment) per hour of source time, 10 terms: segments
	// 0..4 hold hours 0..4, the stop (10 terms) is in the empty segment 5.
	srcMs := int64(1_600_000_000_000)
	h := newHarness(t, rmTerm, 8192, 3, 1, 0)
	r, err := a.StartRecording(Source{Log: h.log, Image: h.img, Now: func() int64 { return srcMs }})
	if err != nil {
		t.Fatal(err)
	}
	for seg := range 5 {
		srcMs = 1_600_000_000_000 + int64(seg)*time.Hour.Milliseconds()
		fillTerms(t, h, r, 2)
	}
	id := r.ID()
	hour := time.Hour.Milliseconds()
	now := 1_600_000_000_000 + 2*hour + hour/2 // segments 0 and 1 are over an hour old, 2 is not
	props, err := a.Proposals(now)
	if err != nil || len(props) != 1 {
		t.Fatalf("proposals %+v %v", props, err)
	}
	// The active segment is 5 (position 10 terms): age may take 0..1.
	if p := props[0]; p.RecordingID != id || p.NewStart != 2*rmSeg || p.Reasons != RetainAge || p.Segments != 2 || p.Bytes != 2*rmSeg {
		t.Fatalf("age proposal %+v", p)
	}
	if props, _ := a.Proposals(now + 1000); props != nil {
		t.Fatalf("evaluated again within the check interval: %+v", props)
	}
	// Everything old: never the active segment.
	props, _ = a.Proposals(now + 100*hour)
	if len(props) != 1 || props[0].NewStart != 5*rmSeg {
		t.Fatalf("all old %+v", props)
	}
	if d, _ := a.Catalog().Descriptor(id); d.StartPosition != 0 || !exists(mem, "arch", SegmentFileName(id, 0)) {
		t.Fatal("a proposal changed something")
	}

	// Size: keep at most 2 segments of files (segments 4 and 5).
	a.opts.Retention = RetentionPolicy{MaxBytes: 2 * rmSeg, CheckInterval: time.Minute}
	props, _ = a.Proposals(now + 200*hour)
	if len(props) != 1 || props[0].NewStart != 4*rmSeg || props[0].Reasons != RetainSize {
		t.Fatalf("size %+v", props)
	}
	a.opts.Retention.MaxBytes = 100 * rmSeg
	if props, _ := a.Proposals(now + 300*hour); props != nil {
		t.Fatalf("size within the limit %+v", props)
	}

	// Free disk: 1.5 segments short -> the 2 oldest segments.
	a.opts.Retention = RetentionPolicy{MinFreeBytes: 10 * rmSeg, CheckInterval: time.Minute}
	ffs.free = 8*rmSeg + rmSeg/2
	props, _ = a.Proposals(now + 400*hour)
	if len(props) != 1 || props[0].NewStart != 2*rmSeg || props[0].Reasons != RetainFreeDisk {
		t.Fatalf("free disk %+v", props)
	}
	ffs.free = 0 // nothing is enough: up to the active segment only
	props, _ = a.Proposals(now + 500*hour)
	if len(props) != 1 || props[0].NewStart != 5*rmSeg {
		t.Fatalf("free disk, full %+v", props)
	}
	ffs.err = errors.New("statfs failed")
	if _, err := a.Proposals(now + 600*hour); err == nil {
		t.Fatal("free space error not reported")
	}
	ffs.err = nil

	// Stopped: never above the stop segment; a second recording competes
	// for the free-disk rule by age.
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	srcMs = 1_600_000_000_000 + 10*hour
	h2 := newHarness(t, rmTerm, 8192, 3, 2, 0)
	r2, err := a.StartRecording(Source{Log: h2.log, Image: h2.img, Now: func() int64 { return srcMs }})
	if err != nil {
		t.Fatal(err)
	}
	fillTerms(t, h2, r2, 4)
	ffs.free = 9 * rmSeg // one segment short: the oldest is recording 1's first
	props, _ = a.Proposals(now + 700*hour)
	if len(props) != 1 || props[0].RecordingID != id || props[0].NewStart != rmSeg {
		t.Fatalf("free disk over two recordings %+v", props)
	}
	ffs.free = 0
	props, _ = a.Proposals(now + 800*hour)
	if len(props) != 2 || props[0].NewStart != 5*rmSeg || props[1].RecordingID != r2.ID() || props[1].NewStart != 2*rmSeg {
		t.Fatalf("free disk, full, two recordings %+v", props)
	}
	// Approve: purge the proposals.
	for _, p := range props {
		if _, err := a.Purge(p.RecordingID, p.NewStart); err != nil {
			t.Fatal(err)
		}
	}
	if props, _ := a.Proposals(now + 900*hour); props != nil {
		t.Fatalf("after purge %+v", props)
	}
	if got := a.PendingDeletes(); len(got) != 7 {
		t.Fatalf("pending %+v", got)
	}
}

// TestRetentionFreeSpaceFS: the free-disk rule needs a file system that
// tells its free space; the OS one does through statfs.
func TestRetentionFreeSpaceFS(t *testing.T) {
	opts := Options{Retention: RetentionPolicy{MinFreeBytes: 1}}
	if _, err := Open(vfs.NewMem(), "arch", opts); !errors.Is(err, ErrFreeSpaceUnsupported) {
		t.Fatalf("memory FS without FreeBytes: %v", err)
	}
	free, err := FreeBytes(vfs.Default, t.TempDir())
	if err != nil || free == 0 {
		t.Fatalf("statfs: %d %v", free, err)
	}
	if _, err := FreeBytes(vfs.NewMem(), "x"); !errors.Is(err, ErrFreeSpaceUnsupported) {
		t.Fatal(err)
	}
	if _, err := Open(vfs.NewMem(), "arch", Options{Retention: RetentionPolicy{MaxAge: -1}}); err == nil {
		t.Fatal("negative max age accepted")
	}
}
