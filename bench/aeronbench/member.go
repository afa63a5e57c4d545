package aeronbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// snapshotChannel is the consensus modules' and services' snapshot
// channel: the largest IPC MTU, with a term that can carry it
// (docs/aeron-cluster.md, "Settings the snapshot study recommends").
const snapshotChannel = "aeron:ipc?alias=snapshot|mtu=65504|term-length=1m"

// member is one member of the bench's Aeron Cluster: a
// ClusteredMediaDriver JVM and `matchlog aeron-node` as its service,
// started and killed as one unit.
type member struct {
	b       *bench
	id      int
	dir     string // holds aeron/, archive/, cluster/
	ports   [5]int // ingress, consensus, log, catch-up, archive control
	members string // aeron.cluster.members

	jvm, svc *process

	mu      sync.Mutex
	records []record // of the current service process
	status  record   // its latest "status"
}

func (m *member) aeronDir() string   { return filepath.Join(m.dir, "aeron") }
func (m *member) clusterDir() string { return filepath.Join(m.dir, "cluster") }

// memberEndpoints is a member's entry of aeron.cluster.members.
func memberEndpoints(id int, ports [5]int) string {
	ep := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	return fmt.Sprintf("%d,%s,%s,%s,%s,%s", id, ep(0), ep(1), ep(2), ep(3), ep(4))
}

// props are the JVM's system properties: SHARED threading and sleeping
// idle strategies (two-core machines), loopback only, file sync level 0,
// the recommended 16 MiB archive blocks and snapshot MTU, a leader
// declared lost after 3 s without a heartbeat (Aeron's default is 10 s).
func (m *member) props() []string {
	ep := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", m.ports[i]) }
	return []string{
		"aeron.dir=" + m.aeronDir(),
		"aeron.dir.delete.on.start=true",
		"aeron.dir.delete.on.shutdown=true",
		"aeron.threading.mode=SHARED",
		"aeron.shared.idle.strategy=sleep-ms",
		"aeron.term.buffer.length=1048576",
		"aeron.ipc.term.buffer.length=1048576",
		"aeron.term.buffer.sparse.file=true",
		"aeron.archive.dir=" + filepath.Join(m.dir, "archive"),
		"aeron.archive.threading.mode=SHARED",
		"aeron.archive.idle.strategy=sleep-ms",
		"aeron.archive.control.channel=aeron:udp?endpoint=" + ep(4),
		"aeron.archive.control.response.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.archive.file.sync.level=0",
		"aeron.archive.catalog.file.sync.level=0",
		"aeron.archive.file.io.max.length=16777216",
		"aeron.archive.recording.events.enabled=false",
		"aeron.cluster.dir=" + m.clusterDir(),
		"aeron.cluster.member.id=" + strconv.Itoa(m.id),
		"aeron.cluster.members=" + m.members,
		"aeron.cluster.ingress.channel=aeron:udp",
		"aeron.cluster.log.channel=aeron:udp?term-length=1m",
		"aeron.cluster.replication.channel=aeron:udp?endpoint=127.0.0.1:0",
		"aeron.cluster.snapshot.channel=" + snapshotChannel,
		"aeron.cluster.service.count=1",
		"aeron.cluster.clock=io.aeron.cluster.NanosecondClusterClock",
		"aeron.cluster.idle.strategy=sleep-ms",
		"aeron.cluster.file.sync.level=0",
		"aeron.cluster.leader.heartbeat.timeout=3s",
		"aeron.cluster.leader.heartbeat.interval=100ms",
	}
}

// launchJVM starts the member's JVM.
func (m *member) launchJVM() error {
	cmd := exec.Command(m.b.java.bin, m.b.java.args(m.props(), clusteredMediaDriver, nil)...)
	p, err := start(fmt.Sprintf("member %d's JVM", m.id), cmd, &tailBuffer{})
	if err != nil {
		return err
	}
	m.jvm = p
	return nil
}

// launchService starts the member's service once its JVM has created the
// cluster directory (the service's own wait for it is bounded by its
// media driver timeout, short for the sake of restarts after a kill -9).
func (m *member) launchService(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(m.clusterDir()); err == nil {
			break
		}
		if m.jvm.exited() {
			return fmt.Errorf("member %d's JVM exited (%v) before creating %s:\n%s", m.id, m.jvm.err, m.clusterDir(), lastLines(m.jvm.out.String(), 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d's JVM created no %s within 90 s:\n%s", m.id, m.clusterDir(), lastLines(m.jvm.out.String(), 20))
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.records, m.status = nil, record{}
	m.mu.Unlock()
	out := &tailBuffer{onLine: func(l []byte) {
		if r, ok := parseRecord(l); ok {
			m.mu.Lock()
			m.records = append(m.records, r)
			if r.Msg == "status" {
				m.status = r
			}
			m.mu.Unlock()
		}
	}}
	cmd := m.b.o.Service([]string{"--aeron-dir", m.aeronDir(), "--cluster-dir", m.clusterDir(),
		"--snapshot-channel", snapshotChannel, "--media-driver-timeout", "5s", "--status-every", "100ms",
		"--log-format", "json"})
	p, err := start(fmt.Sprintf("member %d's service", m.id), cmd, out)
	if err != nil {
		return err
	}
	m.svc = p
	return nil
}

// crash kills the member as one unit, JVM and service, with SIGKILL.
func (m *member) crash() {
	m.jvm.kill()
	m.svc.kill()
}

// stop stops the service, then the JVM (SIGTERM, then SIGKILL).
func (m *member) stop() {
	m.svc.stop()
	m.jvm.stop()
}

// lastStatus is the service's latest status record.
func (m *member) lastStatus() record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// find returns the service's records named msg.
func (m *member) find(msg string) []record {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for _, r := range m.records {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// alive fails when the member's service or JVM has exited.
func (m *member) alive() error {
	switch {
	case m.svc != nil && m.svc.exited():
		jvm := "running"
		if m.jvm != nil && m.jvm.exited() {
			jvm = fmt.Sprintf("exited (%v)", m.jvm.err)
		}
		return fmt.Errorf("member %d's aeron-node exited (%v):\n%s\nits JVM, %s:\n%s", m.id, m.svc.err, lastLines(m.svc.out.String(), 20),
			jvm, lastLines(m.jvm.out.String(), 20))
	case m.jvm != nil && m.jvm.exited():
		return fmt.Errorf("member %d's JVM exited (%v):\n%s", m.id, m.jvm.err, lastLines(m.jvm.out.String(), 20))
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
