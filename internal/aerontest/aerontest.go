// Package aerontest runs real Java Aeron (its ArchiveTool, ClusterTool and
// ArchivingMediaDriver) from tests, so that what matchlog writes into an
// Aeron directory is judged by Aeron itself and not by our reading of it.
//
// Contract:
//
//   - The jars come from the environment: AERON_CLASSPATH holds the
//     classpath of Aeron 1.48.x (aeron-client, -driver, -archive, -cluster)
//     with Agrona 2.x. No jar is part of the repository. Where the variable
//     is unset, Require skips the test with a message naming the variable —
//     locally and under CI alike. Where it is set, a missing java or a
//     classpath entry that does not exist fails the test: the user asked for
//     real Aeron and must be told why it did not run.
//   - java is JAVA_HOME/bin/java when JAVA_HOME is set, else the first java
//     on PATH. Every JVM gets JVMOptions (Agrona 2.x needs the two
//     --add-opens) and a small heap with the serial collector: the test
//     machines have two cores.
//   - Every process is bounded: Run kills a tool that outlives its timeout
//     and reports it as an error; a process started with Start is stopped
//     (SIGTERM, then SIGKILL after a grace period) and waited for when the
//     test ends, if the test did not stop it first.
//   - Network use is loopback only: FreeUDPPort binds 127.0.0.1, and the
//     archive started by StartArchivingMediaDriver listens on it.
//
// The parsers (ParseRecordingLog, ParseRecoveryPlan) read the toString
// output of Aeron's RecordingLog and RecoveryPlan as ClusterTool prints
// them, and fail on anything else rather than guess.
package aerontest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClasspathEnv names the environment variable holding the classpath of the
// Aeron and Agrona jars.
const ClasspathEnv = "AERON_CLASSPATH"

// JVMOptions are the options every JVM loading Agrona 2.x needs.
var JVMOptions = []string{
	"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
}

// smallJVM keeps a JVM small on a shared two-core machine.
var smallJVM = []string{"-Xmx128m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true"}

// Class names of the Aeron programs the tests run.
const (
	ArchiveTool          = "io.aeron.archive.ArchiveTool"
	ClusterTool          = "io.aeron.cluster.ClusterTool"
	ArchivingMediaDriver = "io.aeron.archive.ArchivingMediaDriver"
	// ClusteredMediaDriver is a cluster member's media driver, archive
	// and consensus module in one JVM.
	ClusteredMediaDriver = "io.aeron.cluster.ClusteredMediaDriver"
)

// DefaultTimeout bounds one tool run.
const DefaultTimeout = 60 * time.Second

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// Java is a JVM with the Aeron classpath.
type Java struct {
	bin       string
	classpath string
}

// SkipMessage is the message of the skip when AERON_CLASSPATH is unset.
const SkipMessage = ClasspathEnv + " is unset: this test runs real Java Aeron (ArchiveTool, ClusterTool, " +
	"ArchivingMediaDriver) and needs the classpath of Aeron 1.48.x jars with Agrona 2.x " +
	"(aeron-client, aeron-driver, aeron-archive, aeron-cluster, agrona), e.g. " +
	ClasspathEnv + "=/path/aeron-cluster.jar:/path/aeron-archive.jar:/path/aeron-driver.jar:/path/aeron-client.jar:/path/agrona.jar; skipped"

// Require returns the JVM to run Aeron with, skipping the test when
// AERON_CLASSPATH is unset and failing it when the variable is set but java
// or a classpath entry is missing.
func Require(t testing.TB) *Java {
	t.Helper()
	cp := os.Getenv(ClasspathEnv)
	if strings.TrimSpace(cp) == "" {
		t.Skip(SkipMessage)
	}
	j, err := find(cp)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// find checks the classpath entries and locates java.
func find(cp string) (*Java, error) {
	for _, e := range filepath.SplitList(cp) {
		if e == "" {
			continue
		}
		if _, err := os.Stat(e); err != nil {
			return nil, fmt.Errorf("%s is set but its entry %s cannot be used: %v; fix the variable or unset it to skip the tests that need real Aeron", ClasspathEnv, e, err)
		}
	}
	bin := ""
	if h := os.Getenv("JAVA_HOME"); h != "" {
		bin = filepath.Join(h, "bin", "java")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s is set but JAVA_HOME=%s has no bin/java (%v): fix JAVA_HOME or unset it to use java from PATH", ClasspathEnv, h, err)
		}
	} else {
		p, err := exec.LookPath("java")
		if err != nil {
			return nil, fmt.Errorf("%s is set but no java was found on PATH (%v): install a JDK 17 or newer, or set JAVA_HOME", ClasspathEnv, err)
		}
		bin = p
	}
	return &Java{bin: bin, classpath: cp}, nil
}

