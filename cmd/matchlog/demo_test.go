package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoBadPlotFailsFirst: a --plot that cannot be written fails before
// the node starts: the --dir given is not created and nothing is preloaded.
func TestDemoBadPlotFailsFirst(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	isDir := filepath.Join(tmp, "d.svg")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ plot, want string }{
		{filepath.Join(tmp, "missing", "p.svg"), "its directory"},
		{filepath.Join(file, "p.svg"), "not a directory"},
		{isDir, "not a regular file"},
		{filepath.Join(tmp, "p.png"), "must end in .svg or .html"},
	} {
		dir := filepath.Join(tmp, "node")
		var out, errb bytes.Buffer
		code := run([]string{"demo", "--dir", dir, "--orders", "1000", "--plot", c.plot}, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("--plot %s: exit %d, stderr %q; want a failure naming %q", c.plot, code, errb.String(), c.want)
		}
		if strings.Contains(errb.String(), "listening on") {
			t.Errorf("--plot %s: the demo ran before failing:\n%s", c.plot, errb.String())
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("--plot %s: the node directory was created (%v)", c.plot, err)
			os.RemoveAll(dir)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(tmp, ".matchlog-plot-*")); len(ents) != 0 {
		t.Errorf("probe files left behind: %v", ents)
	}
}

// TestNodeBusyListenLeavesNoDirectory: `matchlog node` on an address that
// is in use fails before it opens or creates the node directory.
func TestNodeBusyListenLeavesNoDirectory(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "node")
	var out, errb bytes.Buffer
	code := run([]string{"node", "--dir", dir, "--listen", ln.Addr().String()}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "listen") {
		t.Fatalf("node on a busy address: exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("node on a busy address created %s (%v)", dir, err)
	}
}
