package aeronbench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRunNoClasspath: without a classpath Run fails with ErrNoClasspath,
// which names the variable, before it starts or writes anything.
func TestRunNoClasspath(t *testing.T) {
	wd := t.TempDir()
	started := false
	_, err := Run(context.Background(), Options{Orders: 10, Nodes: 3, Dir: wd, Classpath: " ",
		Service: func([]string) *exec.Cmd { started = true; return exec.Command("true") }})
	if !errors.Is(err, ErrNoClasspath) || !strings.Contains(err.Error(), ClasspathEnv+" is unset") || started {
		t.Fatalf("Run without a classpath: %v (service started: %v)", err, started)
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Fatalf("Run without a classpath left %v", ents)
	}
	if _, err := Run(context.Background(), Options{Nodes: 2, Classpath: "x"}); err == nil || !strings.Contains(err.Error(), "want 1 or 3") {
		t.Fatalf("2 nodes: %v", err)
	}
}

// TestWindow: the worst and the p99 are of the probes due in the window
// only.
func TestWindow(t *testing.T) {
	t0 := time.Now()
	c := &client{}
	for i := range 300 {
		d := time.Millisecond
		if i == 150 {
			d = 90 * time.Millisecond
		}
		c.lat = append(c.lat, sample{due: t0.Add(time.Duration(i) * time.Millisecond), d: d})
	}
	c.lat = append(c.lat, sample{due: t0.Add(time.Second), d: time.Second}) // outside
	worst, p99, n := c.window(t0.Add(100*time.Millisecond), t0.Add(300*time.Millisecond))
	if worst != 90*time.Millisecond || p99 != time.Millisecond || n != 200 {
		t.Fatalf("window: worst %v, p99 %v, %d probes", worst, p99, n)
	}
	if w, p, n := c.window(t0.Add(2*time.Second), t0.Add(3*time.Second)); w != 0 || p != 0 || n != 0 {
		t.Fatalf("empty window: %v %v %d", w, p, n)
	}
}

// TestTailBuffer: whole lines reach onLine across writes, and the tail
// stays bounded.
func TestTailBuffer(t *testing.T) {
	var lines []string
	b := &tailBuffer{onLine: func(l []byte) { lines = append(lines, string(l)) }}
	b.Write([]byte(`{"msg":"sta`))
	b.Write([]byte("rted\"}\n{\"msg\":\"status\",\"role\":\"LEADER\"}\npartial"))
	if len(lines) != 2 || lines[0] != `{"msg":"started"}` {
		t.Fatalf("lines %q", lines)
	}
	if r, ok := parseRecord([]byte(lines[1])); !ok || r.Msg != "status" || r.Role != "LEADER" {
		t.Fatalf("record %+v %v", r, ok)
	}
	if _, ok := parseRecord([]byte("2026-12-02T02:15:52Z info driver")); ok {
		t.Fatal("a non-JSON line parsed as a record")
	}
	for range 1000 {
		b.Write([]byte(strings.Repeat("x", 999) + "\n"))
	}
	if n := len(b.String()); n > 64<<10 {
		t.Fatalf("tail %d bytes", n)
	}
}
