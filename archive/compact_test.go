package archive

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// compactFixture builds an archive in a fresh memory FS holding seven
// stopped recordings of one term each: 1, 3 and 5 purged (DELETED, their
// files unlinked), 4 marked INVALID (its files kept), the rest VALID. It
// returns the FS, the directory and the options.
func compactFixture(t *testing.T) (*vfs.MemFS, string, Options) {
	t.Helper()
	fs := vfs.NewMem()
	dir := "arch"
	clock := &testClock{ms: 1_700_000_000_000}
	opts := removeOptions(1, clock.now)
	opts.DeleteDelay = -1
	a := openTest(t, fs, dir, opts)
	for i := 0; i < 7; i++ {
		r, _ := recordTerms(t, a, 0, 1, nil)
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{1, 3, 5} {
		if _, err := a.PurgeRecording(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.DrainDeletes(true); err != nil {
		t.Fatal(err)
	}
	if err := a.Catalog().ChangeState(4, StateInvalid); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return fs, dir, opts
}

// catalogImage reads the catalog file and returns its bytes and parse.
func catalogImage(t *testing.T, fs vfs.FS, dir string) ([]byte, *Catalog) {
	t.Helper()
	b, err := vfs.ReadFile(fs, fs.Join(dir, CatalogFileName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCatalog(slices.Clone(b), "catalog", true)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// entryBytes are the bytes (header, descriptor, padding) of each entry of
// c in file order, keyed by id and state.
func entryBytes(c *Catalog) map[string][]byte {
	out := map[string][]byte{}
	for _, r := range c.entries {
		e, _ := decodeEntry(c.buf, r.offset)
		out[fmt.Sprintf("%d/%s", r.id, e.State)] = c.buf[r.offset : r.offset+r.frame]
	}
	return out
}

// TestCompactCatalog: the online compaction drops the DELETED entries and
// keeps every other entry byte for byte, in order, with nextRecordingId;
// the file keeps its length; the next recording gets the next id (never a
// reused one); a second compaction finds nothing. The offline one with
// Invalid also drops the INVALID entry and unlinks its files.
func TestCompactCatalog(t *testing.T) {
	fs, dir, opts := compactFixture(t)
	before, c0 := catalogImage(t, fs, dir)
	if n := c0.Counts(); n.Valid != 3 || n.Deleted != 3 || n.Invalid != 1 {
		t.Fatalf("fixture counts %+v", n)
	}
	a := openTest(t, fs, dir, opts)
	res, err := a.CompactCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range res.Dropped {
		ids = append(ids, e.Descriptor.RecordingID)
	}
	if !slices.Equal(ids, []int64{1, 3, 5}) || res.Kept != 4 || res.NextRecordingID != 7 {
		t.Fatalf("dropped %v kept %d next %d", ids, res.Kept, res.NextRecordingID)
	}
	after, c1 := catalogImage(t, fs, dir)
	if len(after) != len(before) || res.Capacity != int64(len(before)) {
		t.Fatalf("length %d, was %d (capacity %d)", len(after), len(before), res.Capacity)
	}
	if !bytes.Equal(after[:8], before[:8]) || !bytes.Equal(after[16:CatalogHeaderLength], before[16:CatalogHeaderLength]) || c1.NextRecordingID() != 7 {
		t.Fatalf("header changed: %x -> %x", before[:CatalogHeaderLength], after[:CatalogHeaderLength])
	}
	old, kept := entryBytes(c0), entryBytes(c1)
	var order []int64
	for _, r := range c1.entries {
		order = append(order, r.id)
	}
	if !slices.Equal(order, []int64{0, 2, 4, 6}) {
		t.Fatalf("kept %v", order)
	}
	for k, b := range kept {
		if !bytes.Equal(b, old[k]) {
			t.Fatalf("entry %s changed", k)
		}
	}
	if !allZero(after[c1.nextOffset:]) || int64(c1.nextOffset) != res.UsedAfter {
		t.Fatal("not zero after the entries")
	}
	// The in-memory catalog is the new file's.
	if a.Catalog().EndOffset() != res.UsedAfter || a.Catalog().CountValid() != 3 {
		t.Fatalf("in memory: end %d, valid %d", a.Catalog().EndOffset(), a.Catalog().CountValid())
	}
	if again, err := a.CompactCatalog(); err != nil || len(again.Dropped) != 0 {
		t.Fatalf("second compaction: %v %v", again, err)
	}
	r, _ := recordTerms(t, a, 0, 1, nil)
	if r.ID() != 7 {
		t.Fatalf("new recording id %d, want 7", r.ID())
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(fs, dir, VerifyOptions{AllSegments: true}); err != nil || !rep.OK() || len(rep.UnknownSegments) > 0 {
		t.Fatalf("verify after compaction: %+v %v", rep, err)
	}

	// Offline, with INVALID entries: recording 4 goes with its files.
	segs, _, _ := segmentIndex(fs, dir)
	if len(segs[4]) == 0 {
		t.Fatal("recording 4 has no files")
	}
	off, err := CompactCatalogDir(fs, dir, CompactOptions{Invalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Dropped) != 1 || off.Dropped[0].Descriptor.RecordingID != 4 || off.Dropped[0].State != StateInvalid {
		t.Fatalf("offline dropped %+v", off.Dropped)
	}
	for _, s := range segs[4] {
		if exists(fs, dir, s.Name) || !slices.Contains(off.RemovedFiles, s.Name) {
			t.Fatalf("%s not removed (%v)", s.Name, off.RemovedFiles)
		}
	}
	_, c2 := catalogImage(t, fs, dir)
	if c2.NextRecordingID() != 8 || c2.Counts().Total() != 4 {
		t.Fatalf("next %d counts %+v", c2.NextRecordingID(), c2.Counts())
	}
}

// TestCompactCatalogKeepsDeletedWithFiles: a DELETED entry whose segment
// files are still there (a purge interrupted before its renames) stays in
// an online compaction.
func TestCompactCatalogKeepsDeletedWithFiles(t *testing.T) {
	fs, dir, opts := compactFixture(t)
	a := openTest(t, fs, dir, opts)
	if err := a.Catalog().ChangeState(2, StateDeleted); err != nil {
		t.Fatal(err)
	}
	res, err := a.CompactCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Dropped {
		if e.Descriptor.RecordingID == 2 {
			t.Fatal("dropped the DELETED recording 2 whose files are there")
		}
	}
	if len(res.Dropped) != 3 {
		t.Fatalf("dropped %d", len(res.Dropped))
	}
	a.Close()
}

// catalogState renders what a catalog says: nextRecordingId and every
// entry (id, state, descriptor) in file order.
func catalogState(c *Catalog) string {
	var b strings.Builder
	fmt.Fprintf(&b, "next %d\n", c.NextRecordingID())
	for _, e := range c.Entries() {
		fmt.Fprintf(&b, "%s %+v\n", e.State, e.Descriptor)
	}
	return b.String()
}

// TestCompactCatalogCrash crashes an online and an offline compaction
// before each of their file operations in turn (keeping none, half or all
// of the unsynced changes), and fails each operation in turn: the archive
// then opens with the old catalog or the compacted one, nothing else; a
// leftover temporary file is removed and reported by that open; the next
// recording gets id 7 (no id reused); a failure is reported, except one
// that does no harm (the close of a file opened for reading), after which
// the compaction is complete and durable.
func TestCompactCatalogCrash(t *testing.T) {
	base, dir, opts := compactFixture(t)
	// The mark file is left alone: a failed Close would leave it live
	// (this process's pid), which is not what is tested here.
	opts.LeaveMarkFile = true
	_, c0 := catalogImage(t, base, dir)
	oldState := catalogState(c0)
	compact := func(fsys vfs.FS, offline bool) error {
		if offline {
			_, err := CompactCatalogDir(fsys, dir, CompactOptions{})
			return err
		}
		a, err := Open(fsys, dir, opts)
		if err != nil {
			return err
		}
		_, err = a.CompactCatalog()
		return errors.Join(err, a.Close())
	}
	var newState string
	{
		fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		if err := compact(fs, false); err != nil {
			t.Fatal(err)
		}
		_, c := catalogImage(t, fs, dir)
		newState = catalogState(c)
	}
	if newState == oldState {
		t.Fatal("the compaction changed nothing")
	}
	// check opens a crashed copy and returns which catalog it found.
	check := func(what string, clone *vfs.MemFS) string {
		t.Helper()
		hadTemp := exists(clone, dir, CompactTempName)
		a, err := Open(clone, dir, opts)
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		defer a.Close()
		if hadTemp && (a.RemovedCompactTemp() == "" || exists(clone, dir, CompactTempName)) {
			t.Fatalf("%s: the leftover temporary file was not removed and reported", what)
		}
		got := catalogState(a.Catalog())
		if got != oldState && got != newState {
			t.Fatalf("%s: catalog neither old nor new:\n%s", what, got)
		}
		r, _ := recordTerms(t, a, 0, 1, nil)
		if r.ID() != 7 {
			t.Fatalf("%s: new recording id %d", what, r.ID())
		}
		r.Stop()
		if got == oldState {
			return "old"
		}
		if hadTemp {
			return "new+temp"
		}
		return "new"
	}
	for _, offline := range []bool{false, true} {
		// Crashes before each operation.
		outcomes := map[string]int{}
		leftovers := 0
		for k := int64(0); ; k++ {
			fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
			var clones []*vfs.MemFS
			seen := int64(0)
			inj := vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{Ops: vfs.AllOps, Before: func(op vfs.Op, path string) error {
				if seen == k {
					for j, pct := range []int{0, 50, 100} {
						clones = append(clones, fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: rand.New(rand.NewPCG(uint64(k), uint64(j)))}))
					}
				}
				seen++
				return nil
			}})
			if err := compact(inj, offline); err != nil {
				t.Fatal(err)
			}
			if clones == nil {
				break
			}
			for j, c := range clones {
				if exists(c, dir, CompactTempName) {
					leftovers++
				}
				outcomes[check(fmt.Sprintf("offline %v crash before op %d (clone %d)", offline, k, j), c)]++
			}
		}
		t.Logf("offline %v: crashes found %v; %d left the temporary file", offline, outcomes, leftovers)
		if outcomes["old"] == 0 || outcomes["new"] == 0 || leftovers == 0 {
			t.Errorf("offline %v: the crashes did not reach every outcome", offline)
		}

		// Failures of each operation.
		points := 0
		for i := int64(0); ; i++ {
			fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
			inj := vfs.NewInjector(fs, vfs.AllOps, i)
			err := compact(inj, offline)
			if inj.Injected() == nil {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			points++
			if err != nil && !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("offline %v op %d (%v): error %v", offline, i, inj.Injected(), err)
			}
			for j, pct := range []int{0, 50, 100} {
				clone := fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: rand.New(rand.NewPCG(uint64(i), uint64(j)))})
				got := check(fmt.Sprintf("offline %v op %d (%v) failed, crash %d%%", offline, i, inj.Injected(), pct), clone)
				if err == nil && got == "old" {
					t.Fatalf("offline %v op %d (%v): no error reported, but the old catalog came back", offline, i, inj.Injected())
				}
			}
		}
		if points < 5 {
			t.Errorf("offline %v: only %d operations", offline, points)
		}
	}
}

// TestCompactCatalogLeftoverWithoutCatalog: a temporary file with no
// catalog beside it is no state a compaction leaves: refused, kept.
func TestCompactCatalogLeftoverWithoutCatalog(t *testing.T) {
	fs, dir, _ := compactFixture(t)
	if err := fs.Rename(fs.Join(dir, CatalogFileName), fs.Join(dir, CompactTempName)); err != nil {
		t.Fatal(err)
	}
	if _, err := removeCompactTemp(fs, dir); err == nil || !strings.Contains(err.Error(), "no compaction leaves that") {
		t.Fatalf("got %v", err)
	}
	if !exists(fs, dir, CompactTempName) {
		t.Fatal("the temporary file was removed")
	}
}

// TestCompactCatalogResolvesNextID: a header whose nextRecordingId is 0
// (read as the last entry's id + 1) gets the resolved value, so that
// dropping the last entries does not make their ids reusable.
func TestCompactCatalogResolvesNextID(t *testing.T) {
	fs, dir, opts := compactFixture(t)
	a := openTest(t, fs, dir, opts)
	if _, err := a.PurgeRecording(6); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DrainDeletes(true); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fs.OpenRW(fs.Join(dir, CatalogFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 8), 8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, c := catalogImage(t, fs, dir); c.NextRecordingID() != 7 {
		t.Fatalf("before: next %d", c.NextRecordingID())
	}
	res, err := CompactCatalogDir(fs, dir, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) != 4 {
		t.Fatalf("dropped %d", len(res.Dropped))
	}
	if _, c := catalogImage(t, fs, dir); c.NextRecordingID() != 7 {
		t.Fatalf("after: next %d, want 7", c.NextRecordingID())
	}
}

// TestCompactCatalogRemovesLeftIndex: a sidecar index a crash left of a
// purged recording (its purge removes it last) goes with the entry.
func TestCompactCatalogRemovesLeftIndex(t *testing.T) {
	fs, dir, opts := compactFixture(t)
	f, err := fs.Create(fs.Join(dir, IndexFileName(3)))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	a := openTest(t, fs, dir, opts)
	res, err := a.CompactCatalog()
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if exists(fs, dir, IndexFileName(3)) || !slices.Equal(res.RemovedFiles, []string{IndexFileName(3)}) {
		t.Fatalf("removed %v; %s still there: %v", res.RemovedFiles, IndexFileName(3), exists(fs, dir, IndexFileName(3)))
	}
}
