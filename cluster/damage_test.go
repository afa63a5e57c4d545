package cluster_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// treeSums is the SHA-256 of every file under dir, by path.
func treeSums(t *testing.T, fsys vfs.FS, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(d string)
	walk = func(d string) {
		names, err := fsys.List(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			p := fsys.Join(d, name)
			size, err := fsys.Stat(p)
			if err != nil { // a directory
				walk(p)
				continue
			}
			b := readAll(t, fsys, p, size)
			s := sha256.Sum256(b)
			out[p] = hex.EncodeToString(s[:])
		}
	}
	walk(dir)
	return out
}

func readAll(t *testing.T, fsys vfs.FS, p string, size int64) []byte {
	t.Helper()
	f, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b
}

// damageFS is a node directory to damage: its file system and paths.
type damageFS struct {
	t    *testing.T
	fs   vfs.FS
	dir  string
	cdir string
	adir string
}

func (d *damageFS) path(rel ...string) string { return d.fs.Join(append([]string{d.dir}, rel...)...) }

func (d *damageFS) read(p string) []byte {
	size, err := d.fs.Stat(p)
	if err != nil {
		d.t.Fatal(err)
	}
	return readAll(d.t, d.fs, p, size)
}

func (d *damageFS) write(p string, b []byte) {
	f, err := d.fs.OpenRW(p)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(len(b))); err != nil {
		d.t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		d.t.Fatal(err)
	}
}

func (d *damageFS) flip(p string, off int) {
	b := d.read(p)
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0x5a
	d.write(p, b)
}

func (d *damageFS) cut(p string, n int) {
	b := d.read(p)
	d.write(p, b[:n])
}

// segment is the only segment file of recording id.
func (d *damageFS) segment(id int64) string {
	names, err := d.fs.List(d.adir)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, n := range names {
		if rid, _, err := archive.ParseSegmentFileName(n); err == nil && rid == id {
			return d.fs.Join(d.adir, n)
		}
	}
	d.t.Fatalf("no segment of recording %d in %v", id, names)
	return ""
}

// frames lists the offsets of the DATA frames in segment b.
func frames(b []byte) []int {
	var out []int
	for off := 0; off+32 <= len(b); {
		l := int32(binary.LittleEndian.Uint32(b[off:]))
		if l <= 0 {
			break
		}
		if binary.LittleEndian.Uint16(b[off+6:]) == archive.FrameTypeData {
			out = append(out, off)
		}
		off += int(archive.AlignedFrameLength(l))
	}
	return out
}

