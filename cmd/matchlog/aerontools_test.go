package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/aerontest"
	"github.com/matchlog/matchlog/internal/fixtures"
)

// The tests below judge a purge of a real Aeron member directory by real
// Aeron: its ArchiveTool and ClusterTool (internal/aerontest; they skip where
// AERON_CLASSPATH is unset). The directory is member 0 of
// shared/fixtures/aeron/three-members; FACTS.md gives the safe cutoff
// keeping two snapshot generations, C = 786,432, which detaches exactly
// 0-655360.rec from the log recording (id 0, start 655,360, stop 1,258,560).
const (
	aeronPurgeCutoff   = 786432
	aeronLogStart      = 655360
	aeronLogStop       = 1258560
	aeronDetachedFile  = "0-655360.rec"
	aeronMember0Record = 7 // recordings 0..6 in member 0's catalog
)

// aeronPurgedRecordings: the oldest complete generation, which the plan
// deletes (FACTS.md).
var aeronPurgedRecordings = []int64{1, 2}

// purgedAeronMember0 copies three-members/member-0 into a temp directory,
// executes the retention plan on it with `matchlog retention purge --delay
// 0` (member 0 its own live source; two generations kept: the log detached
// to aeronPurgeCutoff, the oldest generation, recordings 1 and 2, purged)
// and returns the directory (holding cluster/ and archive/).
func purgedAeronMember0(t *testing.T) string {
	t.Helper()
	src := filepath.Join(fixtures.AeronThreeMembers(t), "member-0")
	d := t.TempDir()
	fixtures.CopyDirs(t, src, d, "cluster", "archive")
	var r purgeOneJSON
	out := mustCLI(t, "retention", "purge", "--json", "--delay", "0", "--member", "0="+d, "--live", archiveDir(d))
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("purge --json: %v\n%s", err, out)
	}
	p := r.Purge
	if !r.Approved || p.Status != "purged" || p.DetachedFrom != aeronLogStart || p.DetachedTo != aeronPurgeCutoff ||
		fmt.Sprint(sortedIDs(p.DeletedRecordings)) != fmt.Sprint(aeronPurgedRecordings) {
		t.Fatalf("purge: %+v; want start %d -> %d, recordings %v deleted", r, aeronLogStart, aeronPurgeCutoff, aeronPurgedRecordings)
	}
	if fileExists(archiveDir(d), aeronDetachedFile) || fileExists(archiveDir(d), aeronDetachedFile+".deleted") {
		t.Fatalf("purge left %s (or its .deleted) behind", aeronDetachedFile)
	}
	return d
}