// Result is what a tool run printed.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// args builds the java command line: JVM options, the system properties
// (each "name=value"), the classpath, the class and its arguments.
func (j *Java) args(props []string, class string, args []string) []string {
	a := append([]string{}, JVMOptions...)
	a = append(a, smallJVM...)
	for _, p := range props {
		a = append(a, "-D"+p)
	}
	a = append(a, "-cp", j.classpath, class)
	return append(a, args...)
}

// Run runs class with the system properties props ("name=value") and args,
// waits at most timeout (DefaultTimeout when 0) and returns what it
// printed. A non-zero exit is a Result, not an error; a run that could not
// start or outlived its timeout (it is then killed) is an error.
func (j *Java) Run(t testing.TB, timeout time.Duration, props []string, class string, args ...string) (Result, error) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, j.args(props, class, args)...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("%s %s: killed after %v (stdout %q, stderr %q)", class, strings.Join(args, " "), timeout, r.Stdout, r.Stderr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("%s %s: %w", class, strings.Join(args, " "), err)
	}
	return r, nil
}

// MustRun is Run that fails the test on an error or a non-zero exit.
func (j *Java) MustRun(t testing.TB, props []string, class string, args ...string) string {
	t.Helper()
	r, err := j.Run(t, 0, props, class, args...)
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 {
		t.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", class, strings.Join(args, " "), r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// Process is a JVM started in the background.
type Process struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error // of Wait, valid after done is closed

	once    sync.Once
	stopErr error
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts class in the background. The process is stopped and waited
// for when the test ends (Stop may be called before).
func (j *Java) Start(t testing.TB, props []string, class string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(j.bin, j.args(props, class, args)...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", class, err)
	}
	p := &Process{name: class, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Logf("stop %s: %v", class, err)
		}
	})
	return p
}

// Output is what the process printed so far (stdout and stderr).
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM (Aeron's programs close in order on it), waits up to
// a grace period, then kills the process; it returns once the process has
// ended. A process that exited non-zero on SIGTERM is not an error, one that
// had to be killed is.
func (p *Process) Stop() error {
	p.once.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
			p.stopErr = fmt.Errorf("%s did not stop within %v of SIGTERM and was killed; output:\n%s", p.name, stopGrace, p.Output())
		}
	})
	return p.stopErr
}

// Kill kills the process (SIGKILL, as a crash) and waits for it.
func (p *Process) Kill() { _ = p.Crash() }

// FreeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// Archive is a running ArchivingMediaDriver (media driver and archive in
// one JVM).
type Archive struct {
	*Process
	// AeronDir is the media driver's directory (cnc.dat).
	AeronDir string
	// ControlChannel is the archive's control request channel.
	ControlChannel string
}

// StartArchivingMediaDriver starts a media driver and an archive on
// archiveDir, the driver in a new temporary directory, the archive's
// control channel on 127.0.0.1 at a free port; SHARED threading and
// sleeping idle strategies keep it from spinning a core. It returns once the
// driver's cnc.dat exists (at most timeout); the archive is stopped when the
// test ends.
func (j *Java) StartArchivingMediaDriver(t testing.TB, archiveDir string, timeout time.Duration) *Archive {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	aeronDir := filepath.Join(t.TempDir(), "aeron")
	control := fmt.Sprintf("aeron:udp?endpoint=127.0.0.1:%d", FreeUDPPort(t))
	props := []string{
		"aeron.dir=" + aeronDir,
		"aeron.dir.delete.on.start=true",
		"aeron.dir.delete.on.shutdown=true",
		"aeron.threading.mode=SHARED",
		"aeron.shared.idle.strategy=sleep-ms",
		"aeron.term.buffer.sparse.file=true",
		"aeron.archive.dir=" + archiveDir,
		"aeron.archive.threading.mode=SHARED",
		"aeron.archive.idle.strategy=sleep-ms",
		"aeron.archive.control.channel=" + control,
		"aeron.archive.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.file.sync.level=0",
		"aeron.archive.catalog.file.sync.level=0",
	}
	p := j.Start(t, props, ArchivingMediaDriver)
	a := &Archive{Process: p, AeronDir: aeronDir, ControlChannel: control}
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(filepath.Join(aeronDir, "cnc.dat")); err == nil {
			return a
		}
		if done, err := p.Exited(); done {
			t.Fatalf("%s exited before its driver started (%v); output:\n%s", ArchivingMediaDriver, err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after %v; output:\n%s", ArchivingMediaDriver, filepath.Join(aeronDir, "cnc.dat"), timeout, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClientProps are the system properties a tool (ClusterTool recovery-plan)
// needs to reach this archive: its driver and its control channel, with
// responses on an ephemeral loopback port.
func (a *Archive) ClientProps() []string {
	return []string{
		"aeron.dir=" + a.AeronDir,
		"aeron.archive.control.channel=" + a.ControlChannel,
		"aeron.archive.control.response.channel=aeron:udp?endpoint=127.0.0.1:0",
	}
}
