package aeronbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ClasspathEnv names the environment variable holding the classpath of
// the Aeron and Agrona jars.
const ClasspathEnv = "AERON_CLASSPATH"

// ErrNoClasspath is Run's error when Options.Classpath is empty.
var ErrNoClasspath = errors.New(ClasspathEnv + " is unset: bench aeron runs real Java Aeron (ClusteredMediaDriver, ClusterTool) " +
	"and needs the classpath of Aeron 1.48.x jars with Agrona 2.x, e.g. " + ClasspathEnv +
	"=/path/aeron-cluster.jar:/path/aeron-archive.jar:/path/aeron-driver.jar:/path/aeron-client.jar:/path/agrona.jar")

// jvmOptions are the options of every JVM the bench starts: Agrona 2.x's
// two --add-opens, a small heap with the serial collector (two-core
// machines), IPv4.
var jvmOptions = []string{
	"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
	"-Xmx256m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true",
}

// Class names of the Aeron programs the bench runs.
const (
	clusteredMediaDriver = "io.aeron.cluster.ClusteredMediaDriver"
	clusterTool          = "io.aeron.cluster.ClusterTool"
)

// stopGrace is how long a process has after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// java is a JVM with the Aeron classpath.
type java struct {
	bin, classpath string
}

// findJava checks the classpath entries and locates java: JAVA_HOME/bin/java
// when JAVA_HOME is set, else the first java on PATH.
func findJava(cp string) (*java, error) {
	if strings.TrimSpace(cp) == "" {
		return nil, ErrNoClasspath
	}
	for _, e := range filepath.SplitList(cp) {
		if e == "" {
			continue
		}
		if _, err := os.Stat(e); err != nil {
			return nil, fmt.Errorf("%s entry %s cannot be used: %v; fix the variable", ClasspathEnv, e, err)
		}
	}
	if h := os.Getenv("JAVA_HOME"); h != "" {
		bin := filepath.Join(h, "bin", "java")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("JAVA_HOME=%s has no bin/java (%v): fix JAVA_HOME or unset it to use java from PATH", h, err)
		}
		return &java{bin: bin, classpath: cp}, nil
	}
	bin, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("no java on PATH (%v): install a JDK 17 or newer, or set JAVA_HOME", err)
	}
	return &java{bin: bin, classpath: cp}, nil
}

func (j *java) args(props []string, class string, args []string) []string {
	a := append([]string{}, jvmOptions...)
	for _, p := range props {
		a = append(a, "-D"+p)
	}
	a = append(a, "-cp", j.classpath, class)
	return append(a, args...)
}

// run runs a tool to its end, killed after timeout.
func (j *java) run(parent context.Context, timeout time.Duration, class string, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bin, j.args(nil, class, args)...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err := parent.Err(); err != nil {
		return out.String(), -1, fmt.Errorf("%s %s: stopped: %w", class, strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		return out.String(), -1, fmt.Errorf("%s %s: killed after %v: %w", class, strings.Join(args, " "), timeout, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.String(), -1, fmt.Errorf("%s %s: %w", class, strings.Join(args, " "), err)
	}
	return out.String(), 0, nil
}

// process is a child process (a JVM or a service) the bench started and
// must stop.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error // of Wait, valid once done is closed
}

// start starts cmd with its output going to out (and a tail kept for
// errors).
func start(name string, cmd *exec.Cmd, out *tailBuffer) (*process, error) {
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process with SIGKILL (a crash) and waits for it.
func (p *process) kill() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM, waits up to stopGrace, then kills.
func (p *process) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		p.kill()
	}
}

// wait waits up to timeout for the process to end by itself.
func (p *process) wait(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// tailBuffer keeps the last 64 KiB written, and passes whole lines to
// onLine.
type tailBuffer struct {
	mu     sync.Mutex
	tail   []byte
	line   []byte
	onLine func([]byte)
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tail = append(b.tail, p...)
	if len(b.tail) > 64<<10 {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-32<<10:]...)
	}
	if b.onLine != nil {
		b.line = append(b.line, p...)
		for {
			i := bytes.IndexByte(b.line, '\n')
			if i < 0 {
				break
			}
			b.onLine(b.line[:i])
			b.line = b.line[i+1:]
		}
		if len(b.line) > 1<<20 {
			b.line = b.line[:0]
		}
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.tail)
}

// lastLines is the last n lines of s, for error messages.
func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// record is one JSON log line of `matchlog aeron-node`.
type record struct {
	Msg         string    `json:"msg"`
	Role        string    `json:"role"`
	LogPosition int64     `json:"log_position"`
	StateHash   string    `json:"state_hash"`
	Restored    bool      `json:"restored"`
	Restore     string    `json:"restore"`
	Applied     int64     `json:"applied"`
	Take        string    `json:"take"`
	GapBefore   string    `json:"gap_before"`
	Gap         string    `json:"gap"`
	Err         string    `json:"err"`
	Time        time.Time `json:"time"`
}

func parseRecord(line []byte) (record, bool) {
	var r record
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &r) != nil || r.Msg == "" {
		return r, false
	}
	return r, true
}

// freeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	return port, c.Close()
}

// dur parses a duration of a log record (0 if it is not one).
func dur(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}