func sortedIDs(ids []int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// descriptorRE finds a recording descriptor's id, start and stop in
// ArchiveTool describe's output.
var descriptorRE = regexp.MustCompile(`\|recordingId=(\d+)\|.*\|startPosition=(-?\d+)\|stopPosition=(-?\d+)\|`)

// TestAeronToolsAcceptPurge: after `matchlog retention purge` on a copy of
// real Aeron's member 0, real ArchiveTool sees the new start and `verify -a`
// still verifies every recording but the purged generation, which it skips
// as DELETED (on a further copy: verify may mark the catalog), and real ClusterTool's `recording-log` and
// `describe` accept the cluster directory; ClusterTool's recording log
// equals `matchlog cluster recording-log`'s on the same directory.
func TestAeronToolsAcceptPurge(t *testing.T) {
	j := aerontest.Require(t)
	d := purgedAeronMember0(t)

	// ArchiveTool, on a copy of the purged archive.
	v := t.TempDir()
	fixtures.CopyDirs(t, d, v, "archive")
	av := archiveDir(v)
	describe := func(when string) {
		t.Helper()
		desc := j.MustRun(t, nil, aerontest.ArchiveTool, av, "describe")
		seen := map[int64]bool{}
		for _, m := range descriptorRE.FindAllStringSubmatch(desc, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			seen[id] = true
			if id == 0 && (m[2] != strconv.Itoa(aeronPurgeCutoff) || m[3] != strconv.Itoa(aeronLogStop)) {
				t.Errorf("ArchiveTool describe %s: log recording start %s stop %s, want %d %d", when, m[2], m[3], aeronPurgeCutoff, aeronLogStop)
			}
			if id == 0 {
				t.Logf("ArchiveTool describe %s: %s", when, m[0])
			}
		}
		if len(seen) != aeronMember0Record-len(aeronPurgedRecordings) || seen[aeronPurgedRecordings[0]] || seen[aeronPurgedRecordings[1]] {
			t.Errorf("ArchiveTool describe %s lists recordings %v, want 0..%d but the purged %v:\n%s", when, seen, aeronMember0Record-1, aeronPurgedRecordings, desc)
		}
	}
	describe("after the purge")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, av, "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	var ok []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if strings.Contains(line, "recordingId=") {
			ok = append(ok, line)
		}
	}
	want := make([]string, aeronMember0Record)
	for i := range want {
		want[i] = fmt.Sprintf("(recordingId=%d) OK", i)
		if slices.Contains(aeronPurgedRecordings, int64(i)) {
			want[i] = fmt.Sprintf("(recordingId=%d) skipping: DELETED", i)
		}
	}
	if r.ExitCode != 0 || strings.Join(ok, "\n") != strings.Join(want, "\n") {
		t.Errorf("ArchiveTool verify -a: exit %d, recordings\n%s\nwant exit 0 and\n%s\nstderr: %s", r.ExitCode, strings.Join(ok, "\n"), strings.Join(want, "\n"), r.Stderr)
	}
	t.Logf("ArchiveTool verify -a on the purged copy:\n%s", strings.TrimSpace(r.Stdout))
	// verify rewrites a stop position it computes differently and still
	// prints OK: the catalog must be as the purge left it.
	describe("after verify -a")
	// ArchiveTool verify checks the segment files present, not that every
	// segment from the start to the stop is there; matchlog's verify does.
	mustCLI(t, "archive", "verify", "--all", "--dir", d)

	// ClusterTool, on the purged directory itself (both commands only read).
	cd := clusterDir(d)
	rl := j.MustRun(t, nil, aerontest.ClusterTool, cd, "recording-log")
	theirs, err := aerontest.ParseRecordingLog(rl)
	if err != nil {
		t.Fatal(err)
	}
	var ours entriesJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recording-log", "--dir", d, "--json")), &ours); err != nil {
		t.Fatal(err)
	}
	if len(theirs) != aeronMember0Record || len(ours.Entries) != len(theirs) {
		t.Fatalf("recording-log: ClusterTool %d entries, matchlog %d; want %d\n%s", len(theirs), len(ours.Entries), aeronMember0Record, rl)
	}
	for i, e := range ours.Entries {
		got := aerontest.Entry{RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition, Timestamp: e.Timestamp,
			ServiceID: e.ServiceID, Type: e.Type, Valid: e.Valid, EntryIndex: e.Index}
		if got != theirs[i] {
			t.Errorf("recording-log entry %d: matchlog %+v, ClusterTool %+v", i, got, theirs[i])
		}
	}
	t.Logf("ClusterTool recording-log on the purged directory:\n%s", strings.TrimSpace(rl))

	out := j.MustRun(t, nil, aerontest.ClusterTool, cd, "describe")
	for _, w := range []string{"componentType=CONSENSUS_MODULE", "|memberId=0|", "|clusterId=0|"} {
		if !strings.Contains(out, w) {
			t.Errorf("ClusterTool describe: no %q in\n%s", w, out)
		}
	}
}

// TestAeronRecoveryPlanAfterPurge: ClusterTool recovery-plan, asked of an
// ArchivingMediaDriver running on the purged copy's archive, prints the
// plan `matchlog cluster recovery-plan` computes for the same directory:
// the same log recording, start and stop positions, and snapshots.
func TestAeronRecoveryPlanAfterPurge(t *testing.T) {
	j := aerontest.Require(t)
	aeronPlanMatches(t, j, purgedAeronMember0(t))
}

