package vfs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// opCases performs one operation of each kind on an FS prepared by
// prepareInjected; f is a read-write handle on /f opened through the FS.
var opCases = []struct {
	op   vfs.Op
	path string
	do   func(fs vfs.FS, f vfs.File) error
}{
	{vfs.OpCreate, "/new", func(fs vfs.FS, _ vfs.File) error { _, err := fs.Create("/new"); return err }},
	{vfs.OpOpen, "/f", func(fs vfs.FS, _ vfs.File) error { _, err := fs.Open("/f"); return err }},
	{vfs.OpOpen, "/f", func(fs vfs.FS, _ vfs.File) error { _, err := fs.OpenRW("/f"); return err }},
	{vfs.OpRead, "/f", func(_ vfs.FS, f vfs.File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
	{vfs.OpWrite, "/f", func(_ vfs.FS, f vfs.File) error { _, err := f.WriteAt([]byte("W"), 0); return err }},
	{vfs.OpSync, "/f", func(_ vfs.FS, f vfs.File) error { return f.Sync() }},
	{vfs.OpSync, "/f", func(_ vfs.FS, f vfs.File) error { return f.SyncAll() }},
	{vfs.OpPreallocate, "/f", func(_ vfs.FS, f vfs.File) error { return f.Preallocate(64) }},
	{vfs.OpTruncate, "/f", func(_ vfs.FS, f vfs.File) error { return f.Truncate(1) }},
	{vfs.OpRename, "/f2 -> /f3", func(fs vfs.FS, _ vfs.File) error { return fs.Rename("/f2", "/f3") }},
	{vfs.OpRemove, "/f2", func(fs vfs.FS, _ vfs.File) error { return fs.Remove("/f2") }},
	{vfs.OpList, "/d", func(fs vfs.FS, _ vfs.File) error { _, err := fs.List("/d"); return err }},
	{vfs.OpSyncDir, "/d", func(fs vfs.FS, _ vfs.File) error { return fs.SyncDir("/d") }},
	{vfs.OpClose, "/f", func(_ vfs.FS, f vfs.File) error { return f.Close() }},
	{vfs.OpStat, "/f", func(fs vfs.FS, _ vfs.File) error { _, err := fs.Stat("/f"); return err }},
	{vfs.OpStat, "/f", func(_ vfs.FS, f vfs.File) error { _, err := f.Size(); return err }},
	{vfs.OpMkdir, "/m", func(fs vfs.FS, _ vfs.File) error { return fs.MkdirAll("/m") }},
}

func prepareInjected(t *testing.T) *vfs.MemFS {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "file")
	writeFile(t, fs, "/f2", "second")
	mustDo(t, fs.MkdirAll("/d"))
	return fs
}

func TestInjectorFailsEachKind(t *testing.T) {
	for i, tc := range opCases {
		t.Run(fmt.Sprintf("%d-%s", i, tc.op), func(t *testing.T) {
			mem := prepareInjected(t)
			before := dumpString(dump(t, mem, "/"))
			inj := vfs.NewInjector(mem, vfs.Ops(tc.op), 0)
			f, err := inj.OpenRW("/f")
			if tc.op == vfs.OpOpen {
				// The setup's open was operation 0; fail the next one.
				inj = vfs.NewInjector(mem, vfs.Ops(tc.op), 1)
				f, err = inj.OpenRW("/f")
			}
			mustDo(t, err)

			err = tc.do(inj, f)
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("got %v, want an injected error", err)
			}
			var ie *vfs.InjectedError
			if !errors.As(err, &ie) || ie.Op != tc.op || ie.Path != tc.path {
				t.Fatalf("got %#v, want op %s on %s", ie, tc.op, tc.path)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "vfs: injected error: ") ||
				!strings.Contains(msg, tc.op.String()+" "+tc.path) {
				t.Fatalf("message %q does not name the operation and the path", msg)
			}
			if inj.Injected() != err {
				t.Fatalf("Injected() = %v, want %v", inj.Injected(), err)
			}
			// The failed operation did nothing (a failed Close still closes).
			if tc.op != vfs.OpClose {
				if after := dumpString(dump(t, mem, "/")); after != before {
					t.Fatalf("the failed operation changed the FS:\n%s\nwas\n%s", after, before)
				}
			}
			// Only one operation fails.
			if err := tc.do(inj, f); errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("second attempt: %v", err)
			}
		})
	}
}