// buildDamageNode runs a node twice: 30 messages with a snapshot after
// 20, then 20 more with a snapshot after 10, closed. recording.log then
// holds TERM 0, a snapshot set, TERM 1 and a second set.
func buildDamageNode(t *testing.T, fsys vfs.FS, dir string) {
	f := newFixture(t, fsys)
	f.opts.Dir = dir
	id := uint64(0)
	for _, run := range [][2]int{{30, 20}, {20, 10}} {
		f.open()
		s, _ := f.node.Connect("aeron:udp?endpoint=localhost:1", 102)
		for i := 1; i <= run[0]; i++ {
			id++
			if err := f.node.Offer(s, msg(id, 0)); err != nil {
				t.Fatal(err)
			}
			f.work(2)
			if i == run[1] {
				f.node.RequestSnapshot()
				f.work(1)
				if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.close()
	}
}

// latestSnapshot is the recording id of the newest snapshot on stream.
func (d *damageFS) latestSnapshot(stream int32) int64 {
	cat, err := archive.OpenCatalogFile(d.fs, d.adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		d.t.Fatal(err)
	}
	defer cat.Close()
	id := int64(-1)
	for _, e := range cat.Entries() {
		if e.Descriptor.StreamID == stream {
			id = max(id, e.Descriptor.RecordingID)
		}
	}
	if id < 0 {
		d.t.Fatalf("no snapshot recording on stream %d", stream)
	}
	return id
}

// TestDamagedNodeRefusesAndLeavesFiles damages copies of a node directory
// in every way the design names and opens the node: each start refuses,
// naming the damaged file and the damage, and leaves every file
// byte-identical — on the memory and the OS file system.
func TestDamagedNodeRefusesAndLeavesFiles(t *testing.T) {
	// Recording 0 is the log.
	cases := []struct {
		name   string
		damage func(d *damageFS)
		want   []string // each must appear in the error (or the repair's log)
		repair bool     // a crash repair the design names: the start goes on and logs it
	}{
		{"catalog truncated", func(d *damageFS) { d.cut(d.fs.Join(d.adir, "archive.catalog"), 100) }, []string{"archive.catalog"}, false},
		{"catalog zero length", func(d *damageFS) { d.cut(d.fs.Join(d.adir, "archive.catalog"), 0) }, []string{"archive.catalog"}, false},
		{"catalog descriptor byte flipped", func(d *damageFS) {
			// recording 0's stream id
			d.flip(d.fs.Join(d.adir, "archive.catalog"), archive.CatalogHeaderLength+archive.DescriptorHeaderLength+76)
		}, []string{"recording 0"}, false},
		{"log segment truncated mid-frame", func(d *damageFS) {
			p := d.segment(0)
			fr := frames(d.read(p))
			d.cut(p, fr[len(fr)/2]+40)
		}, []string{"0-0.rec"}, false},
		{"log segment extended with garbage", func(d *damageFS) {
			p := d.segment(0)
			b := d.read(p)
			d.write(p, append(b, strings.Repeat("garbage!", 512)...))
		}, []string{"0-0.rec"}, false},
		{"log segment deleted", func(d *damageFS) {
			if err := d.fs.Remove(d.segment(0)); err != nil {
				d.t.Fatal(err)
			}
		}, []string{"0-0.rec"}, false},
		{"snapshot segment deleted", func(d *damageFS) {
			p := d.segment(d.latestSnapshot(cluster.ServiceSnapshotStreamID))
			if err := d.fs.Remove(p); err != nil {
				d.t.Fatal(err)
			}
		}, []string{"snapshot", "-0.rec"}, false},
		{"log frame byte flipped", func(d *damageFS) {
			p := d.segment(0)
			fr := frames(d.read(p))
			d.flip(p, fr[len(fr)-3]+40) // in the replay range, not the last frame
		}, []string{"recording 0", "0-0.rec", "offset"}, false},
		{"snapshot frame byte flipped", func(d *damageFS) {
			p := d.segment(d.latestSnapshot(cluster.ServiceSnapshotStreamID))
			fr := frames(d.read(p))
			d.flip(p, fr[1]+40)
		}, []string{"-0.rec", "offset", "position"}, false},
		{"recording.log entry byte flipped", func(d *damageFS) {
			d.flip(d.fs.Join(d.cdir, "recording.log"), 5*64+8) // the last SNAPSHOT entry's term id
		}, []string{"recording.log"}, false},
		{"recording.log cut to 70 bytes", func(d *damageFS) { d.cut(d.fs.Join(d.cdir, "recording.log"), 70) }, []string{"recording.log"}, false},
		{"node-state.dat empty", func(d *damageFS) { d.cut(d.fs.Join(d.cdir, "node-state.dat"), 0) }, []string{"node-state.dat"}, false},
		{"node-state.dat flipped", func(d *damageFS) { d.flip(d.fs.Join(d.cdir, "node-state.dat"), 0) }, []string{"node-state.dat"}, false},
		{"cluster-mark.dat empty", func(d *damageFS) { d.cut(d.fs.Join(d.cdir, "cluster-mark.dat"), 0) }, []string{"crash repair", "cluster-mark.dat"}, true},
		{"cluster-mark.dat flipped", func(d *damageFS) { d.flip(d.fs.Join(d.cdir, "cluster-mark.dat"), 0) }, []string{"cluster-mark.dat"}, false},
	}
	for _, fsName := range []string{"mem", "os"} {
		for _, c := range cases {
			t.Run(fsName+"/"+c.name, func(t *testing.T) {
				var fsys vfs.FS
				dir := "n"
				if fsName == "mem" {
					fsys = vfs.NewMem()
				} else {
					fsys = vfs.Default
					dir = filepath.Join(t.TempDir(), "n")
				}
				buildDamageNode(t, fsys, dir)
				d := &damageFS{t: t, fs: fsys, dir: dir}
				d.cdir, d.adir = d.path(cluster.ClusterDirName), d.path(cluster.ArchiveDirName)
				c.damage(d)
				before := treeSums(t, fsys, dir)
				f := newFixture(t, fsys)
				f.opts.Dir = dir
				f.svc = &timerService{delay: 20_000, egress: true}
				o := f.opts
				o.Service = f.svc
				var logged bytes.Buffer
				o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
				n, err := cluster.Open(o)
				if c.repair {
					if err != nil {
						t.Fatalf("the start refused a crash repair: %v", err)
					}
					n.Close()
					for _, w := range c.want {
						if !strings.Contains(logged.String(), w) {
							t.Errorf("the log does not name %q: %s", w, logged.String())
						}
					}
					return
				}
				if err == nil {
					n.Close()
					t.Fatalf("the node started on a directory with %s", c.name)
				}
				t.Log(err)
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %q: %v", w, err)
					}
				}
				after := treeSums(t, fsys, dir)
				diffSums(t, before, after)
			})
		}
	}
}