// aeronPlanMatches checks that ClusterTool recovery-plan on the purged
// member directory d prints the plan matchlog computes for it.
func aeronPlanMatches(t *testing.T, j *aerontest.Java, d string) {
	t.Helper()
	var ours planJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "1", "--json")), &ours); err != nil {
		t.Fatal(err)
	}
	if !ours.Complete || ours.Log == nil {
		t.Fatalf("matchlog recovery-plan on the purged directory: complete %v, log %v; problems %+v", ours.Complete, ours.Log, ours.Problems)
	}
	if ours.Log.RecordingStartPosition != aeronPurgeCutoff {
		t.Errorf("matchlog recovery-plan: recording start %d, want %d after the purge", ours.Log.RecordingStartPosition, aeronPurgeCutoff)
	}

	a := j.StartArchivingMediaDriver(t, archiveDir(d), 30*time.Second)
	out := j.MustRun(t, a.ClientProps(), aerontest.ClusterTool, clusterDir(d), "recovery-plan", "1")
	if err := a.Stop(); err != nil {
		t.Error(err)
	}
	theirs, err := aerontest.ParseRecoveryPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ClusterTool recovery-plan 1 on the purged directory:\n%s", strings.TrimSpace(out))

	got := aerontest.RecoveryPlan{LastLeadershipTermID: ours.LastLeadershipTermID,
		LastTermBaseLogPosition: ours.LastTermBaseLogPosition, AppendedLogPosition: ours.AppendedLogPosition,
		CommittedLogPosition: ours.CommittedLogPosition}
	if got.LastLeadershipTermID != theirs.LastLeadershipTermID || got.LastTermBaseLogPosition != theirs.LastTermBaseLogPosition ||
		got.AppendedLogPosition != theirs.AppendedLogPosition || got.CommittedLogPosition != theirs.CommittedLogPosition {
		t.Errorf("recovery plan: matchlog %+v, ClusterTool %+v", got, theirs)
	}
	if len(ours.Snapshots) != len(theirs.Snapshots) || len(theirs.Snapshots) != 2 {
		t.Fatalf("recovery plan snapshots: matchlog %+v, ClusterTool %+v; want 2 each", ours.Snapshots, theirs.Snapshots)
	}
	for i, s := range ours.Snapshots {
		g := aerontest.Snapshot{RecordingID: s.RecordingID, LeadershipTermID: s.LeadershipTermID,
			TermBaseLogPosition: s.TermBaseLogPosition, LogPosition: s.LogPosition, Timestamp: s.Timestamp, ServiceID: s.ServiceID}
		if g != theirs.Snapshots[i] {
			t.Errorf("recovery plan snapshot %d: matchlog %+v, ClusterTool %+v", i, g, theirs.Snapshots[i])
		}
	}
	if theirs.Log == nil {
		t.Fatalf("ClusterTool recovery-plan: log=null\n%s", out)
	}
	l := ours.Log
	g := aerontest.Log{RecordingID: l.RecordingID, LeadershipTermID: l.LeadershipTermID, TermBaseLogPosition: l.TermBaseLogPosition,
		LogPosition: l.LogPosition, StartPosition: l.StartPosition, StopPosition: l.StopPosition, InitialTermID: l.InitialTermID,
		TermBufferLength: l.TermBufferLength, MTULength: l.MTULength, SessionID: l.SessionID}
	if g != *theirs.Log {
		t.Errorf("recovery plan log: matchlog %+v, ClusterTool %+v", g, *theirs.Log)
	}
}

