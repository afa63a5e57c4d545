package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/wire"
)

// The fixture README's ClusterTool outputs (the recovery plan is wrapped
// over two lines there; ClusterTool prints one).
const (
	readmeRecordingLog = "[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744][SNAPSHOT rec2 svc-1 logPos 115744]\n"
	readmePlan         = "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264,\n" +
		"committedLogPosition=115744, snapshots=[rec2 svc-1 @115744, rec1 svc0 @115744],\n" +
		"log=(recordingId 0, startPosition 115744, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)"
)

func TestClusterRecordingLog(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	code, out, errb := runCLI(t, "cluster", "recording-log", "--dir", d)
	if code != 0 || errb != "" || out != readmeRecordingLog {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", code, errb, out)
	}
	code, out, errb = runCLI(t, "cluster", "recording-log", "--dir", d, "--json")
	if code != 0 || errb != "" {
		t.Fatalf("--json: exit %d, stderr %q", code, errb)
	}
	var doc struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Entries) != 3 {
		t.Fatalf("entries: %v", doc.Entries)
	}
	for _, k := range []string{"recording_id", "leadership_term_id", "term_base_log_position", "log_position", "timestamp", "service_id", "type", "valid"} {
		if _, ok := doc.Entries[0][k]; !ok {
			t.Errorf("entry has no %q: %v", k, doc.Entries[0])
		}
	}
	e := doc.Entries[2]
	if e["type"] != "SNAPSHOT" || e["recording_id"] != 2.0 || e["service_id"] != -1.0 || e["log_position"] != 115744.0 || e["valid"] != true {
		t.Errorf("third entry %v", e)
	}
	if doc.Entries[0]["type"] != "TERM" || doc.Entries[0]["log_position"] != -1.0 {
		t.Errorf("first entry %v", doc.Entries[0])
	}
}

func TestClusterRecoveryPlan(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	want := strings.ReplaceAll(readmePlan, ",\n", ", ") + "\n"
	code, out, errb := runCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "1")
	if code != 0 || errb != "" || out != want {
		t.Fatalf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errb, out, want)
	}
	// --services defaults to 1.
	if code, out2, _ := runCLI(t, "cluster", "recovery-plan", "--dir", d); code != 0 || out2 != out {
		t.Errorf("default services: exit %d\n%s", code, out2)
	}
	code, out, _ = runCLI(t, "cluster", "recovery-plan", "--dir", d, "--json")
	var p map[string]any
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if p["complete"] != true || p["committed_log_position"] != 115744.0 || p["replay_from"] != 115744.0 || p["replay_to"] != 231264.0 {
		t.Errorf("json plan %v", p)
	}
	// Two services: the set is incomplete, the plan says which entry is in
	// service 1's place and the exit status is 1.
	code, out, errb = runCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "2")
	if code != 1 || !strings.Contains(errb, "service 1: entry #0 at offset 0") || strings.Contains(errb, "invalidate-latest-snapshot") ||
		!strings.Contains(errb, "holds the snapshots of 1 service(s), the plan was made for 2") || !strings.Contains(errb, "(--services 1)") ||
		!strings.HasPrefix(out, "lastLeadershipTermId=0") {
		t.Errorf("2 services: exit %d, stderr %q, stdout %q", code, errb, out)
	}
}

