package recordinglog_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// recorder adds a hook to inj that calls onWrite and onSync (either may be
// nil) with the whole content of a file after each successful write and
// sync through it.
func recorder(inj *vfs.Injector, onWrite, onSync func(content []byte)) *vfs.Injector {
	return inj.Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpWrite, vfs.OpSync), After: func(op vfs.Op, _ string, f vfs.File, err error) {
		if err != nil {
			return
		}
		on := onSync
		if op == vfs.OpWrite {
			on = onWrite
		}
		if on != nil {
			on(content(f))
		}
	}})
}

// content is the whole content of f.
func content(f vfs.File) []byte {
	n, err := f.Size()
	if err != nil {
		panic(err)
	}
	b := make([]byte, n)
	if n > 0 {
		if _, err := f.ReadAt(b, 0); err != nil {
			panic(err)
		}
	}
	return b
}

// state is a comparable rendering of a file's entries; a file that does
// not decode renders as its error.
func state(b []byte) string {
	es, err := recordinglog.Decode(b)
	if err != nil {
		return "error: " + err.Error()
	}
	return entriesState(es)
}

func entriesState(es []recordinglog.Entry) string {
	var s strings.Builder
	for _, e := range es {
		fmt.Fprintf(&s, "%+v\n", e)
	}
	return s.String()
}

// fileOrderState renders an open log's entries in file order.
func fileOrderState(l *recordinglog.Log) string { return entriesState(l.FileEntries()) }

// workload is a node's life in eleven updates: terms, a snapshot set,
// commits, a standby snapshot longer than 64 bytes, two invalidations (one
// of them three writes), a restore in place.
func workload(l *recordinglog.Log) error {
	endpoint := strings.Repeat("e", 100)
	ops := []func() error{
		func() error { return l.AppendTerm(0, 0, 0, 10) },
		func() error { return l.AppendSnapshot(1, 0, 0, 640, 20, 1) },
		func() error { return l.AppendSnapshot(2, 0, 0, 640, 20, 0) },
		func() error { return l.AppendSnapshot(3, 0, 0, 640, 20, -1) },
		func() error { return l.AppendTerm(0, 1, 1024, 30) },
		func() error { return l.CommitLogPosition(1, 2048) },
		func() error { return l.AppendStandbySnapshot(4, 1, 1024, 1500, 40, -1, endpoint) },
		func() error { return invalidate(l) },
		func() error { return invalidate(l) },
		func() error { return l.AppendSnapshot(2, 0, 0, 640, 50, 0) },
		func() error { return l.AppendTerm(0, 2, 2048, 60) },
	}
	for i, op := range ops {
		if err := op(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

func invalidate(l *recordinglog.Log) error {
	ok, err := l.InvalidateLatestSnapshot()
	if err == nil && !ok {
		err = errors.New("nothing to invalidate")
	}
	return err
}

// The workload's final state, checked once so that the crash tests below
// check against something known.
func TestWorkload(t *testing.T) {
	fs := vfs.NewMem()
	l := mustCreate(t, fs, recordinglog.Options{SyncLevel: 1})
	if err := workload(l); err != nil {
		t.Fatal(err)
	}
	want := "[TERM rec0 term0 base0 logPos 1024][SNAPSHOT rec1 svc1 logPos 640 INVALID][SNAPSHOT rec2 svc0 logPos 640]" +
		"[SNAPSHOT rec3 svc-1 logPos 640 INVALID][TERM rec0 term1 base1024 logPos 2048]" +
		"[STANDBY_SNAPSHOT rec4 svc-1 logPos 1500 endpoint " + strings.Repeat("e", 100) + " INVALID][TERM rec0 term2 base2048 logPos -1]"
	if s := recordinglog.Format(l.Entries()); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	if l.Size() != 5*64+192+64 {
		t.Errorf("size %d", l.Size())
	}
	_ = l.Close()
}

// TestCrashAtSync fails every sync of the workload in turn (sync levels 1
// and 2), then crashes: whatever a crash keeps, a reopen with Repair finds
// exactly the last synced state or the state with the one unsynced write,
// and at 0% unsynced data exactly the last synced state. Without Repair the
// reopen finds one of those states or reports a torn tail.
func TestCrashAtSync(t *testing.T) {
	var repaired, tornErrors, points int
	defer func() {
		t.Logf("%d failure points, %d repaired torn tails, %d torn-tail errors without Repair", points, repaired, tornErrors)
		if !t.Failed() && (repaired == 0 || tornErrors == 0) {
			t.Error("no crash tore the tail: the test does not exercise repair")
		}
	}()
	for _, level := range []int{1, 2} {
		for i := int64(0); ; i++ {
			mem := vfs.NewMem()
			inj := vfs.NewInjector(mem, vfs.Ops(vfs.OpSync), i)
			lastSynced := state(nil)
			rec := recorder(inj, nil, func(b []byte) { lastSynced = state(b) })
			l := mustCreate(t, rec, recordinglog.Options{SyncLevel: archive.SyncLevel(level)})
			err := workload(l)
			if inj.Injected() == nil {
				if err != nil {
					t.Fatal(err)
				}
				if i < 12 {
					t.Fatalf("only %d syncs", i)
				}
				break
			}
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("level %d sync %d: error %v", level, i, err)
			}
			points++
			// The log refuses to go on after a failed sync.
			if err2 := l.AppendTerm(0, 9, 0, 0); !errors.Is(err2, vfs.ErrInjected) {
				t.Fatalf("after a failed sync: %v", err2)
			}
			_ = l.Close()
			current := state(readFile(t, mem, path))
			if strings.HasPrefix(current, "error") || strings.HasPrefix(lastSynced, "error") {
				t.Fatalf("sync %d: current %s, synced %s", i, current, lastSynced)
			}
			crashes := []vfs.CrashCloneConfig{{UnsyncedDataPercent: 0}}
			for seed := uint64(1); seed <= 6; seed++ {
				for _, p := range []int{30, 60, 100} {
					crashes = append(crashes, vfs.CrashCloneConfig{UnsyncedDataPercent: p, Rand: rand.New(rand.NewPCG(seed, uint64(i)))})
				}
			}
			for _, cfg := range crashes {
				clone := mem.CrashClone(cfg)
				plain := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: cfg.UnsyncedDataPercent,
					Rand: rand.New(rand.NewPCG(99, uint64(i)))})
				l2, err := recordinglog.Open(clone, "/c", recordinglog.Options{Repair: true, SyncLevel: archive.SyncLevel(level)})
				if err != nil {
					t.Fatalf("level %d sync %d crash %d%%: reopen: %v", level, i, cfg.UnsyncedDataPercent, err)
				}
				if l2.Repaired() != nil {
					repaired++
				}
				got := fileOrderState(l2)
				if got != lastSynced && (got != current || cfg.UnsyncedDataPercent == 0) {
					t.Fatalf("level %d sync %d crash %d%%: reopened\n%s\nwant synced\n%s\nor current\n%s", level, i, cfg.UnsyncedDataPercent, got, lastSynced, current)
				}
				// The repaired log takes appends.
				if err := l2.AppendSnapshot(9, 0, 0, 0, 0, 5); err != nil {
					t.Fatal(err)
				}
				_ = l2.Close()
				l3, err := recordinglog.Open(plain, "/c", recordinglog.Options{})
				if err != nil {
					if !errors.Is(err, recordinglog.ErrTornTail) {
						t.Fatalf("level %d sync %d: reopen without repair: %v", level, i, err)
					}
					tornErrors++
					continue
				}
				if got := fileOrderState(l3); got != lastSynced && got != current {
					t.Fatalf("level %d sync %d: reopened without repair\n%s", level, i, got)
				}
				_ = l3.Close()
			}
		}
	}
}

