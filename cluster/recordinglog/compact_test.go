package recordinglog_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// archiveStub is a catalog holding the log (recording 0, from start to
// stop) and the snapshot recordings in have.
type archiveStub struct {
	start, stop int64
	have        map[int64]bool
}

func (a archiveStub) Descriptor(id int64) (archive.RecordingDescriptor, error) {
	if id != 0 && !a.have[id] {
		return archive.RecordingDescriptor{}, archive.ErrRecordingNotFound
	}
	d := archive.RecordingDescriptor{RecordingID: id, StartPosition: 0, StopPosition: 64, InitialTermID: 5, TermBufferLength: 1 << 16, MTULength: 1408}
	if id == 0 {
		d.StartPosition, d.StopPosition = a.start, a.stop
	}
	return d, nil
}

func (a archiveStub) opts() recordinglog.CompactOptions {
	return recordinglog.CompactOptions{LogStart: a.start, Gone: func(id int64) bool { _, err := a.Descriptor(id); return err != nil }}
}

// history is a node's life as automatic retention leaves it: terms 0..5
// (term k from 1000k), a snapshot set (service 0, then the consensus
// module) at 500, 1500, ..., 5500 with recordings 10+2k, 11+2k; the sets
// at 500..2500 invalidated (retention) and their recordings deleted
// except those of 2500; a standby snapshot at 1200; the set at 5500
// invalidated by invalidate-latest-snapshot, its recordings kept; an
// invalid TERM for term 2 (a duplicate appended again). The archive keeps
// the log from 3072.
func history(t *testing.T, l *recordinglog.Log) archiveStub {
	t.Helper()
	a := archiveStub{start: 3072, stop: 6000, have: map[int64]bool{}}
	for k := int64(0); k < 6; k++ {
		mustDo(t, l.AppendTerm(0, k, 1000*k, 10*k))
		if k == 1 {
			mustDo(t, l.AppendStandbySnapshot(99, 1, 1000, 1200, 12, -1, "remote:8010"))
		}
		pos := 1000*k + 500
		mustDo(t, l.AppendSnapshot(10+2*k, k, 1000*k, pos, 10*k+5, 0), l.AppendSnapshot(11+2*k, k, 1000*k, pos, 10*k+5, -1))
		if k >= 2 {
			a.have[10+2*k], a.have[11+2*k] = true, true
		}
	}
	for _, e := range l.Entries() {
		if e.Type == recordinglog.TypeSnapshot && e.LogPosition < 3000 {
			mustDo(t, l.InvalidateEntry(e.Index))
		}
	}
	if ok, err := l.InvalidateLatestSnapshot(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// An invalid TERM entry of term 2 (appended, then given up).
	if term2, ok := l.TermEntry(2); ok {
		mustDo(t, l.InvalidateEntry(term2.Index))
		mustDo(t, l.AppendTerm(0, 2, 2000, 99))
	}
	return a
}

// answers renders what readers of recording.log get from it: the
// recovery plan, the plan after invalidate-latest-snapshot, the latest
// snapshots, the last term, the set's service count, the terms of the
// kept snapshots.
func answers(t *testing.T, l *recordinglog.Log, a archiveStub) string {
	t.Helper()
	var b strings.Builder
	p, err := l.CreateRecoveryPlan(a, 1)
	fmt.Fprintf(&b, "plan %v %v problems %d\n", p, err, len(p.Problems))
	pi, err := l.PlanAfterInvalidation(a, 1)
	fmt.Fprintf(&b, "after invalidation %v %v\n", pi, err)
	for _, svc := range []int32{-1, 0} {
		e, ok := l.LatestSnapshot(svc)
		fmt.Fprintf(&b, "latest %d: %v %d %d %d\n", svc, ok, e.RecordingID, e.LogPosition, e.LeadershipTermID)
	}
	e, ok := l.FindLastTerm()
	fmt.Fprintf(&b, "last term %v %d %d %d; services %d\n", ok, e.LeadershipTermID, e.TermBaseLogPosition, e.LogPosition, l.SetServiceCount())
	for _, e := range l.Entries() {
		if e.Type != recordinglog.TypeTerm && e.LogPosition >= a.start {
			te, ok := l.TermEntry(e.LeadershipTermID)
			fmt.Fprintf(&b, "term of %d: %v %d\n", e.RecordingID, ok, te.TermBaseLogPosition)
		}
	}
	return b.String()
}

// TestCompactSelect: exactly the entries nothing can use go — the
// snapshot entries of deleted recordings below the oldest loadable set
// (valid ones included), the TERMs of terms that ended at or before the
// log's start (invalid ones included), removed ones — and the recovery
// plan, the plan after invalidate-latest-snapshot, the latest snapshots
// and the last term are the same after the compaction, from memory and
// from the file; every kept entry keeps its bytes and its file order;
// the log takes appends afterwards; a second compaction finds nothing.
func TestCompactSelect(t *testing.T) {
	mem := vfs.NewMem()
	l := mustCreate(t, mem, recordinglog.Options{SyncLevel: 1})
	a := history(t, l)
	before := answers(t, l, a)
	oldFile := readFile(t, mem, path)
	oldEntries := l.FileEntries()
	res, err := l.Compact(a.opts())
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for _, e := range res.Dropped {
		dropped = append(dropped, recordinglog.Format([]recordinglog.Entry{e}))
	}
	// Term 1 stays (the standby snapshot names it), term 2 too (the
	// invalid set at 2500 still has its recordings), and so do both.
	want := []string{
		"[TERM rec0 term0 base0 logPos 1000]",
		"[SNAPSHOT rec10 svc0 logPos 500 INVALID]", "[SNAPSHOT rec11 svc-1 logPos 500 INVALID]",
		"[SNAPSHOT rec12 svc0 logPos 1500 INVALID]", "[SNAPSHOT rec13 svc-1 logPos 1500 INVALID]",
	}
	if !slices.Equal(dropped, want) {
		t.Fatalf("dropped\n%s\nwant\n%s", strings.Join(dropped, "\n"), strings.Join(want, "\n"))
	}
	if got := answers(t, l, a); got != before {
		t.Fatalf("answers changed:\n%s\nwant\n%s", got, before)
	}
	newFile := readFile(t, mem, path)
	if res.SizeAfter != int64(len(newFile)) || res.SizeBefore != int64(len(oldFile)) || res.Kept != len(l.Entries()) {
		t.Fatalf("sizes %d -> %d (file %d), kept %d", res.SizeBefore, res.SizeAfter, len(newFile), res.Kept)
	}
	// Kept entries: the same bytes, in the same file order.
	var keptOld []byte
	for _, e := range oldEntries {
		if !slices.ContainsFunc(res.Dropped, func(d recordinglog.Entry) bool { return d.Offset == e.Offset }) {
			keptOld = append(keptOld, oldFile[e.Offset:e.Offset+int64(e.Length())]...)
		}
	}
	if !bytes.Equal(keptOld, newFile) {
		t.Fatal("the kept entries' bytes differ from the compacted file")
	}
	l.Close()
	l2, err := recordinglog.Open(mem, "/c", recordinglog.Options{SyncLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := answers(t, l2, a); got != before {
		t.Fatalf("answers from the file changed:\n%s\nwant\n%s", got, before)
	}
	if again, err := l2.Compact(a.opts()); err != nil || len(again.Dropped) != 0 {
		t.Fatalf("second compaction: %+v %v", again, err)
	}
	mustDo(t, l2.AppendTerm(0, 6, 6000, 60), l2.AppendSnapshot(30, 6, 6000, 6100, 61, 0), l2.AppendSnapshot(31, 6, 6000, 6100, 61, -1))
	if e, ok := l2.LatestSnapshot(-1); !ok || e.RecordingID != 31 {
		t.Fatalf("after appends: %v %v", e, ok)
	}
}

// TestCompactSelectKeeps: what must stay stays — with no loadable
// consensus-module snapshot no snapshot entry goes; with the log's start
// unknown no TERM goes; a snapshot entry whose recording still has files
// (Gone false) stays; the term of a kept snapshot stays.
func TestCompactSelectKeeps(t *testing.T) {
	l := mustCreate(t, vfs.NewMem(), recordinglog.Options{})
	defer l.Close()
	a := history(t, l)
	es := l.Entries()
	count := func(opts recordinglog.CompactOptions, typ recordinglog.EntryType) int {
		n := 0
		for _, i := range recordinglog.CompactSelect(es, opts) {
			if es[i].Type == typ {
				n++
			}
		}
		return n
	}
	if n := count(recordinglog.CompactOptions{LogStart: a.start, Gone: func(int64) bool { return true }}, recordinglog.TypeSnapshot); n != 0 {
		t.Errorf("every recording gone: %d snapshot entries dropped, want none (no loadable set)", n)
	}
	if n := count(recordinglog.CompactOptions{LogStart: -1, Gone: a.opts().Gone}, recordinglog.TypeTerm); n != 0 {
		t.Errorf("log start unknown: %d TERMs dropped", n)
	}
	if n := count(recordinglog.CompactOptions{LogStart: a.start, Gone: func(id int64) bool { return id == 10 || id == 11 || id == 99 }}, recordinglog.TypeSnapshot); n != 2 {
		t.Errorf("recordings 10, 11 gone: %d snapshot entries dropped, want 2 (those of 12, 13 stay: their recordings are there)", n)
	}
	// The invalidated latest set (5500, recordings 20 and 21) stays even
	// with its recordings gone: it is above the loadable sets, where
	// revalidate looks.
	above := recordinglog.CompactOptions{LogStart: a.start, Gone: func(id int64) bool { return a.opts().Gone(id) || id == 20 || id == 21 }}
	for _, i := range recordinglog.CompactSelect(es, above) {
		if es[i].LogPosition >= 3500 && es[i].Type == recordinglog.TypeSnapshot {
			t.Errorf("dropped %v, above the oldest loadable set", es[i])
		}
	}
	// Only standby snapshots loadable: nothing goes.
	onlyStandby := recordinglog.CompactOptions{LogStart: a.start, Gone: func(id int64) bool { return id != 99 }}
	if n := count(onlyStandby, recordinglog.TypeSnapshot); n != 0 {
		t.Errorf("no local set loadable: %d snapshot entries dropped", n)
	}
	// A start inside term 1 keeps term 1 (it holds the start) and term 0
	// goes; a kept snapshot of term 0 keeps term 0.
	opts := recordinglog.CompactOptions{LogStart: 1500, Gone: a.opts().Gone}
	var terms []int64
	for _, i := range recordinglog.CompactSelect(es, opts) {
		if es[i].Type == recordinglog.TypeTerm {
			terms = append(terms, es[i].LeadershipTermID)
		}
	}
	if !slices.Equal(terms, []int64{0}) {
		t.Errorf("start 1500: TERMs dropped %v, want [0]", terms)
	}
	opts.Gone = func(id int64) bool { return id != 10 && id != 11 && id >= 12 && id < 14 }
	for _, i := range recordinglog.CompactSelect(es, opts) {
		if es[i].LeadershipTermID == 0 {
			t.Errorf("dropped %v of term 0, whose snapshot entries stay", es[i])
		}
	}
}

// TestCompactCrash crashes a compaction before each of its file operations
// (keeping none, half or all unsynced changes) and fails each operation in
// turn: recording.log then reopens as the old file or the compacted one,
// never anything else; a leftover temporary file is removed and reported
// by the writable reopen; a failure is reported, and the Log refuses
// updates after a failure past the rename.
func TestCompactCrash(t *testing.T) {
	base := vfs.NewMem()
	l := mustCreate(t, base, recordinglog.Options{SyncLevel: 1})
	a := history(t, l)
	oldState := fileOrderState(l)
	l.Close()
	newState := ""
	{
		fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		l, err := recordinglog.Open(fs, "/c", recordinglog.Options{SyncLevel: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Compact(a.opts()); err != nil {
			t.Fatal(err)
		}
		newState = fileOrderState(l)
		l.Close()
	}
	check := func(what string, fs *vfs.MemFS) string {
		t.Helper()
		_, serr := fs.Stat("/c/" + recordinglog.CompactTempName)
		hadTemp := serr == nil
		l, err := recordinglog.Open(fs, "/c", recordinglog.Options{SyncLevel: 1})
		if err != nil {
			t.Fatalf("%s: reopen: %v", what, err)
		}
		defer l.Close()
		if _, serr := fs.Stat("/c/" + recordinglog.CompactTempName); hadTemp && (serr == nil || l.RemovedCompactTemp() == "") {
			t.Fatalf("%s: the leftover temporary file was not removed and reported", what)
		}
		switch fileOrderState(l) {
		case oldState:
			return "old"
		case newState:
			return "new"
		}
		t.Fatalf("%s: neither the old nor the compacted file:\n%s", what, fileOrderState(l))
		return ""
	}
	compact := func(fs vfs.FS) error {
		l, err := recordinglog.Open(fs, "/c", recordinglog.Options{SyncLevel: 1})
		if err != nil {
			return err
		}
		_, err = l.Compact(a.opts())
		return errors.Join(err, l.Close())
	}
	outcomes, temps := map[string]int{}, 0
	for k := 0; ; k++ {
		fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		seen := 0
		var clones []*vfs.MemFS
		inj := vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{Ops: vfs.AllOps, Before: func(vfs.Op, string) error {
			if seen == k {
				for j, pct := range []int{0, 50, 100} {
					clones = append(clones, fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: rand.New(rand.NewPCG(uint64(k), uint64(j)))}))
				}
			}
			seen++
			return nil
		}})
		l, err := recordinglog.Open(inj, "/c", recordinglog.Options{SyncLevel: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Compact(a.opts()); err != nil {
			t.Fatal(err)
		}
		l.Close()
		if clones == nil {
			break
		}
		for j, c := range clones {
			if _, err := c.Stat("/c/" + recordinglog.CompactTempName); err == nil {
				temps++
			}
			outcomes[check(fmt.Sprintf("crash before op %d (clone %d)", k, j), c)]++
		}
	}
	t.Logf("crashes found %v; %d left the temporary file", outcomes, temps)
	if outcomes["old"] == 0 || outcomes["new"] == 0 || temps == 0 {
		t.Error("the crashes did not reach every outcome")
	}
	points := 0
	for i := int64(0); ; i++ {
		fs := base.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		inj := vfs.NewInjector(fs, vfs.AllOps, i)
		err := compact(inj)
		if inj.Injected() == nil {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		points++
		if err != nil && !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("op %d (%v): %v", i, inj.Injected(), err)
		}
		for j, pct := range []int{0, 50, 100} {
			c := fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: rand.New(rand.NewPCG(uint64(i), uint64(j)))})
			if got := check(fmt.Sprintf("op %d (%v) failed, crash %d%%", i, inj.Injected(), pct), c); err == nil && got == "old" {
				t.Fatalf("op %d (%v): no error, but the old file came back", i, inj.Injected())
			}
		}
	}
	if points < 5 {
		t.Errorf("only %d operations", points)
	}
}
