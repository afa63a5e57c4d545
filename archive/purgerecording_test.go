package archive

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestPurgeRecording: an active or replayed recording is refused; a stopped
// one becomes DELETED and its files are renamed to *.deleted and unlinked
// after the delay; files an interruption left of a DELETED recording are
// renamed by a second purge and scheduled again by Open; an INVALID
// recording is refused.
func TestPurgeRecording(t *testing.T) {
	fs, dir := fsCases[1].make(t)
	clock := &testClock{ms: 1_700_000_000_000}
	opts := removeOptions(1, clock.now)
	a := openTest(t, fs, dir, opts)
	r, _ := recordTerms(t, a, 0, 6, nil)
	id := r.ID()
	if _, err := a.PurgeRecording(id); !errors.Is(err, ErrRecordingActive) {
		t.Fatalf("purge of an active recording: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	rp, err := a.StartReplay(id, 0, NullPosition)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.PurgeRecording(id); err == nil || !strings.Contains(err.Error(), "replayed") {
		t.Fatalf("purge of a replayed recording: %v", err)
	}
	rp.Close()
	segs, _, _ := segmentIndex(fs, dir)
	files := segs[id]
	if len(files) < 2 {
		t.Fatalf("want several segments, got %v", files)
	}
	n, err := a.PurgeRecording(id)
	if err != nil || n != len(files) {
		t.Fatalf("purge: %d %v (files %v)", n, err, files)
	}
	if e, _ := a.Catalog().Entry(id); e.State != StateDeleted {
		t.Fatalf("state %v", e.State)
	}
	for _, f := range files {
		if exists(fs, dir, f.Name) || !exists(fs, dir, f.Name+DeletedSuffix) {
			t.Fatalf("%s not renamed", f.Name)
		}
	}
	if u, _ := a.DrainDeletes(false); u != 0 {
		t.Fatalf("unlinked %d before the delay", u)
	}
	clock.ms += DefaultDeleteDelay.Milliseconds()
	if u, err := a.DrainDeletes(false); u != len(files) || err != nil {
		t.Fatalf("after the delay: %d %v", u, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A DELETED recording whose files were not all renamed (a crash
	// between the state change and the renames): a second purge renames
	// the rest; its *.deleted files are scheduled by the next Open.
	a = openTest(t, fs, dir, opts)
	r2, _ := recordTerms(t, a, 0, 6, nil)
	id2 := r2.ID()
	if err := r2.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Catalog().ChangeState(id2, StateDeleted); err != nil {
		t.Fatal(err)
	}
	segs, _, _ = segmentIndex(fs, dir)
	first := segs[id2][0].Name
	if err := fs.Rename(fs.Join(dir, first), fs.Join(dir, first+DeletedSuffix)); err != nil {
		t.Fatal(err)
	}
	n, err = a.PurgeRecording(id2)
	if err != nil || n != len(segs[id2])-1 {
		t.Fatalf("second purge: %d %v", n, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	opts.DeleteDelay = -1
	a = openTest(t, fs, dir, opts)
	if u, err := a.DrainDeletes(false); u != len(segs[id2]) || err != nil {
		t.Fatalf("the next open scheduled %d of %d leftovers of a DELETED recording: %v", u, len(segs[id2]), err)
	}
	// INVALID: refused.
	r3, _ := recordTerms(t, a, 0, 1, nil)
	id3 := r3.ID()
	if err := r3.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Catalog().ChangeState(id3, StateInvalid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PurgeRecording(id3); err == nil || !strings.Contains(err.Error(), "INVALID") {
		t.Fatalf("purge of an INVALID recording: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpoint: after Open, Detach and Close (which rewrite the mark file
// and the catalog, and may create a stop segment), Restore puts the
// directory back byte for byte and consumes the copies; once a file is
// renamed for deletion Restore refuses and changes nothing; Discard and
// RemoveCheckpointBackups remove the copies.
func TestCheckpoint(t *testing.T) {
	mem := vfs.NewMem()
	dir := "arch"
	clock := &testClock{ms: 1_700_000_000_000}
	opts := removeOptions(1, clock.now)
	a := openTest(t, mem, dir, opts)
	r, _ := recordTerms(t, a, 0, 8, nil)
	id := r.ID()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	digest := func() map[string]string {
		d, err := vfs.Digests(mem, dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := digest()
	ck, err := NewCheckpoint(mem, dir, ".purge-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCheckpoint(mem, dir, ".purge-1"); err == nil {
		t.Fatal("a second checkpoint overwrote the first's copies")
	}
	if got := ck.Backups(); len(got) != 2 || got[0] != CatalogFileName+".purge-1" {
		t.Fatalf("backups %v", got)
	}
	clock.ms += 5000
	a = openTest(t, mem, dir, opts)
	if err := a.Detach(id, 2*rmSeg); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// A file created since the checkpoint is removed by Restore.
	f, err := mem.Create(mem.Join(dir, "new-file"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if maps.Equal(before, digest()) {
		t.Fatal("open and detach changed nothing")
	}
	if err := ck.Restore(); err != nil {
		t.Fatal(err)
	}
	if after := digest(); !maps.Equal(before, after) {
		t.Fatalf("restored directory differs:\n%v\n%v", before, after)
	}

	// Once a file is renamed for deletion, Restore changes nothing.
	ck, err = NewCheckpoint(mem, dir, ".purge-2")
	if err != nil {
		t.Fatal(err)
	}
	a = openTest(t, mem, dir, opts)
	if _, err := a.Purge(id, 2*rmSeg); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mid := digest()
	if err := ck.Restore(); !errors.Is(err, ErrCheckpointLost) {
		t.Fatalf("restore after a rename: %v", err)
	}
	if !maps.Equal(mid, digest()) {
		t.Fatal("a refused restore changed the directory")
	}
	if names, err := CheckpointBackups(mem, dir, ".purge-"); err != nil || len(names) != 2 {
		t.Fatalf("backups %v %v", names, err)
	}
	if err := ck.Discard(); err != nil {
		t.Fatal(err)
	}
	if names, err := RemoveCheckpointBackups(mem, dir, ".purge-"); err != nil || len(names) != 0 {
		t.Fatalf("left %v %v", names, err)
	}
}