func TestInjectorCounts(t *testing.T) {
	inj := vfs.NewInjector(vfs.NewMem(), vfs.AllOps, -1)
	writeFile(t, inj, "/a", "x") // create, write, sync, close
	_ = readFile(t, inj, "/a")   // open, size, read, close
	mustDo(t, inj.SyncDir("/"))
	_, err := inj.Stat("/missing") // failed operations count too
	if !errors.Is(err, vfs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ops  vfs.OpSet
		want int64
	}{
		{vfs.AllOps, 10},
		{vfs.Ops(vfs.OpClose), 2},
		{vfs.Ops(vfs.OpStat), 2},
		{vfs.Ops(vfs.OpCreate, vfs.OpWrite), 2},
		{vfs.WriteOps, 4},
		{0, 0},
	} {
		if got := inj.Count(c.ops); got != c.want {
			t.Errorf("Count(%b) = %d, want %d", c.ops, got, c.want)
		}
	}
	if inj.Injected() != nil {
		t.Fatalf("index -1 injected %v", inj.Injected())
	}
}

func TestOpSet(t *testing.T) {
	s := vfs.Ops(vfs.OpRead, vfs.OpClose, vfs.Op(200))
	if !s.Has(vfs.OpRead) || !s.Has(vfs.OpClose) || s.Has(vfs.OpWrite) || s.Has(vfs.Op(200)) {
		t.Fatalf("Ops(read, close, 200) = %b", s)
	}
	for op := range vfs.Op(14) {
		if !vfs.AllOps.Has(op) {
			t.Errorf("AllOps lacks %s", op)
		}
		if vfs.WriteOps.Has(op) == (op == vfs.OpOpen || op == vfs.OpRead || op == vfs.OpList || op == vfs.OpClose || op == vfs.OpStat) {
			t.Errorf("WriteOps.Has(%s) = %v", op, vfs.WriteOps.Has(op))
		}
	}
	if vfs.AllOps.Has(vfs.Op(14)) {
		t.Error("AllOps has a kind beyond the last")
	}
	if got := vfs.Op(99).String(); got != "Op(99)" {
		t.Errorf("Op(99).String() = %q", got)
	}
	if got := vfs.OpSyncDir.String(); got != "syncdir" {
		t.Errorf("OpSyncDir.String() = %q", got)
	}
}

