package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/aerontest"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// A crashed, never-restarted member, as Aeron's tools see it. A member
// killed while it records its log leaves the log recording active in the
// catalog (stop position and stop timestamp -1) and its term open in
// recording.log (TERM logPosition -1); its segment files end in the last
// frame written. crashedAeronMember0 makes one from a copy of real Aeron's
// three-members/member-0 (clean stop at 1,258,560, FACTS.md) by writing
// exactly those three values through the archive's and the recording log's
// APIs. Aeron's archive settles such a recording to the end of its last
// whole frame when it opens the catalog: 1,258,560 here.
const (
	aeronCrashedStop      = aeronLogStop // the last whole frame of 0-1179648.rec
	aeronCrashedSnapshot  = 1101600      // snapshot set 3: committedLogPosition falls back to it
	aeronCrashedSnapshots = 2
)

func crashedAeronMember0(t *testing.T) string {
	t.Helper()
	src := filepath.Join(fixtures.AeronThreeMembers(t), "member-0")
	d := t.TempDir()
	fixtures.CopyDirs(t, src, d, "cluster", "archive")
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.UpdateStopPosition(0, archive.NullPosition); err != nil {
		t.Fatal(err)
	}
	if err := cat.UpdateStopTimestamp(0, archive.NullTimestamp); err != nil {
		t.Fatal(err)
	}
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	rl, err := recordinglog.Open(vfs.Default, clusterDir(d), recordinglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rl.CommitLogPosition(0, recordinglog.NullValue); err != nil {
		t.Fatal(err)
	}
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// crashedPlan is `matchlog cluster recovery-plan --json` on d, checked to
// leave d's files as they were.
func crashedPlan(t *testing.T, d string) planJSON {
	t.Helper()
	before := treeHashes(t, d)
	var p planJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "1", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "recovery-plan", before, treeHashes(t, d))
	return p
}

// TestCrashedMemberRecoveryPlan: on the crashed member, `matchlog cluster
// recovery-plan` settles the active log recording to its last whole frame,
// as Aeron's archive does on opening, instead of printing
// appendedLogPosition=-1, and writes nothing (the catalog keeps -1).
func TestCrashedMemberRecoveryPlan(t *testing.T) {
	d := crashedAeronMember0(t)
	p := crashedPlan(t, d)
	if !p.Complete || p.Log == nil {
		t.Fatalf("recovery plan of the crashed member: complete %v, log %v, problems %+v", p.Complete, p.Log, p.Problems)
	}
	if p.AppendedLogPosition != aeronCrashedStop || p.Log.StopPosition != aeronCrashedStop || p.ReplayTo != aeronCrashedStop {
		t.Errorf("appended %d, log stop %d, replay to %d; want %d (the active recording settled to its last whole frame)",
			p.AppendedLogPosition, p.Log.StopPosition, p.ReplayTo, aeronCrashedStop)
	}
	if p.CommittedLogPosition != aeronCrashedSnapshot || p.Log.LogPosition != -1 || p.ReplayFrom != aeronCrashedSnapshot ||
		p.Log.StartPosition != aeronCrashedSnapshot || len(p.Snapshots) != aeronCrashedSnapshots {
		t.Errorf("committed %d, TERM logPosition %d, replay from %d, log start %d, %d snapshots; want %d, -1, %d, %d, %d",
			p.CommittedLogPosition, p.Log.LogPosition, p.ReplayFrom, p.Log.StartPosition, len(p.Snapshots),
			aeronCrashedSnapshot, aeronCrashedSnapshot, aeronCrashedSnapshot, aeronCrashedSnapshots)
	}
	text := mustCLI(t, "cluster", "recovery-plan", "--dir", d)
	if !strings.Contains(text, "appendedLogPosition="+strconv.Itoa(aeronCrashedStop)) {
		t.Errorf("text plan does not settle the log:\n%s", text)
	}
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if got, _ := cat.Descriptor(0); got.StopPosition != archive.NullPosition {
		t.Errorf("catalog stop %d after recovery-plan; want -1 still", got.StopPosition)
	}
}

// TestCrashedMemberArchiveVerify: `matchlog archive verify` says OK for the
// crashed member's active log recording, as ArchiveTool does, reports the
// stop it settles to, and writes nothing.
func TestCrashedMemberArchiveVerify(t *testing.T) {
	d := crashedAeronMember0(t)
	before := treeHashes(t, d)
	code, out, errOut := runCLI(t, "archive", "verify", "--all", "--dir", d, "--json")
	if code != 0 {
		t.Fatalf("archive verify --all on the crashed member: exit %d\n%s%s", code, out, errOut)
	}
	var rep verifyReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Recordings) != aeronMember0Record {
		t.Fatalf("verify: ok %v, %d recordings; want ok, %d", rep.OK, len(rep.Recordings), aeronMember0Record)
	}
	for _, r := range rep.Recordings {
		settled := r.RecordingID == 0
		if r.Status != "OK" || r.Settled != settled || len(r.Problems) != 0 || r.StopUpdated {
			t.Errorf("recording %d: %+v; want OK, settled %v, nothing written", r.RecordingID, r, settled)
		}
		if settled && (r.StoredStop != -1 || r.ComputedStop != aeronCrashedStop) {
			t.Errorf("recording 0: stored %d, computed %d; want -1, %d", r.StoredStop, r.ComputedStop, aeronCrashedStop)
		}
	}
	text := mustCLI(t, "archive", "verify", "--dir", d)
	if !strings.Contains(text, fmt.Sprintf("recording 0 (VALID): OK, active: stop -1 settles to %d", aeronCrashedStop)) {
		t.Errorf("text verify:\n%s", text)
	}
	sameTree(t, "archive verify", before, treeHashes(t, d))
}

