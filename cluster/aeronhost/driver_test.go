package aeronhost

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron/counters"
	"github.com/matchlog/matchlog/cluster"
)

// fakeDriver writes a cnc.dat as a media driver lays it out (the header,
// a to-driver ring buffer with the driver's heartbeat in its trailer, a
// to-clients broadcast buffer, counters metadata and values, an error
// log) and beats, as a driver does, until stopped. Counter 0 can be the
// consensus module's commit-position counter.
type fakeDriver struct {
	t    *testing.T
	path string
	f    *os.File

	mu      sync.Mutex
	beating bool
	done    chan struct{}
	wg      sync.WaitGroup
}

const (
	fakeToDriverLen  = 1024 + 768
	fakeToClientsLen = 1024 + 128
	fakeCounters     = 8
	fakeMetaLen      = fakeCounters * int64(counters.MetadataLength)
	fakeValuesLen    = fakeCounters * int64(counters.CounterLength)
	fakeErrLogLen    = 1024
)

func (d *fakeDriver) offsets() (heartbeat, meta, values int64) {
	heartbeat = cncHeaderLength + fakeToDriverLen - rbTrailerLength + rbHeartbeatInTrailr
	meta = cncHeaderLength + fakeToDriverLen + fakeToClientsLen
	values = meta + fakeMetaLen
	return
}

// startFakeDriver writes dir/cnc.dat (through a rename, as a new file) and
// starts beating every 10 ms.
func startFakeDriver(t *testing.T, dir string) *fakeDriver {
	t.Helper()
	d := &fakeDriver{t: t, path: filepath.Join(dir, "cnc.dat"), beating: true, done: make(chan struct{})}
	size := cncHeaderLength + fakeToDriverLen + fakeToClientsLen + fakeMetaLen + fakeValuesLen + fakeErrLogLen
	buf := make([]byte, size)
	le := binary.LittleEndian
	le.PutUint32(buf[0:], uint32(counters.CurrentCncVersion))
	le.PutUint32(buf[4:], fakeToDriverLen)
	le.PutUint32(buf[8:], fakeToClientsLen)
	le.PutUint32(buf[12:], uint32(fakeMetaLen))
	le.PutUint32(buf[16:], uint32(fakeValuesLen))
	le.PutUint32(buf[20:], fakeErrLogLen)
	le.PutUint64(buf[24:], uint64(10*time.Second)) // client liveness timeout, ns
	le.PutUint64(buf[32:], uint64(time.Now().UnixMilli()))
	le.PutUint64(buf[40:], uint64(os.Getpid()))
	hb, _, _ := d.offsets()
	le.PutUint64(buf[hb:], uint64(time.Now().UnixMilli()))
	tmp := d.path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, d.path); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(d.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	d.f = f
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			select {
			case <-d.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			d.mu.Lock()
			if d.beating {
				d.put64(hb, time.Now().UnixMilli())
			}
			d.mu.Unlock()
		}
	}()
	t.Cleanup(d.close)
	return d
}

func (d *fakeDriver) put64(off int64, v int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	if _, err := d.f.WriteAt(b[:], off); err != nil {
		d.t.Error(err)
	}
}

func (d *fakeDriver) put32(off int64, v int32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	if _, err := d.f.WriteAt(b[:], off); err != nil {
		d.t.Error(err)
	}
}

// stopBeating plays a driver that died.
func (d *fakeDriver) stopBeating() {
	d.mu.Lock()
	d.beating = false
	d.mu.Unlock()
}

// commitCounter allocates counter 0 as the commit-position counter of
// clusterID, registration id regID.
func (d *fakeDriver) commitCounter(clusterID int32, regID int64) {
	_, meta, values := d.offsets()
	d.put32(meta+int64(counters.TypeIdOffset), commitPosCounterTypeID)
	d.put32(meta+int64(counters.KeyOffset), clusterID)
	d.put64(values+int64(counters.RegistrationIdOffset), regID)
	d.put32(meta, counters.RecordAllocated)
}

