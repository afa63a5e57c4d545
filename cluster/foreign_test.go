package cluster_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func requireSameTree(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok || !bytes.Equal(v, w) {
			t.Errorf("%s changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s created", k)
		}
	}
}

// Open refuses a node directory that real Aeron wrote (its consensus
// module's cluster-mark.dat names no matchlog service) before it touches
// anything: a clear error, every file byte-identical afterwards. The same
// for a cluster directory holding recording.log without a mark file, and
// for a mark file of another service.
func TestOpenRefusesForeignDirectory(t *testing.T) {
	open := func(dir string) error {
		n, err := cluster.Open(cluster.Options{FS: vfs.Default, Dir: dir, Service: &timerService{delay: 20_000},
			TermLength: 64 * 1024, SegmentLength: 128 * 1024, FileSyncLevel: 1})
		if err == nil {
			n.Close()
		}
		return err
	}
	dir := fixtures.CopyAeronSingleNode(t)
	before := readTree(t, dir)
	err := open(dir)
	if !errors.Is(err, cluster.ErrForeignMarkFile) || !strings.Contains(err.Error(), "Aeron's consensus module") ||
		!strings.Contains(err.Error(), "never overwrites") {
		t.Fatalf("Open of Aeron's directory = %v, want ErrForeignMarkFile naming Aeron", err)
	}
	requireSameTree(t, before, readTree(t, dir))

	// Another service's mark file (same layout, another service name).
	mark := filepath.Join(dir, "cluster", cluster.MarkFileName)
	b := before[filepath.Join("cluster", cluster.MarkFileName)]
	m, derr := cluster.DecodeMarkFile(b)
	if derr != nil || m.IsMatchlog() {
		t.Fatalf("Aeron's mark file decodes as %+v, %v", m, derr)
	}
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	// No mark file beside a recording.log: not a node's.
	before = readTree(t, dir)
	if err := open(dir); !errors.Is(err, cluster.ErrForeignMarkFile) || !strings.Contains(err.Error(), "recording.log") {
		t.Fatalf("Open without a mark file = %v", err)
	}
	requireSameTree(t, before, readTree(t, dir))

	// Only Aeron's archive (no cluster directory): its catalog and mark
	// file are another program's.
	arc := fixtures.CopyAeronSingleNode(t, "archive")
	before = readTree(t, arc)
	if err := open(arc); !errors.Is(err, cluster.ErrForeignMarkFile) || !strings.Contains(err.Error(), "archive.catalog") {
		t.Fatalf("Open of Aeron's archive alone = %v", err)
	}
	requireSameTree(t, before, readTree(t, arc))
}