// verifyLineRE is one recording's verdict in ArchiveTool verify's output.
var verifyLineRE = regexp.MustCompile(`(?m)^\(recordingId=(\d+)\) (.*)$`)

// TestAeronCrashedMember: real Aeron on the crashed member. ArchiveTool
// `verify -a` (on a copy: it writes the settled stop into the catalog)
// says OK for every recording, as `matchlog archive verify` does, and the
// stop it writes is the one matchlog computed; ClusterTool recovery-plan,
// asked of an ArchivingMediaDriver started on another copy (which settles
// the catalog on opening), prints the plan `matchlog cluster recovery-plan`
// computed on the crashed directory itself, read-only.
func TestAeronCrashedMember(t *testing.T) {
	j := aerontest.Require(t)
	d := crashedAeronMember0(t)
	ours := crashedPlan(t, d)
	var rep verifyReportJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "verify", "--all", "--dir", d, "--json")), &rep); err != nil {
		t.Fatal(err)
	}

	// ArchiveTool verify -a, on a copy.
	v := t.TempDir()
	fixtures.CopyDirs(t, d, v, "archive")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, archiveDir(v), "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ArchiveTool verify -a on the crashed member:\n%s", strings.TrimSpace(r.Stdout))
	lines := verifyLineRE.FindAllStringSubmatch(r.Stdout, -1)
	if r.ExitCode != 0 || len(lines) != len(rep.Recordings) {
		t.Fatalf("ArchiveTool verify -a: exit %d, %d recordings; matchlog verified %d\n%s%s", r.ExitCode, len(lines), len(rep.Recordings), r.Stdout, r.Stderr)
	}
	for i, m := range lines {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		if id != rep.Recordings[i].RecordingID || m[2] != "OK" || rep.Recordings[i].Status != "OK" {
			t.Errorf("recording %d: ArchiveTool %q, matchlog recording %d %q", id, m[2], rep.Recordings[i].RecordingID, rep.Recordings[i].Status)
		}
	}
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(v), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	written, err := cat.Descriptor(0)
	cat.Close()
	if err != nil {
		t.Fatal(err)
	}
	if written.StopPosition != rep.Recordings[0].ComputedStop || written.StopPosition != aeronCrashedStop {
		t.Errorf("ArchiveTool verify wrote stop %d; matchlog computed %d (want %d)", written.StopPosition, rep.Recordings[0].ComputedStop, aeronCrashedStop)
	}

	// ClusterTool recovery-plan against an archive started on another copy.
	a := t.TempDir()
	fixtures.CopyDirs(t, d, a, "cluster", "archive")
	arc := j.StartArchivingMediaDriver(t, archiveDir(a), 30*time.Second)
	out := j.MustRun(t, arc.ClientProps(), aerontest.ClusterTool, clusterDir(a), "recovery-plan", "1")
	if err := arc.Stop(); err != nil {
		t.Error(err)
	}
	t.Logf("ClusterTool recovery-plan 1 on the crashed member:\n%s", strings.TrimSpace(out))
	theirs, err := aerontest.ParseRecoveryPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	if theirs.AppendedLogPosition != aeronCrashedStop {
		t.Errorf("ClusterTool appendedLogPosition %d, want %d", theirs.AppendedLogPosition, aeronCrashedStop)
	}
	samePlan(t, ours, theirs)
}

// samePlan compares matchlog's plan with ClusterTool's on every field both
// print.
func samePlan(t *testing.T, ours planJSON, theirs aerontest.RecoveryPlan) {
	t.Helper()
	if ours.LastLeadershipTermID != theirs.LastLeadershipTermID || ours.LastTermBaseLogPosition != theirs.LastTermBaseLogPosition ||
		ours.AppendedLogPosition != theirs.AppendedLogPosition || ours.CommittedLogPosition != theirs.CommittedLogPosition {
		t.Errorf("recovery plan: matchlog term %d base %d appended %d committed %d; ClusterTool %+v",
			ours.LastLeadershipTermID, ours.LastTermBaseLogPosition, ours.AppendedLogPosition, ours.CommittedLogPosition, theirs)
	}
	if len(ours.Snapshots) != len(theirs.Snapshots) {
		t.Fatalf("recovery plan snapshots: matchlog %+v, ClusterTool %+v", ours.Snapshots, theirs.Snapshots)
	}
	for i, s := range ours.Snapshots {
		g := aerontest.Snapshot{RecordingID: s.RecordingID, LeadershipTermID: s.LeadershipTermID,
			TermBaseLogPosition: s.TermBaseLogPosition, LogPosition: s.LogPosition, Timestamp: s.Timestamp, ServiceID: s.ServiceID}
		if g != theirs.Snapshots[i] {
			t.Errorf("recovery plan snapshot %d: matchlog %+v, ClusterTool %+v", i, g, theirs.Snapshots[i])
		}
	}
	if (ours.Log == nil) != (theirs.Log == nil) {
		t.Fatalf("recovery plan log: matchlog %+v, ClusterTool %+v", ours.Log, theirs.Log)
	}
	if l := ours.Log; l != nil {
		g := aerontest.Log{RecordingID: l.RecordingID, LeadershipTermID: l.LeadershipTermID, TermBaseLogPosition: l.TermBaseLogPosition,
			LogPosition: l.LogPosition, StartPosition: l.StartPosition, StopPosition: l.StopPosition, InitialTermID: l.InitialTermID,
			TermBufferLength: l.TermBufferLength, MTULength: l.MTULength, SessionID: l.SessionID}
		if g != *theirs.Log {
			t.Errorf("recovery plan log: matchlog %+v, ClusterTool %+v", g, *theirs.Log)
		}
	}
}
