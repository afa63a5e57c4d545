package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

func crash(fs *vfs.MemFS, pct int, seed uint64) *vfs.MemFS {
	return fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: pct, Rand: seeded(seed)})
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openAppend writes s at the end of name without syncing.
func appendUnsynced(t *testing.T, fs vfs.FS, name, s string) {
	t.Helper()
	f, err := fs.OpenRW(name)
	mustDo(t, err)
	size, err := f.Size()
	mustDo(t, err)
	_, err = f.WriteAt([]byte(s), size)
	mustDo(t, err)
	mustDo(t, f.Close())
}

func TestCrashSyncedDataSurvives(t *testing.T) {
	for _, pct := range []int{0, 1, 30, 50, 70, 99, 100} {
		for seed := range uint64(20) {
			fs := vfs.NewMem()
			mustDo(t, fs.MkdirAll("/d"))
			mustDo(t, fs.SyncDir("/"))
			writeFile(t, fs, "/d/f", "synced")
			mustDo(t, fs.SyncDir("/d"))
			appendUnsynced(t, fs, "/d/f", "unsynced")

			got := readFile(t, crash(fs, pct, seed), "/d/f")
			rest, ok := strings.CutPrefix(got, "synced")
			if !ok {
				t.Fatalf("pct %d seed %d: synced bytes lost: %q", pct, seed, got)
			}
			// The one unsynced write is kept or not, then the file is cut
			// between the synced length (6) and the current one (14).
			if !strings.HasPrefix("unsynced", rest) && strings.Trim(rest, "\x00") != "" {
				t.Fatalf("pct %d seed %d: tail %q is neither a prefix of the write nor zeros", pct, seed, rest)
			}
			switch {
			case pct == 0 && rest != "":
				t.Fatalf("seed %d: at 0%% unsynced bytes survived: %q", seed, got)
			case pct == 100 && rest != "unsynced":
				t.Fatalf("seed %d: at 100%% unsynced bytes were lost: %q", seed, got)
			}
		}
	}
}

// unsyncedWorkload changes fs in every way the crash model tracks, without
// syncing anything afterwards. It expects the state built by durableState.
func unsyncedWorkload(t *testing.T, fs vfs.FS) {
	appendUnsynced(t, fs, "/d/a", "+more")
	f, err := fs.OpenRW("/d/b")
	mustDo(t, err)
	_, err = f.WriteAt([]byte("XX"), 1) // overwrite synced bytes
	mustDo(t, err)
	mustDo(t, f.Truncate(2))
	mustDo(t, f.Truncate(5)) // zeros, not the old bytes
	mustDo(t, f.Preallocate(8))
	mustDo(t, f.Close())
	mustDo(t, fs.Rename("/d/c", "/d/c2"))
	mustDo(t, fs.Remove("/d/gone"))
	mustDo(t, fs.MkdirAll("/d/new/deeper"))
	writeFile(t, fs, "/d/new/deeper/n", "new file")
	writeFile(t, fs, "/top", "top")
	mustDo(t, fs.Rename("/e/moved", "/d/moved")) // across directories
}

// durableState builds files and directories and syncs all of them.
func durableState(t *testing.T, fs vfs.FS) {
	mustDo(t, fs.MkdirAll("/d"))
	mustDo(t, fs.MkdirAll("/e"))
	writeFile(t, fs, "/d/a", "alpha")
	writeFile(t, fs, "/d/b", "bravo-bravo")
	writeFile(t, fs, "/d/c", "charlie")
	writeFile(t, fs, "/d/gone", "gone")
	writeFile(t, fs, "/e/moved", "moved")
	for _, d := range []string{"/", "/d", "/e"} {
		mustDo(t, fs.SyncDir(d))
	}
}

func TestCrashAtZeroKeepsExactlyTheDurableState(t *testing.T) {
	fs := vfs.NewMem()
	durableState(t, fs)
	want := dumpString(dump(t, fs, "/"))
	unsyncedWorkload(t, fs)
	if dumpString(dump(t, fs, "/")) == want {
		t.Fatal("the workload changed nothing")
	}
	for seed := range uint64(5) {
		if got := dumpString(dump(t, crash(fs, 0, seed), "/")); got != want {
			t.Fatalf("seed %d: crash at 0%% left\n%s\nwant the durable state\n%s", seed, got, want)
		}
	}
}