// TestAeronToolsAcceptCompaction: after `matchlog archive compact` of the
// purged copy of real Aeron's member 0 (the purged generation's DELETED
// catalog entries and its recording.log entries dropped), real ArchiveTool
// describes the same recordings with the same positions and `verify -a`
// finds every one OK (on a further copy), real ClusterTool's
// `recording-log` equals matchlog's and `describe` accepts the directory,
// and ClusterTool recovery-plan still prints matchlog's plan.
func TestAeronToolsAcceptCompaction(t *testing.T) {
	j := aerontest.Require(t)
	d := purgedAeronMember0(t)
	before := j.MustRun(t, nil, aerontest.ArchiveTool, archiveDir(d), "describe")
	mustCLI(t, "archive", "compact", "--dir", d)
	after := j.MustRun(t, nil, aerontest.ArchiveTool, archiveDir(d), "describe")
	positions := func(desc string) []string {
		var out []string
		for _, m := range descriptorRE.FindAllStringSubmatch(desc, -1) {
			out = append(out, m[1]+":"+m[2]+"-"+m[3])
		}
		return out
	}
	if pb, pa := positions(before), positions(after); len(pa) != aeronMember0Record-len(aeronPurgedRecordings) || !slices.Equal(pa, pb) {
		t.Errorf("ArchiveTool describe: recordings before the compaction %v, after %v", pb, pa)
	}
	t.Logf("ArchiveTool describe after the compaction:\n%s", strings.TrimSpace(after))

	v := t.TempDir()
	fixtures.CopyDirs(t, d, v, "archive")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, archiveDir(v), "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if strings.Contains(line, "recordingId=") {
			lines = append(lines, line)
		}
	}
	var want []string
	for i := range aeronMember0Record {
		if !slices.Contains(aeronPurgedRecordings, int64(i)) {
			want = append(want, fmt.Sprintf("(recordingId=%d) OK", i))
		}
	}
	if r.ExitCode != 0 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("ArchiveTool verify -a on the compacted copy: exit %d\n%s\nwant\n%s\nstderr %s", r.ExitCode, strings.Join(lines, "\n"), strings.Join(want, "\n"), r.Stderr)
	}

	cd := clusterDir(d)
	rl := j.MustRun(t, nil, aerontest.ClusterTool, cd, "recording-log")
	theirs, err := aerontest.ParseRecordingLog(rl)
	if err != nil {
		t.Fatal(err)
	}
	var ours entriesJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recording-log", "--dir", d, "--json")), &ours); err != nil {
		t.Fatal(err)
	}
	if len(theirs) != aeronMember0Record-len(aeronPurgedRecordings) || len(ours.Entries) != len(theirs) {
		t.Fatalf("recording-log: ClusterTool %d entries, matchlog %d\n%s", len(theirs), len(ours.Entries), rl)
	}
	for i, e := range ours.Entries {
		got := aerontest.Entry{RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition, Timestamp: e.Timestamp,
			ServiceID: e.ServiceID, Type: e.Type, Valid: e.Valid, EntryIndex: e.Index}
		if got != theirs[i] {
			t.Errorf("recording-log entry %d: matchlog %+v, ClusterTool %+v", i, got, theirs[i])
		}
	}
	t.Logf("ClusterTool recording-log after the compaction:\n%s", strings.TrimSpace(rl))
	out := j.MustRun(t, nil, aerontest.ClusterTool, cd, "describe")
	if !strings.Contains(out, "componentType=CONSENSUS_MODULE") {
		t.Errorf("ClusterTool describe:\n%s", out)
	}
	aeronPlanMatches(t, j, d)
}

// TestAeronToolsAcceptSnapshotMTU: a node directory whose stop-the-world
// service snapshot was written at the default snapshot MTU with 1 MiB
// terms (65,504: 64 KiB frames) is accepted by real ArchiveTool: `verify
// -a` (on a copy) says OK for every recording, as `matchlog archive verify`
// does, and `describe` gives the snapshot recording's MTU as 65,504.
func TestAeronToolsAcceptSnapshotMTU(t *testing.T) {
	j := aerontest.Require(t)
	dir := filepath.Join(t.TempDir(), "node")
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{Dir: dir, Service: svc, TermLength: 1 << 20, SegmentLength: 4 << 20,
		FileSyncLevel: 1, SnapshotMode: cluster.StopTheWorld})
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{t: t, dir: dir, gen: enginetest.NewGen(7, enginetest.GenConfig{Deep: true}), svc: svc, node: n}
	if tn.sess, err = n.Connect("aeron:ipc", 102); err != nil {
		t.Fatal(err)
	}
	tn.submit(20000)
	n.RequestSnapshot()
	tn.drain()
	if err := n.AwaitSnapshot(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	orders := svc.Engine().Clone().Orders()
	tn.close()
	if orders < 3000 {
		t.Fatalf("%d resting orders: not several 64 KiB frames", orders)
	}

	var rep verifyReportJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "verify", "--all", "--dir", dir, "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	v := t.TempDir()
	fixtures.CopyDirs(t, dir, v, "archive")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, archiveDir(v), "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	lines := verifyLineRE.FindAllStringSubmatch(r.Stdout, -1)
	if r.ExitCode != 0 || len(lines) != len(rep.Recordings) || len(lines) < 3 {
		t.Fatalf("ArchiveTool verify -a: exit %d, %d recordings; matchlog verified %d\n%s%s", r.ExitCode, len(lines), len(rep.Recordings), r.Stdout, r.Stderr)
	}
	for i, m := range lines {
		if m[2] != "OK" || rep.Recordings[i].Status != "OK" {
			t.Errorf("recording %s: ArchiveTool %q, matchlog %q", m[1], m[2], rep.Recordings[i].Status)
		}
	}
	desc := j.MustRun(t, nil, aerontest.ArchiveTool, archiveDir(v), "describe")
	if !strings.Contains(desc, "mtuLength=65504") {
		t.Errorf("ArchiveTool describe shows no recording of MTU 65504:\n%s", desc)
	}
	t.Logf("%d resting orders; ArchiveTool verify -a:\n%s", orders, strings.TrimSpace(r.Stdout))
}