// invalidate-latest-snapshot on a copy of the fixture: the only set goes, so
// the plan replays the whole log; a second run finds nothing (exit 1).
func TestClusterInvalidateLatestSnapshot(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	code, out, errb := runCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", d)
	want := "invalidate latest snapshot: true\n" +
		"[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744 INVALID][SNAPSHOT rec2 svc-1 logPos 115744 INVALID]\n"
	if code != 0 || errb != "" || out != want {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", code, errb, out)
	}
	code, out, errb = runCLI(t, "cluster", "recovery-plan", "--dir", d)
	wantPlan := "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264, committedLogPosition=0, snapshots=[], " +
		"log=(recordingId 0, startPosition 0, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)\n"
	if code != 0 || errb != "" || out != wantPlan {
		t.Errorf("plan after invalidation: exit %d, stderr %q\n%s", code, errb, out)
	}
	code, out, errb = runCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", d)
	if code != 1 || !strings.HasPrefix(out, "invalidate latest snapshot: false\n") || !strings.Contains(errb, "no valid snapshot") {
		t.Errorf("second run: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

func TestClusterErrors(t *testing.T) {
	d := fixtures.CopyAeronSingleNode(t)
	for _, args := range [][]string{
		{"cluster"}, {"cluster", "frobnicate"}, {"cluster", "recording-log"}, {"cluster", "recording-log", "--dir"},
		{"cluster", "recording-log", "--dir", d, "extra"}, {"cluster", "recording-log", "--dir", d, "--services", "2"},
		{"cluster", "recovery-plan", "--dir", d, "--services", "x"}, {"cluster", "recovery-plan", "--dir", d, "--services", "-1"},
	} {
		if code, _, errb := runCLI(t, args...); code != 2 || errb == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errb)
		}
	}
	for _, args := range [][]string{{"cluster", "-h"}, {"cluster", "describe", "-h"}} {
		if code, _, _ := runCLI(t, args...); code != 0 {
			t.Errorf("%q: exit %d, want 0", args, code)
		}
	}
	// A missing directory, a torn recording.log, a log recording missing
	// from the catalog: exit 1 with the reason.
	if code, _, errb := runCLI(t, "cluster", "recording-log", "--dir", filepath.Join(d, "nope")); code != 1 ||
		!strings.Contains(errb, "no recording.log in "+filepath.Join(d, "nope", "cluster")+" or in "+filepath.Join(d, "nope")+": --dir names a node directory") {
		t.Errorf("missing dir: exit %d, %q", code, errb)
	}
	rl := filepath.Join(d, "cluster", "recording.log")
	b, err := os.ReadFile(rl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rl, b[:150], 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := runCLI(t, "cluster", "recording-log", "--dir", d); code != 1 ||
		!strings.Contains(errb, "recordinglog: torn tail at offset 128") {
		t.Errorf("torn: exit %d, %q", code, errb)
	}
	b[0] = 7 // the TERM now names recording 7, which the catalog lacks
	if err := os.WriteFile(rl, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := runCLI(t, "cluster", "recovery-plan", "--dir", d); code != 1 || !strings.Contains(errb, "unknown recording id: 7") {
		t.Errorf("unknown recording: exit %d, %q", code, errb)
	}
	if code, out, errb := runCLI(t, "cluster", "describe", "--dir", d); code != 1 || !strings.Contains(out, "recording 7: NOT IN CATALOG") ||
		!strings.Contains(errb, "recording(s) 7 referenced") {
		t.Errorf("describe unknown recording: exit %d, %q, %q", code, out, errb)
	}
}

// ---- matchlog node directories ----

// testNode drives a matchlog node (enginesvc) in a directory, for the
// tools to read. The clock is the wall clock, so the mark files look as a
// real node's do.
type testNode struct {
	t    *testing.T
	dir  string
	node *cluster.Node
	svc  *enginesvc.Service
	sess int64
	gen  *enginetest.Gen
}

func openTestNode(t *testing.T, dir string, gen *enginetest.Gen) *testNode {
	t.Helper()
	tn := &testNode{t: t, dir: dir, gen: gen, svc: enginesvc.New(enginesvc.Options{})}
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: tn.svc, TermLength: 64 * 1024, SegmentLength: 128 * 1024,
		FileSyncLevel: 1, FileIoMaxLength: 1 << 20, MaxBatch: 64})
	if err != nil {
		t.Fatalf("open node: %v", err)
	}
	tn.node = n
	if tn.sess, err = n.Connect("aeron:ipc", 102); err != nil {
		t.Fatal(err)
	}
	return tn
}

// submit offers k generated engine commands and runs the duty cycle until
// every one is sequenced and its events released.
func (tn *testNode) submit(k int) {
	tn.t.Helper()
	var c engine.Command
	var buf []byte
	for i := 0; i < k; i++ {
		tn.gen.Next(&c)
		for c.Kind < engine.CmdDefineInstrument || c.Kind > engine.CmdMarkPrice {
			tn.gen.Next(&c) // kinds without a message in the schema
		}
		var err error
		if buf, err = wire.AppendCommand(buf[:0], &c); err != nil {
			tn.t.Fatal(err)
		}
		if err := tn.node.Offer(tn.sess, buf); err != nil {
			tn.t.Fatal(err)
		}
	}
	tn.drain()
}

func (tn *testNode) drain() {
	tn.t.Helper()
	for i := 0; ; i++ {
		w, err := tn.node.DoWork()
		if err != nil {
			tn.t.Fatal(err)
		}
		if w == 0 {
			if tn.node.Pending() == 0 && !tn.node.SnapshotInProgress() {
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
		if i > 1_000_000 {
			tn.t.Fatal("the duty cycle does not settle")
		}
	}
}

// close stops the node cleanly and returns the engine's state hash.
func (tn *testNode) close() string {
	tn.t.Helper()
	h := fmt.Sprintf("%016x", tn.svc.Engine().StateHash())
	if err := tn.node.Close(); err != nil {
		tn.t.Fatal(err)
	}
	return h
}

// reopenHash starts the node in dir from its recovery plan, checks it
// started from the snapshot at wantSnap, and returns its state hash.
func reopenHash(t *testing.T, dir string, wantSnap int64) string {
	t.Helper()
	tn := openTestNode(t, dir, nil)
	p := tn.node.Recovery().Plan
	if len(p.Snapshots) == 0 || p.Snapshots[0].LogPosition != wantSnap {
		t.Errorf("restart plan %s, want the snapshot at %d", p, wantSnap)
	}
	return tn.close()
}

// buildNodeDir makes a node directory: 300 commands, a snapshot, 200 more,
// a clean stop. It returns the directory and the final state hash.
func buildNodeDir(t *testing.T) (string, *enginetest.Gen, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "node")
	gen := enginetest.NewGen(7, enginetest.GenConfig{})
	tn := openTestNode(t, dir, gen)
	tn.submit(300)
	tn.node.RequestSnapshot()
	tn.drain()
	if err := tn.node.AwaitSnapshot(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	tn.submit(200)
	return dir, gen, tn.close()
}

type snapshotJSON struct {
	Mode             string  `json:"snapshot_mode"`
	LogPosition      int64   `json:"log_position"`
	LeadershipTermID int64   `json:"leadership_term_id"`
	RecordingIDs     []int64 `json:"recording_ids"`
	StateHash        string  `json:"state_hash"`
	Engine           struct {
		StateHash string `json:"state_hash"`
		Orders    uint64 `json:"orders"`
		Verified  bool   `json:"verified"`
	} `json:"engine"`
	Entries []map[string]any `json:"entries"`
}

func runSnapshotJSON(t *testing.T, args ...string) snapshotJSON {
	t.Helper()
	code, out, errb := runCLI(t, append([]string{"cluster", "snapshot", "--json"}, args...)...)
	var s snapshotJSON
	if err := json.Unmarshal([]byte(out), &s); code != 0 || errb != "" || err != nil {
		t.Fatalf("snapshot %q: exit %d, stderr %q, %v\n%s", args, code, errb, err, out)
	}
	return s
}

type planDoc struct {
	Complete  bool `json:"complete"`
	Snapshots []struct {
		RecordingID int64 `json:"recording_id"`
		LogPosition int64 `json:"log_position"`
		ServiceID   int32 `json:"service_id"`
	} `json:"snapshots"`
	ReplayFrom int64 `json:"replay_from"`
	ReplayTo   int64 `json:"replay_to"`
}

func runPlanJSON(t *testing.T, dir string) planDoc {
	t.Helper()
	code, out, errb := runCLI(t, "cluster", "recovery-plan", "--dir", dir, "--json")
	var p planDoc
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("recovery-plan: exit %d, stderr %q, %v\n%s", code, errb, err, out)
	}
	return p
}

// The tools on a node directory the cluster package wrote: recording-log,
// recovery-plan, describe, snapshot (pauseless, then stop the world after
// more commands), restarts from the new snapshots, and
// invalidate-latest-snapshot falling back to the previous set.
func TestClusterNodeSnapshot(t *testing.T) {
	dir, gen, hash1 := buildNodeDir(t)

	code, out, errb := runCLI(t, "cluster", "recording-log", "--dir", dir)
	if code != 0 || errb != "" || strings.Count(out, "[SNAPSHOT") != 2 || !strings.HasPrefix(out, "[TERM rec0 term0") {
		t.Fatalf("recording-log: exit %d, stderr %q\n%s", code, errb, out)
	}
	plan0 := runPlanJSON(t, dir)
	if !plan0.Complete || len(plan0.Snapshots) != 2 {
		t.Fatalf("plan %+v", plan0)
	}
	snap0 := plan0.Snapshots[0].LogPosition

	// describe: the node section, text and JSON.
	code, out, errb = runCLI(t, "cluster", "describe", "--dir", dir)
	if code != 0 || errb != "" {
		t.Fatalf("describe: exit %d, stderr %q\n%s", code, errb, out)
	}
	for _, s := range []string{
		"matchlog node:\n", ": stopped\n", "  log: recording 0 startPosition=0 stopPosition=",
		fmt.Sprintf("  latest snapshot set: logPosition=%d leadershipTermId=0", snap0),
		"    engine: stateHash=", "    consensus module: sessions=1 timers=0",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("describe lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "problem:") {
		t.Errorf("describe reports a problem:\n%s", out)
	}
	var doc struct {
		Node struct {
			Live bool `json:"live"`
			Log  struct {
				RecordingID  int64 `json:"recording_id"`
				StopPosition int64 `json:"stop_position"`
				Segments     []struct {
					Name string `json:"name"`
				} `json:"segments"`
			} `json:"log"`
			Snapshot struct {
				LogPosition  int64   `json:"log_position"`
				RecordingIDs []int64 `json:"recording_ids"`
				Engine       struct {
					StateHash string `json:"state_hash"`
					Orders    uint64 `json:"orders"`
				} `json:"engine"`
				ConsensusModule struct {
					Sessions int `json:"sessions"`
				} `json:"consensus_module"`
			} `json:"latest_snapshot"`
		} `json:"node"`
	}
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", dir, "--json")
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("describe --json: exit %d, %v\n%s", code, err, out)
	}
	ns := doc.Node.Snapshot
	if doc.Node.Live || doc.Node.Log.StopPosition <= snap0 || len(doc.Node.Log.Segments) == 0 || ns.LogPosition != snap0 ||
		len(ns.RecordingIDs) != 2 || len(ns.Engine.StateHash) != 16 || ns.ConsensusModule.Sessions != 1 {
		t.Errorf("describe --json node: %+v", doc.Node)
	}

	// snapshot (pauseless): at the end of the log, where the state is the
	// one the node stopped with.
	s1 := runSnapshotJSON(t, "--dir", dir)
	if s1.Mode != "pauseless" || s1.LogPosition <= doc.Node.Log.StopPosition || len(s1.RecordingIDs) != 2 || s1.StateHash != hash1 ||
		s1.Engine.StateHash != hash1 || !s1.Engine.Verified || len(s1.Entries) != 2 || s1.LeadershipTermID != 1 {
		t.Fatalf("snapshot: %+v, want state hash %s", s1, hash1)
	}
	code, out, _ = runCLI(t, "cluster", "recording-log", "--dir", dir)
	if code != 0 || strings.Count(out, "[SNAPSHOT") != 4 ||
		!strings.Contains(out, fmt.Sprintf("[SNAPSHOT rec%d svc-1 logPos %d]", s1.RecordingIDs[0], s1.LogPosition)) ||
		!strings.Contains(out, fmt.Sprintf("[SNAPSHOT rec%d svc0 logPos %d]", s1.RecordingIDs[1], s1.LogPosition)) {
		t.Fatalf("recording-log after snapshot %v:\n%s", s1.RecordingIDs, out)
	}
	plan1 := runPlanJSON(t, dir)
	if !plan1.Complete || len(plan1.Snapshots) != 2 || plan1.Snapshots[0].RecordingID != s1.RecordingIDs[0] ||
		plan1.Snapshots[1].RecordingID != s1.RecordingIDs[1] || plan1.ReplayFrom != s1.LogPosition {
		t.Fatalf("plan after snapshot: %+v", plan1)
	}
	if h := reopenHash(t, dir, s1.LogPosition); h != hash1 {
		t.Fatalf("restart from the new snapshot: hash %s, want %s", h, hash1)
	}

	// More commands, then a stop-the-world snapshot with parallel encoders.
	tn := openTestNode(t, dir, gen)
	tn.submit(200)
	hash2 := tn.close()
	code, out, errb = runCLI(t, "cluster", "snapshot", "--dir", dir, "--snapshot-mode", "stw", "--workers", "2")
	if code != 0 || errb != "" || !strings.HasPrefix(out, "snapshot (stw) at logPosition=") ||
		!strings.Contains(out, "engine: stateHash="+hash2+" ") || strings.Count(out, "[SNAPSHOT") != 2 {
		t.Fatalf("snapshot --snapshot-mode stw: exit %d, stderr %q\n%s", code, errb, out)
	}
	plan2 := runPlanJSON(t, dir)
	if plan2.Snapshots[0].LogPosition <= s1.LogPosition {
		t.Fatalf("plan after the second snapshot: %+v", plan2)
	}
	if h := reopenHash(t, dir, plan2.Snapshots[0].LogPosition); h != hash2 {
		t.Fatalf("restart from the stw snapshot: hash %s, want %s", h, hash2)
	}
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", dir)
	if code != 0 || !strings.Contains(out, "engine: stateHash="+hash2+" ") {
		t.Errorf("describe after the second snapshot:\n%s", out)
	}

	// invalidate-latest-snapshot: the plan falls back to the pauseless
	// snapshot and a restart replays from it to the same state.
	if code, out, errb = runCLI(t, "cluster", "invalidate-latest-snapshot", "--dir", dir); code != 0 || strings.Count(out, "INVALID") != 2 {
		t.Fatalf("invalidate: exit %d, stderr %q\n%s", code, errb, out)
	}
	plan3 := runPlanJSON(t, dir)
	if !plan3.Complete || plan3.Snapshots[0].RecordingID != s1.RecordingIDs[0] || plan3.ReplayFrom != s1.LogPosition {
		t.Fatalf("plan after invalidation: %+v, want the snapshot at %d", plan3, s1.LogPosition)
	}
	if h := reopenHash(t, dir, s1.LogPosition); h != hash2 {
		t.Fatalf("restart after invalidation: hash %s, want %s", h, hash2)
	}
}

// snapshot refuses a live node, a directory that is no node's and an Aeron
// node directory, and writes nothing to them.
func TestClusterSnapshotRefusals(t *testing.T) {
	dir, _, _ := buildNodeDir(t)

	// A node held open in this process: its mark files are fresh.
	tn := openTestNode(t, dir, nil)
	code, out, errb := runCLI(t, "cluster", "snapshot", "--dir", dir)
	if code != 1 || out != "" || !strings.Contains(errb, "looks live: cluster-mark.dat activity timestamp") ||
		!strings.Contains(errb, "stop it first") {
		t.Errorf("live node: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", dir)
	if code != 0 || !strings.Contains(out, ": LIVE (cluster-mark.dat activity timestamp") {
		t.Errorf("describe of a live node: exit %d\n%s", code, out)
	}
	tn.close()

	// A fresh mark file whose pid is another running process (pid 1
	// always is): live, unless --force.
	mark := filepath.Join(dir, "cluster", cluster.MarkFileName)
	setMark := func(activity int64, pid int) {
		t.Helper()
		b, err := os.ReadFile(mark)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(b[16:], uint64(activity))
		binary.LittleEndian.PutUint64(b[32:], uint64(pid))
		if err := os.WriteFile(mark, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setMark(time.Now().UnixMilli(), 1)
	code, _, errb = runCLI(t, "cluster", "snapshot", "--dir", dir)
	if code != 1 || !strings.Contains(errb, "its process 1 is running") {
		t.Errorf("running pid: exit %d, stderr %q", code, errb)
	}
	if s := runSnapshotJSON(t, "--dir", dir, "--force"); len(s.RecordingIDs) != 2 {
		t.Errorf("--force: %+v", s)
	}
	// An old activity timestamp of a running pid is no live node (Aeron's
	// timeout), and neither is a fresh one of a process that is gone.
	setMark(1000, 1)
	if s := runSnapshotJSON(t, "--dir", dir); len(s.RecordingIDs) != 2 {
		t.Errorf("old timestamp: %+v", s)
	}
	setMark(time.Now().UnixMilli(), deadPID(t))
	if s := runSnapshotJSON(t, "--dir", dir); len(s.RecordingIDs) != 2 {
		t.Errorf("fresh timestamp of a dead pid: %+v", s)
	}

	// Not a node directory: nothing is created.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := runCLI(t, "cluster", "snapshot", "--dir", empty); code != 1 || !strings.Contains(errb, "no recording.log in") {
		t.Errorf("empty dir: exit %d, stderr %q", code, errb)
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("snapshot created %v in an empty directory", names)
	}

	// A copy of Aeron's node directory: refused, unchanged.
	aeron := fixtures.CopyAeronSingleNode(t)
	code, out, errb = runCLI(t, "cluster", "snapshot", "--dir", aeron)
	if code != 1 || out != "" || !strings.Contains(errb, "only works on matchlog node directories") ||
		!strings.Contains(errb, "ClusterTool snapshot") {
		t.Errorf("Aeron dir: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	for _, sub := range []string{"cluster", "archive"} {
		names, err := os.ReadDir(filepath.Join(fixtures.AeronSingleNode(t), sub))
		if err != nil {
			t.Fatal(err)
		}
		copied, _ := os.ReadDir(filepath.Join(aeron, sub))
		if len(copied) != len(names) {
			t.Errorf("%s: %d files, the fixture has %d", sub, len(copied), len(names))
		}
		for _, n := range names {
			want, _ := os.ReadFile(filepath.Join(fixtures.AeronSingleNode(t), sub, n.Name()))
			got, _ := os.ReadFile(filepath.Join(aeron, sub, n.Name()))
			if !bytes.Equal(got, want) {
				t.Errorf("snapshot changed %s/%s", sub, n.Name())
			}
		}
	}
	// Aeron's directory with a matchlog node's cluster-mark.dat: its
	// service snapshot is not an engine snapshot, so it is refused still,
	// before anything is written.
	ours, err := os.ReadFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(ours[16:], ^uint64(0)) // stopped
	aeronMark := filepath.Join(aeron, "cluster", cluster.MarkFileName)
	if err := os.WriteFile(aeronMark, ours, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errb = runCLI(t, "cluster", "snapshot", "--dir", aeron)
	if code != 1 || !strings.Contains(errb, "holds no matchlog engine snapshot") || !strings.Contains(errb, "only works on matchlog node directories") {
		t.Errorf("Aeron dir with our mark file: exit %d, stderr %q", code, errb)
	}
	for _, f := range []string{"cluster/recording.log", "archive/archive.catalog", "archive/archive-mark.dat"} {
		want, _ := os.ReadFile(filepath.Join(fixtures.AeronSingleNode(t), f))
		if got, _ := os.ReadFile(filepath.Join(aeron, f)); !bytes.Equal(got, want) {
			t.Errorf("snapshot changed %s", f)
		}
	}
	// describe reports the service snapshot as a problem, exit 0.
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", aeron)
	if code != 0 || !strings.Contains(out, "problem: engine snapshot at log position 115744: the service snapshot holds no matchlog engine snapshot") ||
		!strings.Contains(out, "consensus module: sessions=1 timers=0 nextSessionId=2") {
		t.Errorf("describe of Aeron's dir with our mark file: exit %d\n%s", code, out)
	}
	if err := os.WriteFile(aeronMark, mustRead(t, filepath.Join(fixtures.AeronSingleNode(t), "cluster", cluster.MarkFileName)), 0o644); err != nil {
		t.Fatal(err)
	}

	// describe of Aeron's directory has no node section.
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", aeron)
	if code != 0 || strings.Contains(out, "matchlog node") {
		t.Errorf("describe of Aeron's dir: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", aeron, "--json")
	if code != 0 || strings.Contains(out, `"node"`) {
		t.Errorf("describe --json of Aeron's dir: exit %d\n%s", code, out)
	}

	// Bad flags.
	for _, args := range [][]string{
		{"cluster", "snapshot", "--dir", dir, "--snapshot-mode", "fast"}, {"cluster", "snapshot", "--dir", dir, "--snapshot-mode", "stw,pauseless"}, {"cluster", "snapshot", "--dir", dir, "--workers", "-1"},
		{"cluster", "describe", "--dir", dir, "--snapshot-mode", "stw"},
	} {
		if code, _, errb := runCLI(t, args...); code != 2 || errb == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2", args, code, errb)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