func TestCrashAtHundredKeepsTheCurrentState(t *testing.T) {
	fs := vfs.NewMem()
	durableState(t, fs)
	unsyncedWorkload(t, fs)
	want := dumpString(dump(t, fs, "/"))
	if got := dumpString(dump(t, crash(fs, 100, 1), "/")); got != want {
		t.Fatalf("crash at 100%% left\n%s\nwant the current state\n%s", got, want)
	}
	// Also from a file system that never synced anything.
	fresh := vfs.NewMem()
	unsyncedFresh := func(fs vfs.FS) {
		mustDo(t, fs.MkdirAll("/x/y"))
		writeFile(t, fs, "/x/y/z", "zzz")
		appendUnsynced(t, fs, "/x/y/z", "!")
	}
	unsyncedFresh(fresh)
	if got, want := dumpString(dump(t, crash(fresh, 100, 1), "/")), dumpString(dump(t, fresh, "/")); got != want {
		t.Fatalf("crash at 100%% left\n%s\nwant\n%s", got, want)
	}
	if got := dump(t, crash(fresh, 0, 1), "/"); len(got) != 0 {
		t.Fatalf("crash at 0%% of a never-synced FS left %v", got)
	}
}

func TestCrashUnsyncedEntriesAreLost(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "data") // data synced, entry not
	if _, err := crash(fs, 0, 1).Stat("/f"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("file whose entry was never synced: Stat = %v, want ErrNotExist", err)
	}
	mustDo(t, fs.SyncDir("/"))
	if got := readFile(t, crash(fs, 0, 1), "/f"); got != "data" {
		t.Fatalf("after SyncDir: %q", got)
	}

	mustDo(t, fs.Rename("/f", "/g"))
	c := crash(fs, 0, 1)
	if got := readFile(t, c, "/f"); got != "data" {
		t.Fatalf("unsynced rename: old name holds %q", got)
	}
	if _, err := c.Stat("/g"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("unsynced rename: new name: %v", err)
	}
	mustDo(t, fs.SyncDir("/"))
	mustDo(t, fs.Remove("/g"))
	if got := readFile(t, crash(fs, 0, 1), "/g"); got != "data" {
		t.Fatalf("unsynced remove: file holds %q", got)
	}

	// A new directory needs its parent synced too.
	mustDo(t, fs.MkdirAll("/a/b"))
	writeFile(t, fs, "/a/b/f", "x")
	mustDo(t, fs.SyncDir("/a/b"))
	mustDo(t, fs.SyncDir("/a"))
	if _, err := crash(fs, 0, 1).List("/a"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("directory whose parent was never synced: List = %v", err)
	}
	mustDo(t, fs.SyncDir("/"))
	if got := readFile(t, crash(fs, 0, 1), "/a/b/f"); got != "x" {
		t.Fatalf("after syncing every level: %q", got)
	}
}

func TestCrashDirectoryKeepsAPrefixOfItsChanges(t *testing.T) {
	fs := vfs.NewMem()
	mustDo(t, fs.SyncDir("/"))
	for _, n := range []string{"f3", "f1", "f2"} { // names out of creation order
		writeFile(t, fs, "/"+n, n)
	}
	mustDo(t, fs.Rename("/f1", "/r1"))
	// Creation order, then the rename.
	prefixes := map[string]bool{"": true, "f3": true, "f1 f3": true, "f1 f2 f3": true, "f2 f3 r1": true}
	seen := map[string]bool{}
	for seed := range uint64(200) {
		names, err := crash(fs, 50, seed).List("/")
		mustDo(t, err)
		got := strings.Join(names, " ")
		if !prefixes[got] {
			t.Fatalf("seed %d: entries %q are not a prefix of the changes", seed, got)
		}
		seen[got] = true
	}
	if len(seen) != len(prefixes) {
		t.Fatalf("200 crashes at 50%% produced only %v", seen)
	}
}

func TestCrashRenameWithinADirectoryIsAtomic(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/tmp", "payload")
	mustDo(t, fs.SyncDir("/"))
	mustDo(t, fs.Rename("/tmp", "/final"))
	for seed := range uint64(100) {
		names, err := crash(fs, 50, seed).List("/")
		mustDo(t, err)
		if len(names) != 1 {
			t.Fatalf("seed %d: a rename left %q", seed, names)
		}
	}
}

