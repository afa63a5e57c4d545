package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// logBuffer collects JSON log lines written from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records parses every line as one JSON object.
func (l *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// find returns the index and record of the first record with message msg
// at or after index from whose attributes match kv (name, value, ...;
// numbers compare as float64).
func find(recs []map[string]any, from int, msg string, kv ...any) (int, map[string]any) {
next:
	for i := from; i < len(recs); i++ {
		if recs[i]["msg"] != msg {
			continue
		}
		for j := 0; j+1 < len(kv); j += 2 {
			want := kv[j+1]
			switch w := want.(type) {
			case int:
				want = float64(w)
			case int64:
				want = float64(w)
			case uint64:
				want = float64(w)
			}
			if recs[i][kv[j].(string)] != want {
				continue next
			}
		}
		return i, recs[i]
	}
	return -1, nil
}

func num(t *testing.T, r map[string]any, key string) float64 {
	t.Helper()
	v, ok := r[key].(float64)
	if !ok {
		t.Fatalf("record %v: %s is not a number", r, key)
	}
	return v
}

// TestLifecycleLog runs a node twice on one directory with a JSON logger
// and checks the lifecycle records: open and the recovery plan (the second
// start from the first run's snapshot), session open and close, refusals,
// snapshot start and end, shutdown and close, with their positions.
func TestLifecycleLog(t *testing.T) {
	dir := t.TempDir()
	var lb logBuffer
	opts := baseOptions(vfs.Default, dir)
	opts.Logger = slog.New(slog.NewJSONHandler(&lb, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ts := startServer(t, opts)
	addr := ts.srv.Addr().String()
	a := dialRaw(t, addr)
	a.connect(5)
	a.answer(a.cmd(defineCmd(1)))
	a.answer(a.cmd(limitCmd(1, 1, 2, 100, 3)))
	ts.srv.RequestSnapshot()
	waitFor(t, "the snapshot", func() bool {
		st, err := ts.srv.NodeStats(context.Background())
		return err == nil && st.Snapshots == 1
	})
	// Refused: input before Connect; a command of another source.
	bad := dialRaw(t, addr)
	bad.writeRaw(wiresbe.AppendFrame(nil, wiresbe.AppendKeepalive(nil, 0)))
	bad.closed()
	other := dialRaw(t, addr)
	other.connect(6)
	c := limitCmd(1, 2, 1, 90, 1)
	c.Source, c.Seq = 99, 1
	msg, err := wire.AppendCommand(nil, &c)
	if err != nil {
		t.Fatal(err)
	}
	other.send(msg)
	other.closed()
	a.send(wiresbe.AppendCloseSession(nil, a.session))
	a.closed()
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	recs := lb.records(t)

	i, plan := find(recs, 0, "recovery plan", "snapshot_position", -1, "replay_from", 0, "replay_to", 0, "log_recording", -1)
	if plan == nil {
		t.Fatalf("no recovery plan of an empty directory in %v", recs)
	}
	i, open := find(recs, i, "open", "dir", dir, "term", 0, "snapshot_position", -1, "archive_start", 0)
	if open == nil || open["level"] != "INFO" || num(t, open, "log_position") <= 0 {
		t.Fatalf("no open record after the plan: %v", recs)
	}
	i, _ = find(recs, i, "serving", "addr", addr)
	if i < 0 {
		t.Fatalf("no serving record: %v", recs)
	}
	_, so := find(recs, i, "session open", "session", a.session, "client", 5)
	if so == nil || !strings.HasPrefix(so["remote"].(string), "127.0.0.1:") {
		t.Fatalf("no session open of session %d: %v", a.session, recs)
	}
	j, start := find(recs, i, "snapshot start", "mode", "pauseless")
	if start == nil {
		t.Fatalf("no snapshot start: %v", recs)
	}
	S := num(t, start, "position")
	_, end := find(recs, j, "snapshot end", "position", S, "mode", "pauseless")
	if end == nil || num(t, end, "bytes") <= 0 || num(t, end, "duration_s") <= 0 || num(t, end, "pause_s") < 0 ||
		num(t, end, "service_recording") < 1 || num(t, end, "cm_recording") < 1 {
		t.Fatalf("no snapshot end at %v with its bytes and durations: %v", S, recs)
	}
	if _, r := find(recs, i, "connection refused", "code", "ProtocolError", "level", "WARN"); r == nil ||
		!strings.Contains(r["reason"].(string), "before Connect") {
		t.Fatalf("no refused connection: %v", recs)
	}
	if _, r := find(recs, i, "session close", "session", other.session, "client", 6, "code", "ProtocolError",
		"level", "WARN", "log_reason", "SERVICE_ACTION"); r == nil || !strings.Contains(r["reason"].(string), "source 99") {
		t.Fatalf("no refused command's session close: %v", recs)
	}
	if _, r := find(recs, i, "session close", "session", a.session, "client", 5, "code", "ClientAction",
		"level", "INFO", "log_reason", "CLIENT_ACTION"); r == nil {
		t.Fatalf("no session close of session %d: %v", a.session, recs)
	}
	// The shutdown record carries the position when the shutdown began:
	// at least S; the session events after the snapshot may still be on
	// their way into the log then (under -race they were), so only the
	// close record, written after them, must be past S.
	k, sd := find(recs, i, "shutdown", "cause", "requested")
	if sd == nil || num(t, sd, "log_position") < S {
		t.Fatalf("no shutdown: %v", recs)
	}
	k, cl := find(recs, k, "close", "snapshot_position", S, "snapshots", 1)
	if cl == nil || num(t, cl, "log_position") <= S || num(t, cl, "log_position") < num(t, sd, "log_position") ||
		num(t, cl, "durable_position") != num(t, cl, "log_position") {
		t.Fatalf("no close after the shutdown with the positions: %v", recs)
	}
	P := num(t, cl, "log_position")
	if _, st := find(recs, k, "stopped", "sessions", 2, "closed", 2, "malformed", 2); st == nil {
		t.Fatalf("no stopped record: %v", recs)
	}

	// The restart recovers from the snapshot and replays the log after it.
	lb.mu.Lock()
	lb.b.Reset()
	lb.mu.Unlock()
	ts2 := startServer(t, opts)
	if err := ts2.stop(); err != nil {
		t.Fatal(err)
	}
	recs = lb.records(t)
	i, plan = find(recs, 0, "recovery plan", "snapshot_position", S, "replay_from", S, "replay_to", P, "log_recording", 0)
	if plan == nil {
		t.Fatalf("restart: no recovery plan from S=%v to P=%v: %v", S, P, recs)
	}
	if _, open := find(recs, i, "open", "term", 1, "snapshot_position", S, "replayed_bytes", P-S); open == nil || num(t, open, "replayed_entries") < 1 {
		t.Fatalf("restart: no open record with the replay: %v", recs)
	}
}

// TestEngineStatsLiveOnly: EngineStats counts the commands of this run,
// not those the restart replays from the log.
func TestEngineStatsLiveOnly(t *testing.T) {
	opts := baseOptions(vfs.Default, t.TempDir())
	ts := startServer(t, opts)
	a := dialRaw(t, ts.srv.Addr().String())
	a.connect(1)
	a.answer(a.cmd(limitCmd(9, 1, 1, 10, 1))) // unknown instrument
	a.answer(a.cmd(defineCmd(1)))
	a.seq--
	a.answer(a.cmd(defineCmd(1))) // the same seq again: Duplicate
	st, err := ts.srv.EngineStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rejected) != 1 || st.Rejected[engine.RejUnknownInstrument] != 1 || st.Duplicates != 1 || st.Undecodable != 0 {
		t.Fatalf("first run: %+v", st)
	}
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	ts2 := startServer(t, opts)
	if n, err := ts2.srv.NodeStats(context.Background()); err != nil || n.Replayed < 3 {
		t.Fatalf("restart replayed %d entries (%v)", n.Replayed, err)
	}
	st, err = ts2.srv.EngineStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rejected) != 0 || st.Duplicates != 0 {
		t.Fatalf("after the restart's replay: %+v, want nothing counted", st)
	}
}