// TestTornAppend tears the last append at every byte: Open reports the torn
// tail at the entry's offset, and Repair drops exactly that entry.
func TestTornAppend(t *testing.T) {
	mem := vfs.NewMem()
	l := mustCreate(t, mem, recordinglog.Options{SyncLevel: 1})
	if err := workload(l); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	full := readFile(t, mem, path)
	last := int64(len(full) - 64)
	want := state(full[:last])
	for cut := last + 1; cut < int64(len(full)); cut++ {
		clone := mem.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 100})
		if err := clone.CutFile(path, cut); err != nil {
			t.Fatal(err)
		}
		_, err := recordinglog.Open(clone, "/c", recordinglog.Options{})
		var ce *recordinglog.CorruptError
		if !errors.As(err, &ce) || !ce.Torn || ce.Offset != last {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		l, err := recordinglog.Open(clone, "/c", recordinglog.Options{Repair: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := fileOrderState(l); got != want || l.Repaired().Offset != last {
			t.Fatalf("cut at %d: repaired to\n%s", cut, got)
		}
		_ = l.Close()
	}
}

// TestErrorSweep fails every file operation of the workload in turn (open,
// create, writes, syncs, close, ...): each failure surfaces as an error
// wrapping vfs.ErrInjected, and reopening the file (without the injector)
// gives a consistent log: one of the states the workload passed through
// around the failed operation, never a damaged file.
func TestErrorSweep(t *testing.T) {
	// The states a clean run passes through, write by write.
	var states []string
	clean := vfs.NewMem()
	ref := recorder(vfs.NewInjector(clean, 0, -1), func(b []byte) { states = append(states, state(b)) }, nil)
	l := mustCreate(t, ref, recordinglog.Options{SyncLevel: 1})
	states = append(states, state(nil))
	if err := workload(l); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	known := map[string]int{}
	for i, s := range states {
		known[s] = i
	}

	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		inj := vfs.NewInjector(mem, vfs.AllOps, i)
		var err error
		if err = mem.MkdirAll("/c"); err != nil {
			t.Fatal(err)
		}
		var l *recordinglog.Log
		l, err = recordinglog.Create(inj, "/c", recordinglog.Options{SyncLevel: 1})
		if err == nil {
			err = workload(l)
			if cerr := l.Close(); err == nil {
				err = cerr
			}
		}
		if inj.Injected() == nil {
			if err != nil {
				t.Fatal(err)
			}
			if i < 20 {
				t.Fatalf("only %d operations", i)
			}
			break
		}
		if !errors.Is(err, vfs.ErrInjected) || !strings.HasPrefix(err.Error(), "recordinglog: ") && !strings.HasPrefix(err.Error(), "op ") {
			t.Fatalf("op %d (%v): error %v", i, inj.Injected(), err)
		}
		r, oerr := recordinglog.Open(mem, "/c", recordinglog.Options{})
		if oerr != nil {
			if errors.Is(oerr, vfs.ErrNotExist) {
				continue // the create failed
			}
			t.Fatalf("op %d (%v): reopen: %v", i, inj.Injected(), oerr)
		}
		got := fileOrderState(r)
		if _, ok := known[got]; !ok {
			t.Fatalf("op %d (%v): reopened to a state the workload never had:\n%s", i, inj.Injected(), got)
		}
		_ = r.Close()
	}
}
