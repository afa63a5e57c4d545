package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clusterFixture is real Aeron's single-node-1 node directory; tests use a
// copy, never the original.
const clusterFixture = "../../../shared/fixtures/aeron/single-node-1"

// copyClusterFixture copies the fixture's cluster/ and archive/ into a temp
// directory, writable, and returns it.
func copyClusterFixture(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(clusterFixture); err != nil {
		t.Skipf("fixture not available: %v", err)
	}
	dst := t.TempDir()
	for _, sub := range []string{"cluster", "archive"} {
		names, err := os.ReadDir(filepath.Join(clusterFixture, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(clusterFixture, sub, n.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, sub, n.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dst
}

// The fixture README's ClusterTool outputs (the recovery plan is wrapped
// over two lines there; ClusterTool prints one).
const (
	readmeRecordingLog = "[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744][SNAPSHOT rec2 svc-1 logPos 115744]\n"
	readmePlan         = "lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=231264,\n" +
		"committedLogPosition=115744, snapshots=[rec2 svc-1 @115744, rec1 svc0 @115744],\n" +
		"log=(recordingId 0, startPosition 115744, stopPosition 231264, initialTermId 0, termBufferLength 65536, mtuLength 1408)"
)

func TestClusterRecordingLog(t *testing.T) {
	d := copyClusterFixture(t)
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
	for _, k := range []string{"recordingId", "leadershipTermId", "termBaseLogPosition", "logPosition", "timestamp", "serviceId", "type", "valid"} {
		if _, ok := doc.Entries[0][k]; !ok {
			t.Errorf("entry has no %q: %v", k, doc.Entries[0])
		}
	}
	e := doc.Entries[2]
	if e["type"] != "SNAPSHOT" || e["recordingId"] != 2.0 || e["serviceId"] != -1.0 || e["logPosition"] != 115744.0 || e["valid"] != true {
		t.Errorf("third entry %v", e)
	}
	if doc.Entries[0]["type"] != "TERM" || doc.Entries[0]["logPosition"] != -1.0 {
		t.Errorf("first entry %v", doc.Entries[0])
	}
}

func TestClusterRecoveryPlan(t *testing.T) {
	d := copyClusterFixture(t)
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
	if p["complete"] != true || p["committedLogPosition"] != 115744.0 || p["replayFrom"] != 115744.0 || p["replayTo"] != 231264.0 {
		t.Errorf("json plan %v", p)
	}
	// Two services: the set is incomplete, the plan says which entry is in
	// service 1's place and the exit status is 1.
	code, out, errb = runCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "2")
	if code != 1 || !strings.Contains(errb, "service 1: entry #0 at offset 0") || !strings.Contains(errb, "invalidate-latest-snapshot") ||
		!strings.HasPrefix(out, "lastLeadershipTermId=0") {
		t.Errorf("2 services: exit %d, stderr %q, stdout %q", code, errb, out)
	}
}

// invalidate-latest-snapshot on a copy of the fixture: the only set goes, so
// the plan replays the whole log; a second run finds nothing (exit 1).
func TestClusterInvalidateLatestSnapshot(t *testing.T) {
	d := copyClusterFixture(t)
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

func TestClusterDescribe(t *testing.T) {
	d := copyClusterFixture(t)
	code, out, errb := runCLI(t, "cluster", "describe", "--dir", d)
	if code != 0 || errb != "" {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	for _, s := range []string{
		"3 entries, 192 bytes",
		"#0 @0 TERM valid recordingId=0 leadershipTermId=0 termBaseLogPosition=0 logPosition=-1",
		"recording 0: VALID startPosition=0 stopPosition=231264 initialTermId=0 termBufferLength=65536 segmentFileLength=131072 mtuLength=1408",
		"segments: 0-0.rec (131072 bytes), 0-131072.rec (131072 bytes)",
		"recording 1: VALID startPosition=0 stopPosition=352",
		"recording 2: VALID startPosition=0 stopPosition=480",
		"referenced by: SNAPSHOT term 0 service -1 logPosition 115744",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("describe lacks %q:\n%s", s, out)
		}
	}
	code, out, _ = runCLI(t, "cluster", "describe", "--dir", d, "--json")
	var doc struct {
		RecordingLog struct {
			Entries []map[string]any `json:"entries"`
		} `json:"recordingLog"`
		Recordings []map[string]any `json:"recordings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.RecordingLog.Entries) != 3 || len(doc.Recordings) != 3 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if r := doc.Recordings[0]; r["recordingId"] != 0.0 || r["stopPosition"] != 231264.0 || r["inCatalog"] != true {
		t.Errorf("recording 0: %v", r)
	}
}

func TestClusterErrors(t *testing.T) {
	d := copyClusterFixture(t)
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
		!strings.Contains(errb, "recordinglog: open") {
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
