package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// deadPID returns the id of a process that has exited and been reaped:
// what a node killed with SIGKILL leaves in its mark files.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	return c.Process.Pid
}

// treeHashes returns the SHA-256 of every file under dir, by relative path.
func treeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test when a file under dir differs from before.
func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed %s", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created %s", what, k)
		}
	}
}

// Every offline verb that writes refuses a live node (one held open in this
// process: fresh mark files naming this process), exits 1 naming the pid,
// and changes no byte of the directory; once the node is gone they run.
func TestWritingVerbsRefuseLiveNode(t *testing.T) {
	dir, _, _ := buildNodeDir(t)
	adir := filepath.Join(dir, "archive")
	tn := openTestNode(t, dir, nil)
	pid := fmt.Sprintf("process %d is running", os.Getpid())
	// The live node prepares its next log segment in the background
	// (*.rec.prep): that file is the node's own doing, not the verbs'.
	hashes := func() map[string]string {
		h := treeHashes(t, dir)
		for k := range h {
			if strings.HasSuffix(k, archive.PreparedSuffix) {
				delete(h, k)
			}
		}
		return h
	}
	before := hashes()
	for _, args := range [][]string{
		{"cluster", "invalidate-latest-snapshot", "--dir", dir},
		{"cluster", "revalidate-snapshot", "--dir", dir},
		{"cluster", "snapshot", "--dir", dir},
		{"archive", "detach", "--dir", adir, "--id", "0", "--position", "131072"},
		{"archive", "delete", "--dir", adir, "--id", "0"},
		{"archive", "purge", "--dir", adir, "--id", "0", "--position", "131072"},
		{"archive", "verify", "--dir", adir, "--truncate"},
	} {
		code, out, errb := runCLI(t, args...)
		if code != 1 || !strings.Contains(errb, pid) || !strings.Contains(errb, "activity timestamp") {
			t.Errorf("%q on a live node: exit %d, stdout %q, stderr %q; want 1 naming %q", args, code, out, errb, pid)
		}
		sameTree(t, strings.Join(args[:2], " ")+" on a live node", before, hashes())
	}
	tn.close()
}

// A node killed with SIGKILL leaves fresh activity timestamps and a pid
// that is gone: it is not live, at once, for every tool and for Open.
func TestKilledNodeIsNotLive(t *testing.T) {
	dir, _, _ := buildNodeDir(t)
	dead := uint64(deadPID(t))
	now := uint64(time.Now().UnixMilli())
	for _, f := range []struct {
		path              string
		activityAt, pidAt int
	}{
		{filepath.Join(dir, "cluster", cluster.MarkFileName), 16, 32},
		{filepath.Join(dir, "archive", archive.MarkFileName), 16, 32},
	} {
		b := mustRead(t, f.path)
		binary.LittleEndian.PutUint64(b[f.activityAt:], now)
		binary.LittleEndian.PutUint64(b[f.pidAt:], dead)
		if err := os.WriteFile(f.path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := archive.ReadMarkFileIn(vfs.Default, filepath.Join(dir, "archive")); err != nil || m.PID != int64(dead) || m.ActivityTimestamp != int64(now) {
		t.Fatalf("archive mark file as written: %+v, %v", m, err)
	}
	code, out, _ := runCLI(t, "cluster", "describe", "--dir", dir)
	if code != 0 || strings.Contains(out, "LIVE") || !strings.Contains(out, "not stopped cleanly (crashed?), not live") {
		t.Errorf("describe of a killed node: exit %d\n%s", code, out)
	}
	mustCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", dir)
	mustCLI(t, "cluster", "revalidate-snapshot", "--dir", dir)
	mustCLI(t, "archive", "verify", "--dir", filepath.Join(dir, "archive"), "--truncate")
	// matchlog node opens it at once.
	tn := openTestNode(t, dir, nil)
	tn.close()
}

// A refused detach, delete or purge leaves the archive as it found it: the
// mark file is not rewritten and files waiting to be unlinked stay, even
// with --now (which unlinks them first only when the command can go on).
func TestRefusedRemovalLeavesArchive(t *testing.T) {
	d := filepath.Join(fixtures.CopyAeronSingleNode(t, "archive"), "archive")
	mustCLI(t, "archive", "detach", "--dir", d, "--id", "0", "--position", "131072")
	mustCLI(t, "archive", "delete", "--dir", d, "--id", "0") // 60 s delay: 0-0.rec.deleted waits
	if !fileExists(d, "0-0.rec.deleted") {
		t.Fatal("no pending file to keep")
	}
	before := treeHashes(t, d)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"not after the start segment", []string{"archive", "purge", "--dir", d, "--id", "0", "--position", "131072", "--now"}},
		{"not after the start segment", []string{"archive", "purge", "--dir", d, "--id", "0", "--position", "131072", "--delay", "0"}},
		{"not a segment boundary", []string{"archive", "detach", "--dir", d, "--id", "0", "--position", "5"}},
		{"past the stop segment", []string{"archive", "detach", "--dir", d, "--id", "0", "--position", "393216"}},
		{"files waiting", []string{"archive", "delete", "--dir", d, "--id", "0"}},
		{"recording not found", []string{"archive", "purge", "--dir", d, "--id", "9", "--position", "131072"}},
	} {
		failCLI(t, c.want, c.args...)
		sameTree(t, strings.Join(c.args, " "), before, treeHashes(t, d))
	}
}
