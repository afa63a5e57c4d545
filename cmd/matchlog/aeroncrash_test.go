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

// killedClusterMember starts a one-member Aeron Cluster (a
// ClusteredMediaDriver with no clustered service: the consensus module
// elects itself and records its log), waits until its log recording holds
// data, and kills it with SIGKILL while it records. It returns the
// directory (cluster/, archive/) and the time of the kill.
func killedClusterMember(t *testing.T, j *aerontest.Java) (string, time.Time) {
	t.Helper()
	d := t.TempDir()
	port := func() string { return "127.0.0.1:" + strconv.Itoa(aerontest.FreeUDPPort(t)) }
	archiveEndpoint := port()
	members := "0," + port() + "," + port() + "," + port() + "," + port() + "," + archiveEndpoint
	p := j.Start(t, []string{
		"aeron.dir=" + filepath.Join(d, "aeron"),
		"aeron.dir.delete.on.start=true",
		"aeron.threading.mode=SHARED",
		"aeron.shared.idle.strategy=sleep-ms",
		"aeron.term.buffer.sparse.file=true",
		"aeron.archive.dir=" + archiveDir(d),
		"aeron.archive.threading.mode=SHARED",
		"aeron.archive.idle.strategy=sleep-ms",
		"aeron.archive.control.channel=aeron:udp?endpoint=" + archiveEndpoint,
		"aeron.archive.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.segment.file.length=131072",
		"aeron.cluster.dir=" + clusterDir(d),
		"aeron.cluster.member.id=0",
		"aeron.cluster.members=" + members,
		"aeron.cluster.ingress.channel=aeron:udp?term-length=65536",
		"aeron.cluster.log.channel=aeron:udp?term-length=65536",
		"aeron.cluster.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.cluster.service.count=0",
		"aeron.cluster.idle.strategy=sleep-ms",
	}, aerontest.ClusteredMediaDriver)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if stop := activeLogData(archiveDir(d)); stop > 0 {
			break
		}
		if done, err := p.Exited(); done {
			t.Fatalf("%s exited (%v) before its log held data; output:\n%s", aerontest.ClusteredMediaDriver, err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no log data after 60 s; output:\n%s", aerontest.ClusteredMediaDriver, p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.Crash(); err != nil {
		t.Fatal(err)
	}
	return d, time.Now()
}

// activeLogData is the stop recording 0 of the catalog in adir would settle
// to, while it is active; 0 while there is nothing to read yet.
func activeLogData(adir string) int64 {
	cat, err := archive.OpenCatalogFile(vfs.Default, adir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return 0
	}
	defer cat.Close()
	d, err := cat.Descriptor(0)
	if err != nil || d.StopPosition != archive.NullPosition {
		return 0
	}
	stop, _, err := archive.ComputeStopPosition(vfs.Default, adir, d)
	if err != nil {
		return 0
	}
	return stop
}

// TestAeronKilledMember: a member of a real Aeron Cluster killed with
// SIGKILL while it records its log (catalog stop -1, TERM entry open). On
// it, `matchlog cluster recovery-plan` and `archive verify` only read, and
// agree with real Aeron: ArchiveTool verify -a (on a copy) says OK and
// writes the stop matchlog settles to, and ClusterTool recovery-plan, asked
// of an archive started on another copy, prints matchlog's plan.
func TestAeronKilledMember(t *testing.T) {
	j := aerontest.Require(t)
	d, killed := killedClusterMember(t, j)

	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := cat.Descriptor(0)
	cat.Close()
	if err != nil || desc.StopPosition != archive.NullPosition {
		t.Fatalf("log recording after the kill: %+v, %v; want it active (stop -1)", desc, err)
	}
	before := treeHashes(t, d)
	var ours planJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "cluster", "recovery-plan", "--dir", d, "--services", "0", "--json")), &ours); err != nil {
		t.Fatal(err)
	}
	var rep verifyReportJSON
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "verify", "--all", "--dir", d, "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "recovery-plan and verify", before, treeHashes(t, d))
	if ours.Log == nil || ours.Log.LogPosition != -1 || ours.AppendedLogPosition <= 0 || ours.AppendedLogPosition != ours.Log.StopPosition {
		t.Fatalf("matchlog recovery-plan of the killed member: %+v (log %+v); want an open TERM and the settled stop", ours, ours.Log)
	}
	if len(rep.Recordings) != 1 || !rep.OK || !rep.Recordings[0].Settled || rep.Recordings[0].ComputedStop != ours.AppendedLogPosition {
		t.Fatalf("matchlog archive verify: %+v; want recording 0 OK, settled to %d", rep, ours.AppendedLogPosition)
	}
	t.Logf("killed member: log recording settles to %d", ours.AppendedLogPosition)

	v := t.TempDir()
	fixtures.CopyDirs(t, d, v, "archive")
	r, err := j.Run(t, 0, nil, aerontest.ArchiveTool, archiveDir(v), "verify", "-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ArchiveTool verify -a on the killed member:\n%s", strings.TrimSpace(r.Stdout))
	if r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "(recordingId=0) OK" {
		t.Errorf("ArchiveTool verify -a: exit %d\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	cat, err = archive.OpenCatalogFile(vfs.Default, archiveDir(v), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	written, err := cat.Descriptor(0)
	cat.Close()
	if err != nil || written.StopPosition != ours.AppendedLogPosition {
		t.Errorf("ArchiveTool verify wrote stop %d (%v); matchlog settled to %d", written.StopPosition, err, ours.AppendedLogPosition)
	}

	// The killed archive's mark file counts as active for 10 s.
	a := t.TempDir()
	fixtures.CopyDirs(t, d, a, "cluster", "archive")
	time.Sleep(time.Until(killed.Add(11 * time.Second)))
	arc := j.StartArchivingMediaDriver(t, archiveDir(a), 30*time.Second)
	out := j.MustRun(t, arc.ClientProps(), aerontest.ClusterTool, clusterDir(a), "recovery-plan", "0")
	if err := arc.Stop(); err != nil {
		t.Error(err)
	}
	t.Logf("ClusterTool recovery-plan 0 on the killed member:\n%s", strings.TrimSpace(out))
	theirs, err := aerontest.ParseRecoveryPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	samePlan(t, ours, theirs)
}