func TestCrashKeepsEachUnsyncedWriteIndependently(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "")
	mustDo(t, fs.SyncDir("/"))
	f, err := fs.OpenRW("/f")
	mustDo(t, err)
	const n = 16
	for i := range n {
		_, err := f.WriteAt([]byte{byte('a' + i)}, int64(i))
		mustDo(t, err)
	}
	mustDo(t, f.Close())

	lengths := map[int]bool{}
	mixed := false
	for seed := range uint64(100) {
		got := readFile(t, crash(fs, 50, seed), "/f")
		lengths[len(got)] = true
		kept, lost := 0, 0
		for i := range len(got) {
			switch got[i] {
			case byte('a' + i):
				kept++
			case 0:
				lost++
			default:
				t.Fatalf("seed %d: byte %d is %q", seed, i, got[i])
			}
		}
		mixed = mixed || kept > 0 && lost > 0
	}
	if !mixed {
		t.Fatal("no crash kept some unsynced writes and lost others")
	}
	if len(lengths) < 5 {
		t.Fatalf("crashes cut the file to only %d distinct lengths", len(lengths))
	}
}

func TestCrashUnsyncedTruncate(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "abcdef")
	mustDo(t, fs.SyncDir("/"))
	f, err := fs.OpenRW("/f")
	mustDo(t, err)
	mustDo(t, f.Truncate(2))
	if got := readFile(t, crash(fs, 0, 1), "/f"); got != "abcdef" {
		t.Fatalf("unsynced shrink at 0%%: %q", got)
	}
	mustDo(t, f.Truncate(4))
	if got := readFile(t, crash(fs, 100, 1), "/f"); got != "ab\x00\x00" {
		t.Fatalf("shrink and grow at 100%%: %q", got)
	}
	mustDo(t, f.Sync())
	mustDo(t, f.Close())
	if got := readFile(t, crash(fs, 0, 1), "/f"); got != "ab\x00\x00" {
		t.Fatalf("after Sync at 0%%: %q", got)
	}
}

func TestCrashIsDeterministicAndIndependent(t *testing.T) {
	fs := vfs.NewMem()
	durableState(t, fs)
	unsyncedWorkload(t, fs)
	before := dumpString(dump(t, fs, "/"))
	a := dumpString(dump(t, crash(fs, 50, 7), "/"))
	b := dumpString(dump(t, crash(fs, 50, 7), "/"))
	if a != b {
		t.Fatalf("the same seed gave\n%s\nand\n%s", a, b)
	}
	if after := dumpString(dump(t, fs, "/")); after != before {
		t.Fatal("CrashClone changed the original")
	}

	c := crash(fs, 100, 1)
	// Everything in a clone counts as synced.
	if got, want := dumpString(dump(t, crash(c, 0, 1), "/")), dumpString(dump(t, c, "/")); got != want {
		t.Fatalf("crash of a clone at 0%% lost data:\n%s\nwant\n%s", got, want)
	}
	appendUnsynced(t, c, "/d/a", "-clone")
	mustDo(t, c.Remove("/top"))
	if after := dumpString(dump(t, fs, "/")); after != before {
		t.Fatal("changing the clone changed the original")
	}
	appendUnsynced(t, fs, "/d/a", "-original")
	if got := readFile(t, c, "/d/a"); got != "alpha+more-clone" {
		t.Fatalf("clone file holds %q", got)
	}
}

func TestCrashConfigOutOfRange(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "s")
	mustDo(t, fs.SyncDir("/"))
	appendUnsynced(t, fs, "/f", "u")
	if got := readFile(t, fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: -5}), "/f"); got != "s" {
		t.Fatalf("-5%% (clamped to 0): %q", got)
	}
	if got := readFile(t, fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 500}), "/f"); got != "su" {
		t.Fatalf("500%% (clamped to 100): %q", got)
	}
	got := readFile(t, fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 50}), "/f") // nil Rand
	if got != "s" && got != "su" && got != "s\x00" {
		t.Fatalf("50%% with a nil Rand: %q", got)
	}
}