// installFile writes content to dir/name crash-safely: a temporary file is
// written, synced, renamed into place, and the directory synced. Every error
// is returned.
func installFile(fs vfs.FS, dir, name, content string) (err error) {
	tmp := fs.Join(dir, name+".tmp")
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := f.Preallocate(int64(len(content))); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, fs.Join(dir, name)); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// leakyInstall is installFile with a bug: it drops the error of Close.
func leakyInstall(fs vfs.FS, dir, name, content string) error {
	tmp := fs.Join(dir, name+".tmp")
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	_ = f.Close() // the bug
	if err := fs.Rename(tmp, fs.Join(dir, name)); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// sweep runs workload on a fresh memory FS once per operation, failing
// operation i in run i, until a run completes without reaching its
// injection. It returns the number of runs and a description of every
// injected error the workload did not report; check sees the crash
// (0% unsynced) state after each failed run.
func sweep(t *testing.T, workload func(vfs.FS) error, check func(*vfs.MemFS) error) (runs int, lost []string) {
	t.Helper()
	const limit = 1000
	for i := range int64(limit) {
		mem := vfs.NewMem()
		mustDo(t, mem.MkdirAll("/dir"))
		mustDo(t, mem.SyncDir("/"))
		inj := vfs.NewInjector(mem, vfs.AllOps, i)
		err := workload(inj)
		injected := inj.Injected()
		if injected == nil {
			if err != nil {
				t.Fatalf("run %d failed without an injected error: %v", i, err)
			}
			return int(i) + 1, lost
		}
		if !errors.Is(err, vfs.ErrInjected) {
			lost = append(lost, fmt.Sprintf("run %d: %v was not reported (got %v)", i, injected, err))
		}
		if check != nil {
			if err := check(mem.CrashClone(vfs.CrashCloneConfig{})); err != nil {
				t.Errorf("run %d, after %v: %v", i, injected, err)
			}
		}
	}
	t.Fatalf("no run completed within %d operations", limit)
	return 0, nil
}

func TestInjectorSweep(t *testing.T) {
	const content = "the whole payload"
	workload := func(fs vfs.FS) error { return installFile(fs, "/dir", "file", content) }
	// After any failure and a crash, the file is either absent or whole.
	check := func(fs *vfs.MemFS) error {
		got, err := tryRead(fs, "/dir/file")
		if errors.Is(err, vfs.ErrNotExist) || err == nil && got == content {
			return nil
		}
		return fmt.Errorf("file after a crash: %q, %v", got, err)
	}

	counter := vfs.NewInjector(vfs.NewMem(), vfs.AllOps, -1)
	mustDo(t, counter.MkdirAll("/dir"))
	mustDo(t, workload(counter))
	points := counter.Count(vfs.AllOps) - 1 // less the MkdirAll

	runs, lost := sweep(t, workload, check)
	for _, l := range lost {
		t.Error(l)
	}
	if int64(runs) != points+1 {
		t.Fatalf("sweep took %d runs, want one per operation (%d) plus the clean run", runs, points)
	}
	// Create, Preallocate, WriteAt, Sync, Rename, SyncDir, Close.
	if points != 7 {
		t.Fatalf("the workload has %d operations, want 7", points)
	}

	// The same sweep finds the bug in a workload that drops an error.
	_, lost = sweep(t, func(fs vfs.FS) error { return leakyInstall(fs, "/dir", "file", content) }, check)
	if len(lost) != 1 || !strings.Contains(lost[0], "close /dir/file.tmp") {
		t.Fatalf("the sweep did not find exactly the dropped Close error: %q", lost)
	}
}

// TestInjectorHooks: a hook sees every operation of its kinds with its path,
// Before runs before the operation and its error fails it (not counted, no
// After, nothing done), After gets the operation's error and the file.
func TestInjectorHooks(t *testing.T) {
	for _, c := range opCases {
		t.Run(fmt.Sprintf("%v %s", c.op, c.path), func(t *testing.T) {
			mem := prepareInjected(t)
			inj := vfs.NewInjector(mem, 0, -1)
			var seen []string
			inj.Hook(vfs.Hook{Ops: vfs.Ops(c.op),
				Before: func(op vfs.Op, path string) error { seen = append(seen, "before "+op.String()+" "+path); return nil },
				After: func(op vfs.Op, path string, f vfs.File, err error) {
					seen = append(seen, fmt.Sprintf("after %v %s %v file=%v", op, path, err, f != nil))
				}})
			f, err := inj.OpenRW("/f")
			if err != nil {
				t.Fatal(err)
			}
			seen = seen[:0] // the OpenRW above, when c.op is open
			if err := c.do(inj, f); err != nil {
				t.Fatal(err)
			}
			if len(seen) != 2 || seen[0] != "before "+c.op.String()+" "+c.path || !strings.HasPrefix(seen[1], "after "+c.op.String()+" "+c.path+" <nil>") {
				t.Fatalf("hooks saw %q", seen)
			}
			switch c.op {
			case vfs.OpRead, vfs.OpWrite, vfs.OpSync, vfs.OpPreallocate, vfs.OpTruncate, vfs.OpClose:
				if !strings.HasSuffix(seen[1], "file=true") {
					t.Fatalf("After of a file operation without the file: %q", seen[1])
				}
			case vfs.OpCreate, vfs.OpOpen, vfs.OpRename, vfs.OpRemove, vfs.OpList, vfs.OpSyncDir, vfs.OpMkdir:
				if !strings.HasSuffix(seen[1], "file=false") {
					t.Fatalf("After of a file-system operation with a file: %q", seen[1])
				}
			}

			// A failing Before: the operation fails with its error, does
			// nothing, is not counted and runs no After.
			mem = prepareInjected(t)
			before := dumpString(dump(t, mem, "/"))
			boom := errors.New("boom")
			inj = vfs.NewInjector(mem, vfs.AllOps, -1)
			f, err = inj.OpenRW("/f")
			if err != nil {
				t.Fatal(err)
			}
			n := inj.Count(vfs.AllOps)
			after := 0
			inj.Hook(vfs.Hook{Ops: vfs.Ops(c.op), Before: func(vfs.Op, string) error { return boom },
				After: func(vfs.Op, string, vfs.File, error) { after++ }})
			if err := c.do(inj, f); !errors.Is(err, boom) {
				t.Fatalf("error %v, want the hook's", err)
			}
			if after != 0 || inj.Count(vfs.AllOps) != n {
				t.Fatalf("After ran %d times, %d operations counted, want none", after, inj.Count(vfs.AllOps)-n)
			}
			if c.op != vfs.OpClose && c.op != vfs.OpRead && c.op != vfs.OpStat && c.op != vfs.OpList && c.op != vfs.OpOpen {
				if got := dumpString(dump(t, mem, "/")); got != before {
					t.Fatalf("a failed %v changed the file system:\n%s\nwas\n%s", c.op, got, before)
				}
			}
		})
	}
}

// TestInjectorFreeBytes: WithFreeBytes answers FreeBytes with the test's
// function and passes everything else on.
func TestInjectorFreeBytes(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewInjector(mem, 0, -1).WithFreeBytes(func(dir string) (uint64, error) {
		if dir != "/d" {
			return 0, fmt.Errorf("dir %q", dir)
		}
		return 12345, nil
	})
	fb, ok := fs.(interface{ FreeBytes(string) (uint64, error) })
	if !ok {
		t.Fatal("no FreeBytes method")
	}
	if n, err := fb.FreeBytes("/d"); n != 12345 || err != nil {
		t.Fatalf("FreeBytes = %d, %v", n, err)
	}
	if err := fs.MkdirAll("/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.List("/x"); err != nil {
		t.Fatalf("MkdirAll did not reach the file system: %v", err)
	}
}
