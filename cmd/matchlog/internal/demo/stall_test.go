package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cmd/matchlog/internal/demo"
	"github.com/matchlog/matchlog/internal/vfs"
)

// slowSyncFS is an injector that delays one file sync by delay once armed.
type slowSyncFS struct {
	*vfs.Injector
	delay time.Duration
	armed atomic.Bool
	fired atomic.Int64 // unix ns of the delayed sync's start
}

func newSlowSyncFS(fs vfs.FS, delay time.Duration) *slowSyncFS {
	f := &slowSyncFS{delay: delay}
	f.Injector = vfs.NewInjector(fs, 0, -1).Hook(vfs.Hook{Ops: vfs.Ops(vfs.OpSync), Before: func(vfs.Op, string) error {
		if f.armed.CompareAndSwap(true, false) {
			f.fired.Store(time.Now().UnixNano())
			time.Sleep(f.delay)
		}
		return nil
	}})
	return f
}

// armOnProbes is a progress writer that arms fs after the given delay
// once the demo says the probes started.
type armOnProbes struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	fs    *slowSyncFS
	after time.Duration
	once  sync.Once
}

func (w *armOnProbes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "\nprobes:") {
		w.once.Do(func() { time.AfterFunc(w.after, func() { w.fs.armed.Store(true) }) })
	}
	return len(p), nil
}

// TestDemoStallOutsideWindows injects one slow log sync (400 ms) during the
// baseline, before the first snapshot's window: the report's worst probe
// outside the windows shows it (with the max outside the windows), and names
// the node's log recording among what held it, in the JSON and in the text.
// The test asserts no timing of the machine's own: on a loaded machine the
// probes start late and more overlaps the stalled probe's wait (a late
// timer, the next window's snapshot), so the test asks that the log
// recording be among the causes, not that it be the only or the first one.
func TestDemoStallOutsideWindows(t *testing.T) {
	const delay = 400 * time.Millisecond
	fs := newSlowSyncFS(vfs.Default, delay)
	prog := &armOnProbes{fs: fs, after: 150 * time.Millisecond}
	opts := demo.Options{Orders: 5_000, Instruments: 2, Rate: 1000, SyncLevel: new(archive.SyncData), Baseline: time.Second,
		Gap: 200 * time.Millisecond, Settle: 50 * time.Millisecond, FS: fs, Progress: prog,
		Dir: filepath.Join(t.TempDir(), "node")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := demo.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fs.fired.Load() == 0 {
		t.Fatal("the slow sync never ran")
	}
	var out *demo.Stall
	windows := map[string]bool{}
	for i := range rep.Stalls {
		windows[rep.Stalls[i].Window] = true
		if rep.Stalls[i].Window == "outside" {
			out = &rep.Stalls[i]
		}
	}
	for _, w := range []string{"pauseless", "stw", "restart", "outside"} {
		if !windows[w] {
			t.Errorf("no worst probe for %q in %+v", w, rep.Stalls)
		}
	}
	if out == nil {
		t.Fatal("no worst probe outside the windows")
	}
	if out.LatencyMs < ms(delay) || out.AtS <= 0 {
		t.Fatalf("worst probe outside the windows %+v: want at least %v", out, delay)
	}
	if rep.ProbeMaxUs < 1000*ms(delay)*0.99 {
		t.Fatalf("max outside the windows %.0f µs hides the %v stall", rep.ProbeMaxUs, delay)
	}
	if !slices.ContainsFunc(out.Causes, func(c demo.Cause) bool { return c.Kind == demo.CauseLogRecord && c.Ms >= ms(delay) }) {
		t.Fatalf("the stall's causes %+v: want the log recording of at least %v among them", out.Causes, delay)
	}
	// The duty cycle that held the slow sync says where its time went.
	seen := false
	for _, c := range out.Causes {
		if c.Kind != demo.CauseDoWork || c.Ms < ms(delay) {
			continue
		}
		seen = true
		m := regexp.MustCompile(`log recording ([0-9.]+)`).FindStringSubmatch(c.What)
		if m == nil {
			t.Errorf("the duty cycle's split names no log recording: %q", c.What)
			continue
		}
		if rec, err := strconv.ParseFloat(m[1], 64); err != nil || rec < ms(delay) {
			t.Errorf("the duty cycle's split does not show the %v log recording: %q", delay, c.What)
		}
	}
	if !seen {
		t.Errorf("no duty cycle of at least %v among %+v", delay, out.Causes)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"stalls":[`, `"window":"outside"`, `"kind":"log_record"`, `"causes":[`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON report lacks %s", k)
		}
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	// The outside row and its continuation lines, up to the blank line.
	var block strings.Builder
	in := false
	for l := range strings.Lines(txt.String()) {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "outside "):
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		}
		if in {
			block.WriteString(l)
		}
	}
	if !strings.Contains(block.String(), "log recording (archive write and file sync)") {
		t.Fatalf("the text report's outside row %q does not name the log recording:\n%s", block.String(), txt.String())
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