func diffSums(t *testing.T, before, after map[string]string) {
	t.Helper()
	var paths []string
	for p := range before {
		paths = append(paths, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		if before[p] != after[p] {
			switch {
			case before[p] == "":
				t.Errorf("the failed start created %s", p)
			case after[p] == "":
				t.Errorf("the failed start removed %s", p)
			default:
				t.Errorf("the failed start changed %s", p)
			}
		}
	}
}

// A sync level other than 0, 1 or 2 is refused by Open before it creates
// the node directory or writes a file.
func TestOpenRefusesBadSyncLevel(t *testing.T) {
	for _, level := range []archive.SyncLevel{-1, 3} {
		mem := vfs.NewMem()
		f := newFixture(t, mem)
		f.opts.FileSyncLevel = level
		f.svc = &timerService{delay: 20_000}
		o := f.opts
		o.Service = f.svc
		n, err := cluster.Open(o)
		if err == nil {
			n.Close()
			t.Fatalf("level %d: the node opened", level)
		}
		if !strings.Contains(err.Error(), "FileSyncLevel") || !strings.Contains(err.Error(), "sync level") {
			t.Errorf("level %d: error does not name the option: %v", level, err)
		}
		if names, err := mem.List("."); err != nil || len(names) != 0 {
			t.Errorf("level %d: the refused open left %v (%v)", level, names, err)
		}
	}
}

// A torn last append of recording.log (a partial entry) is the crash
// repair the design names: the start cuts it, logs what it cut, keeps the
// file as it was in a backup, and the next snapshot removes the backup.
func TestCrashRepairLoggedAndBackedUp(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fsys vfs.FS = vfs.NewMem()
			dir := "n"
			if fsName == "os" {
				fsys, dir = vfs.Default, filepath.Join(t.TempDir(), "n")
			}
			buildDamageNode(t, fsys, dir)
			d := &damageFS{t: t, fs: fsys, dir: dir}
			d.cdir, d.adir = d.path(cluster.ClusterDirName), d.path(cluster.ArchiveDirName)
			rl := d.fs.Join(d.cdir, "recording.log")
			b := d.read(rl)
			torn := append(slices.Clone(b), b[len(b)-64:len(b)-40]...) // 24 bytes of an entry
			d.write(rl, torn)

			f := newFixture(t, fsys)
			f.opts.Dir = dir
			var logged bytes.Buffer
			f.opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			f.open()
			for _, w := range []string{"crash repair", "recording.log", "cut 24 bytes", "backup=" + rl + ".crash-repair-"} {
				if !strings.Contains(logged.String(), w) {
					t.Errorf("the log does not say %q:\n%s", w, logged.String())
				}
			}
			names, _ := fsys.List(d.cdir)
			var backup string
			for _, n := range names {
				if strings.HasPrefix(n, "recording.log.crash-repair-") {
					backup = d.fs.Join(d.cdir, n)
				}
			}
			if backup == "" {
				t.Fatalf("no backup in %v", names)
			}
			if !bytes.Equal(d.read(backup), torn) {
				t.Error("the backup is not the file as the start found it")
			}
			f.node.RequestSnapshot()
			f.work(1)
			if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			f.work(2)
			if _, err := fsys.Stat(backup); err == nil {
				t.Error("the backup outlived the next snapshot")
			}
			f.close()
		})
	}
}
