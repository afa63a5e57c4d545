package aerontest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// What ClusterTool printed for three-members/member-0 (FACTS.md), cut to
// two entries, and for member 2's recovery plan.
const (
	recordingLogOut = `RecordingLog{entries=[Entry{recordingId=0, leadershipTermId=0, termBaseLogPosition=0, logPosition=1258560, timestamp=1796154694029621830, serviceId=-1, type=TERM, isValid=true, entryIndex=0}, Entry{recordingId=1, leadershipTermId=0, termBaseLogPosition=0, logPosition=314464, timestamp=1796154699177525951, serviceId=0, type=SNAPSHOT, isValid=false, entryIndex=1}], cacheIndex={0=0}}
`
	recoveryPlanOut = `RecoveryPlan{lastLeadershipTermId=0, lastTermBaseLogPosition=0, appendedLogPosition=551136, committedLogPosition=314464, snapshots=[Snapshot{recordingId=2, leadershipTermId=0, termBaseLogPosition=0, logPosition=314464, timestamp=1796154699177525951, serviceId=-1}, Snapshot{recordingId=1, leadershipTermId=0, termBaseLogPosition=0, logPosition=314464, timestamp=1796154699177525951, serviceId=0}], log=Log{recordingId=0, leadershipTermId=0, termBaseLogPosition=0, logPosition=-1, startPosition=314464, stopPosition=551136, initialTermId=0, termBufferLength=65536, mtuLength=1408, sessionId=245407603}}
`
)

func TestParseRecordingLog(t *testing.T) {
	got, err := ParseRecordingLog(recordingLogOut)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{RecordingID: 0, LogPosition: 1258560, Timestamp: 1796154694029621830, ServiceID: -1, Type: "TERM", Valid: true, EntryIndex: 0},
		{RecordingID: 1, LogPosition: 314464, Timestamp: 1796154699177525951, ServiceID: 0, Type: "SNAPSHOT", Valid: false, EntryIndex: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got, err := ParseRecordingLog("RecordingLog{entries=[], cacheIndex={}}"); err != nil || len(got) != 0 {
		t.Errorf("empty log: %v, %v", got, err)
	}
	for _, bad := range []string{
		"",
		"Snapshot not found",
		strings.Replace(recordingLogOut, "isValid=true", "isValid=yes", 1),
		strings.Replace(recordingLogOut, "logPosition=1258560", "logPosition=x", 1),
		strings.Replace(recordingLogOut, ", entryIndex=0", "", 1),
		strings.Replace(recordingLogOut, "entryIndex=0}", "entryIndex=0, extra=1}", 1),
		strings.Replace(recordingLogOut, "}, Entry{", "}, junk, Entry{", 1),
	} {
		if _, err := ParseRecordingLog(bad); err == nil {
			t.Errorf("ParseRecordingLog(%q) accepted it", bad)
		}
	}
}

func TestParseRecoveryPlan(t *testing.T) {
	got, err := ParseRecoveryPlan(recoveryPlanOut)
	if err != nil {
		t.Fatal(err)
	}
	want := RecoveryPlan{AppendedLogPosition: 551136, CommittedLogPosition: 314464,
		Snapshots: []Snapshot{
			{RecordingID: 2, LogPosition: 314464, Timestamp: 1796154699177525951, ServiceID: -1},
			{RecordingID: 1, LogPosition: 314464, Timestamp: 1796154699177525951, ServiceID: 0},
		},
		Log: &Log{RecordingID: 0, LogPosition: -1, StartPosition: 314464, StopPosition: 551136, TermBufferLength: 65536, MTULength: 1408, SessionID: 245407603},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v %+v\nwant %+v %+v", got, *got.Log, want, *want.Log)
	}
	null := "RecoveryPlan{lastLeadershipTermId=-1, lastTermBaseLogPosition=0, appendedLogPosition=0, committedLogPosition=0, snapshots=[], log=null}"
	if p, err := ParseRecoveryPlan(null); err != nil || p.Log != nil || len(p.Snapshots) != 0 || p.LastLeadershipTermID != -1 {
		t.Errorf("plan without log: %+v, %v", p, err)
	}
	for _, bad := range []string{
		"",
		strings.Replace(recoveryPlanOut, "sessionId=245407603", "sessionId=99999999999", 1), // not an int32
		strings.Replace(recoveryPlanOut, ", mtuLength=1408", "", 1),
		strings.Replace(recoveryPlanOut, "}, Snapshot{", "}; Snapshot{", 1),
		strings.Replace(recoveryPlanOut, "committedLogPosition=314464", "committedLogPosition=", 1),
	} {
		if _, err := ParseRecoveryPlan(bad); err == nil {
			t.Errorf("ParseRecoveryPlan(%q) accepted it", bad)
		}
	}
}

// skipTB records a Skip instead of performing it.
type skipTB struct {
	testing.TB
	skipped string
}

func (s *skipTB) Skip(args ...any) {
	s.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

func (s *skipTB) Helper() {}

// TestRequireSkipsWhenUnset: with AERON_CLASSPATH unset Require skips and
// says which variable to set.
func TestRequireSkipsWhenUnset(t *testing.T) {
	t.Setenv(ClasspathEnv, "")
	s := &skipTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Require(s)
		t.Error("Require returned with AERON_CLASSPATH unset")
	}()
	<-done
	if !strings.Contains(s.skipped, ClasspathEnv+" is unset") {
		t.Errorf("skip message %q does not name %s", s.skipped, ClasspathEnv)
	}
}

// TestFindRejectsMissingEntry: a set AERON_CLASSPATH naming a file that
// does not exist is an error that names it, not a skip.
func TestFindRejectsMissingEntry(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.jar")
	_, err := find(missing)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("find(%q) = %v; want an error naming it", missing, err)
	}
	t.Setenv("JAVA_HOME", t.TempDir())
	jar := filepath.Join(t.TempDir(), "x.jar")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := find(jar); err == nil || !strings.Contains(err.Error(), "JAVA_HOME") {
		t.Fatalf("find with a JAVA_HOME lacking bin/java = %v; want an error naming JAVA_HOME", err)
	}
}

// TestRunTimeoutKills: a process that outlives Run's timeout is killed and
// reported. It runs /bin/sh in place of java, so it needs no JVM.
func TestRunTimeoutKills(t *testing.T) {
	sh, err := os.Stat("/bin/sh")
	if err != nil || sh.IsDir() {
		t.Skip("no /bin/sh")
	}
	// java's argument list starts with JVM options; a shell script that
	// ignores its arguments stands in for it.
	script := filepath.Join(t.TempDir(), "java")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	j := &Java{bin: script, classpath: "x"}
	_, err = j.Run(t, 200*time.Millisecond, nil, "Sleeper")
	if err == nil || !strings.Contains(err.Error(), "killed after") {
		t.Fatalf("Run = %v; want a kill after the timeout", err)
	}

	// Start: the process is stopped by Stop (SIGTERM ends sleep at once).
	p := j.Start(t, nil, "Sleeper")
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if done, _ := p.Exited(); !done {
		t.Fatal("process still running after Stop")
	}
}