func TestCutFile(t *testing.T) {
	fs := vfs.NewMem()
	writeFile(t, fs, "/f", "0123456789")
	mustDo(t, fs.SyncDir("/"))
	mustDo(t, fs.CutFile("/f", 4))
	if got := readFile(t, fs, "/f"); got != "0123" {
		t.Fatalf("after CutFile: %q", got)
	}
	for _, pct := range []int{0, 50, 100} {
		if got := readFile(t, crash(fs, pct, 1), "/f"); got != "0123" {
			t.Fatalf("crash at %d%% after CutFile: %q", pct, got)
		}
	}

	// A cut through unsynced data: synced "0123", current "0123abcd", cut at 6.
	appendUnsynced(t, fs, "/f", "abcd")
	mustDo(t, fs.CutFile("/f", 6))
	if got := readFile(t, fs, "/f"); got != "0123ab" {
		t.Fatalf("after the second CutFile: %q", got)
	}
	if got := readFile(t, crash(fs, 0, 1), "/f"); got != "0123" {
		t.Fatalf("crash at 0%%: %q", got)
	}
	if got := readFile(t, crash(fs, 100, 1), "/f"); got != "0123ab" {
		t.Fatalf("crash at 100%%: %q", got)
	}
	for seed := range uint64(50) {
		got := readFile(t, crash(fs, 50, seed), "/f")
		if !strings.HasPrefix(got, "0123") || len(got) > 6 {
			t.Fatalf("seed %d: crash at 50%%: %q", seed, got)
		}
	}

	// Data cut off before a sync stays cut off after it.
	f, err := fs.OpenRW("/f")
	mustDo(t, err)
	mustDo(t, f.Sync())
	mustDo(t, f.Close())
	if got := readFile(t, crash(fs, 0, 1), "/f"); got != "0123ab" {
		t.Fatalf("after Sync: %q", got)
	}

	wantErr(t, fs.CutFile("/f", -1), "CutFile(-1)")
	wantErr(t, fs.CutFile("/f", 7), "CutFile beyond the length")
	wantErrIs(t, fs.CutFile("/missing", 0), vfs.ErrNotExist, "/missing")
	mustDo(t, fs.MkdirAll("/dir"))
	wantErr(t, fs.CutFile("/dir", 0), "CutFile of a directory")
	if got := readFile(t, fs, "/f"); got != "0123ab" {
		t.Fatalf("failed CutFile changed the file: %q", got)
	}
}

func TestMemPaths(t *testing.T) {
	fs := vfs.NewMem()
	mustDo(t, fs.MkdirAll("a"))
	writeFile(t, fs, "a/b", "x")
	for _, name := range []string{"a/b", "/a/b", "/x/../a/b", "a//b/", "/../a/b"} {
		if size, err := fs.Stat(name); size != 1 || err != nil {
			t.Errorf("Stat(%q) = %d, %v", name, size, err)
		}
	}
	for _, root := range []string{"", "/", "."} {
		if names, err := fs.List(root); err != nil || len(names) != 1 {
			t.Errorf("List(%q) = %q, %v", root, names, err)
		}
		_, err := fs.Create(root)
		wantErr(t, err, fmt.Sprintf("Create(%q)", root))
		wantErr(t, fs.Remove(root), fmt.Sprintf("Remove(%q)", root))
		wantErr(t, fs.Rename(root, "/z"), fmt.Sprintf("Rename(%q, /z)", root))
		wantErr(t, fs.Rename("/a/b", root), fmt.Sprintf("Rename(/a/b, %q)", root))
	}
	_, err := fs.Open("/nope")
	if err == nil || err.Error() != "vfs: open /nope: file does not exist" {
		t.Fatalf("Open of a missing file: %v", err)
	}
	_, err = fs.Create("/a/b")
	if err == nil || err.Error() != "vfs: create /a/b: file already exists" {
		t.Fatalf("Create of an existing file: %v", err)
	}
}

func TestMemTooLarge(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/f")
	mustDo(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte("x"), 1<<62)
	wantErr(t, err, "WriteAt at 1<<62")
	_, err = f.WriteAt([]byte("x"), 1<<63-1)
	wantErr(t, err, "WriteAt at MaxInt64")
	wantErr(t, f.Truncate(1<<40), "Truncate(1<<40)")
	wantErr(t, f.Preallocate(1<<40), "Preallocate(1<<40)")
	if size, _ := f.Size(); size != 0 {
		t.Fatalf("size %d", size)
	}
}

func TestMemConcurrent(t *testing.T) {
	fs := vfs.NewMem()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			dir := fmt.Sprintf("/g%d", g)
			if err := fs.MkdirAll(dir); err != nil {
				t.Error(err)
				return
			}
			for i := range 50 {
				name := fmt.Sprintf("%s/f%d", dir, i)
				f, err := fs.Create(name)
				if err != nil {
					t.Error(err)
					return
				}
				payload := bytes.Repeat([]byte{byte(i)}, 64)
				if _, err := f.WriteAt(payload, 0); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					_ = f.Sync()
				}
				_ = f.Close()
				_ = fs.SyncDir(dir)
			}
		})
	}
	wg.Go(func() {
		for seed := range uint64(20) {
			crash(fs, 50, seed)
		}
	})
	wg.Wait()
	for g := range 4 {
		names, err := fs.List(fmt.Sprintf("/g%d", g))
		if err != nil || len(names) != 50 {
			t.Fatalf("g%d: %d files, %v", g, len(names), err)
		}
	}
}
