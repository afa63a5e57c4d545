package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cmd/matchlog/internal/demo"
)

// TestDemoSmall runs the whole demo on a small book: both snapshots, the
// restart with the same state hash, every probe answered, the JSON fields
// the README documents, the text report and the plot.
func TestDemoSmall(t *testing.T) {
	opts := demo.Options{Orders: 20_000, Rate: 2000, Baseline: 300 * time.Millisecond, Gap: 300 * time.Millisecond}
	if testing.Short() { // the race detector's run
		opts.Orders, opts.Rate, opts.Baseline, opts.Gap = 5_000, 1000, 200*time.Millisecond, 200*time.Millisecond
	}
	dir := filepath.Join(t.TempDir(), "node")
	opts.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := demo.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SyncLevel != int(demo.DefaultSyncLevel) { // Options{} leaves SyncLevel nil
		t.Fatalf("ran at file sync level %d, want the documented default %d", rep.SyncLevel, demo.DefaultSyncLevel)
	}
	if !rep.StateHashEqual || rep.StateHashBefore == "" {
		t.Fatalf("state hash before %s after %s", rep.StateHashBefore, rep.StateHashAfter)
	}
	if rep.RestingOrders != opts.Orders {
		t.Fatalf("%d resting orders, want %d", rep.RestingOrders, opts.Orders)
	}
	if rep.ProbesSent < 500 || rep.ProbesLost != 0 {
		t.Fatalf("%d probes sent, %d lost", rep.ProbesSent, rep.ProbesLost)
	}
	if len(rep.Snapshots) != 2 || rep.Snapshots[0].Mode != "pauseless" || rep.Snapshots[1].Mode != "stw" {
		t.Fatalf("snapshots %+v", rep.Snapshots)
	}
	for _, s := range rep.Snapshots {
		if s.Bytes < int64(opts.Orders)*40 || s.TakeMs <= 0 {
			t.Fatalf("snapshot %+v", s)
		}
	}
	// Stop the world holds the duty cycle for the whole take; pauseless
	// only for the clone.
	if st, pl := rep.Snapshots[1], rep.Snapshots[0]; st.PrepareMs < st.TakeMs*0.9 || pl.PrepareMs >= pl.TakeMs {
		t.Fatalf("duty cycle held: stw %.2f of %.2f ms, pauseless %.2f of %.2f ms", st.PrepareMs, st.TakeMs, pl.PrepareMs, pl.TakeMs)
	}
	if rep.ReplayedEntries < 1 || rep.SnapshotLoadMs <= 0 || rep.RestartMs < rep.SnapshotLoadMs {
		t.Fatalf("restart: %+v", rep)
	}
	if rep.ProbeP50Us <= 0 || rep.ProbeP99Us < rep.ProbeP50Us || rep.ProbeMaxUs < rep.ProbeP99Us {
		t.Fatalf("probe quantiles p50 %v p99 %v max %v", rep.ProbeP50Us, rep.ProbeP99Us, rep.ProbeMaxUs)
	}
	// The restart shows as the latency of the probes held behind it.
	if rep.RestartPauseMsMax < rep.SnapshotLoadMs {
		t.Fatalf("restart pause %.1f ms below the snapshot load %.1f ms", rep.RestartPauseMsMax, rep.SnapshotLoadMs)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"orders", "pauseless_pause_ms_max", "stw_pause_ms_max", "take_ms", "probe_p50_us", "probe_p99_us", "restart_ms", "replay_ms", "state_hash_equal", "load_avg", "load_avg_end",
		"machine", "stalls", "egress_queue_bytes", "preload_window", "probe_window"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	// The directory now holds a node: a second demo refuses it.
	if _, err := demo.Run(ctx, demo.Options{Dir: dir, Orders: 10}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("demo on a used directory: %v", err)
	}
	var txt bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	mach, _ := m["machine"].(map[string]any)
	if mach["go_version"] != runtime.Version() || mach["date"] == "" || mach["os"] != runtime.GOOS {
		t.Errorf("JSON machine %v", mach)
	}
	for _, s := range []string{"pauseless", "stw", "state hash", "equal", "load average", "worst probe", "outside", runtime.Version(), rep.Machine.Date} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, txt.String())
		}
	}
	svg := filepath.Join(t.TempDir(), "p.svg")
	if err := rep.Chart().WriteFile(svg); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(raw))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("plot is not well-formed: %v", err)
		}
	}
	for _, s := range []string{"pauseless snapshot", "stop-the-world snapshot", "restart"} {
		if !bytes.Contains(raw, []byte(s)) {
			t.Errorf("plot lacks %q", s)
		}
	}
}