// recoveryCounter allocates counter 1 as the recovery-state counter of
// clusterID recovering from leadership term termID.
func (d *fakeDriver) recoveryCounter(clusterID int32, termID int64) {
	_, meta, _ := d.offsets()
	meta += int64(counters.MetadataLength)
	d.put32(meta+int64(counters.TypeIdOffset), recoveryStateCounterTypeID)
	d.put64(meta+int64(counters.KeyOffset), termID)
	d.put32(meta+int64(counters.KeyOffset)+24, clusterID)
	d.put32(meta, counters.RecordAllocated)
}

// freeCounter frees counter 0, as the driver does when its owner goes.
func (d *fakeDriver) freeCounter() {
	_, meta, _ := d.offsets()
	d.put32(meta, counters.RecordReclaimed)
}

func (d *fakeDriver) close() {
	select {
	case <-d.done:
		return
	default:
	}
	close(d.done)
	d.wg.Wait()
	d.f.Close()
}

func TestDriverHeartbeat(t *testing.T) {
	dir := t.TempDir()
	cnc := filepath.Join(dir, "cnc.dat")
	if err := driverActive(cnc, time.Second, time.Now()); !errors.Is(err, errDriverStarting) {
		t.Fatalf("no cnc.dat: %v", err)
	}
	for _, size := range []int{0, 8, 8192} {
		if err := os.WriteFile(cnc, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := driverActive(cnc, time.Second, time.Now()); !errors.Is(err, errDriverStarting) {
			t.Fatalf("zero cnc.dat of %d bytes: %v", size, err)
		}
	}
	d := startFakeDriver(t, dir)
	if err := driverActive(cnc, time.Second, time.Now()); err != nil {
		t.Fatalf("live driver: %v", err)
	}
	d.stopBeating()
	if err := driverActive(cnc, time.Second, time.Now().Add(2*time.Second)); !errors.Is(err, errDriverStale) {
		t.Fatalf("stale driver: %v", err)
	}
	d.put32(0, 7)
	err := driverActive(cnc, time.Second, time.Now())
	if err == nil || errors.Is(err, errDriverStarting) || !strings.Contains(err.Error(), "version=7") {
		t.Fatalf("version 7: %v", err)
	}
}

// A driver still starting (zero cnc.dat) when the service starts is
// waited for: Run gets past the cnc.dat check once the driver is there.
func TestRunWaitsForStartingDriver(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cnc.dat"), make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		time.Sleep(300 * time.Millisecond)
		startFakeDriver(t, dir)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := waitForDriver(ctx, filepath.Join(dir, "cnc.dat"), 5*time.Second)
	<-ready
	if err != nil {
		t.Fatalf("waitForDriver: %v", err)
	}
}

func newWatchFixture(t *testing.T) (*fakeDriver, *watch) {
	dir := t.TempDir()
	d := startFakeDriver(t, dir)
	return d, &watch{cnc: d.path, timeout: 300 * time.Millisecond, clusterID: 3}
}

// runWatched runs a container (waiting for the consensus module if
// !cmReady) under w until runAgent returns, failing the test after 30 s.
func runWatched(t *testing.T, w *watch, cmReady bool, lose func()) error {
	t.Helper()
	svc := &recSvc{}
	a, f, idler := newRunFixture(svc)
	f.cmReady.Store(cmReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { time.Sleep(200 * time.Millisecond); lose() }()
	start := time.Now()
	err := a.runAgent(ctx, f, idler, w.check)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("runAgent still running 30 s after the loss")
	}
	t.Logf("runAgent returned %v after the loss: %v", time.Since(start)-200*time.Millisecond, err)
	if cmReady && svc.calls[len(svc.calls)-1] != "terminate" {
		t.Fatalf("calls %v: the service was not terminated", svc.calls)
	}
	return err
}

func TestRunAgentDriverLoss(t *testing.T) {
	for _, cmReady := range []bool{false, true} {
		d, w := newWatchFixture(t)
		err := runWatched(t, w, cmReady, d.stopBeating)
		if err == nil || !strings.Contains(err.Error(), "media driver lost") {
			t.Fatalf("cmReady %v: %v", cmReady, err)
		}
	}
}

func TestRunAgentConsensusModuleLoss(t *testing.T) {
	d, w := newWatchFixture(t)
	d.commitCounter(3, 77)
	err := runWatched(t, w, true, d.freeCounter)
	if err == nil || !strings.Contains(err.Error(), "consensus module lost") {
		t.Fatalf("freed counter: %v", err)
	}

	// The counter reused by another owner is the module gone too.
	d, w = newWatchFixture(t)
	d.commitCounter(3, 77)
	err = runWatched(t, w, true, func() { d.commitCounter(3, 78) })
	if err == nil || !strings.Contains(err.Error(), "consensus module lost") {
		t.Fatalf("reused counter: %v", err)
	}
}

// Another cluster's commit-position counter is not ours.
func TestWatchOtherClusterCounter(t *testing.T) {
	d, w := newWatchFixture(t)
	d.commitCounter(4, 77)
	if err := w.check(time.Now()); err != nil {
		t.Fatal(err)
	}
	d.freeCounter()
	if err := w.check(time.Now()); err != nil {
		t.Fatalf("another cluster's counter freed: %v", err)
	}
}

func TestRunAgentFatalAeronError(t *testing.T) {
	_, w := newWatchFixture(t)
	var seen []string
	h := w.errorHandler(func(err error) { seen = append(seen, err.Error()) })
	err := runWatched(t, w, true, func() {
		h(errors.New("channel endpoint error: not fatal"))
		h(errors.New("MediaDriver keepalive (ms): age=1 > timeout=5000"))
	})
	if err == nil || !strings.Contains(err.Error(), "MediaDriver keepalive") {
		t.Fatalf("fatal aeron error: %v", err)
	}
	if len(seen) != 2 {
		t.Fatalf("error handler saw %v", seen)
	}
}

func TestNonFatalAeronError(t *testing.T) {
	_, w := newWatchFixture(t)
	w.errorHandler(nil)(errors.New("channel endpoint error"))
	if err := w.check(time.Now()); err != nil {
		t.Fatal(err)
	}
}

// The cluster directory, which the consensus module creates after its
// driver may be ready, is waited for.
func TestWaitForClusterDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cluster")
	go func() { time.Sleep(200 * time.Millisecond); os.Mkdir(dir, 0o755) }()
	if err := waitForDir(context.Background(), dir, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	err := waitForDir(context.Background(), filepath.Join(dir, "none"), 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no cluster directory") {
		t.Fatalf("missing directory: %v", err)
	}
}

// LeadershipTermID during OnStart is the recovery-state counter's term.
func TestStartTermID(t *testing.T) {
	dir := t.TempDir()
	d := startFakeDriver(t, dir)
	d.commitCounter(3, 77) // counter 0, so that counter 1 is scanned
	read := recoveryTermID(d.path, 3)
	if _, ok := read(); ok {
		t.Fatal("a recovery counter before the consensus module made one")
	}
	d.recoveryCounter(4, 9) // another cluster's
	if _, ok := read(); ok {
		t.Fatal("another cluster's recovery counter read")
	}
	d.recoveryCounter(3, 5)
	if id, ok := read(); !ok || id != 5 {
		t.Fatalf("recovery term %d %v, want 5", id, ok)
	}

	svc := &recSvc{}
	var during int64
	svc.onStart = func(c cluster.Cluster) { during = c.LeadershipTermID() }
	a := New(svc, Options{})
	a.startTermID = read
	a.OnStart(newFakeCluster(), nil)
	if during != 5 || a.Err() != nil {
		t.Fatalf("LeadershipTermID during OnStart %d (err %v), want 5", during, a.Err())
	}
}
