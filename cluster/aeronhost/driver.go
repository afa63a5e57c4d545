package aeronhost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	aatomic "github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/counters"
	"github.com/lirm/aeron-go/aeron/util"
)

// The layout of the media driver's cnc.dat that the host reads (Aeron's
// CncFileDescriptor, as aeron-go's counters.MetaDataFlyweight maps it): a
// header whose first int32 is the version (written last, so a zero
// version is a driver still creating the file), the buffer lengths, then,
// at cncHeaderLength, the to-driver ring buffer, whose trailer holds the
// driver's heartbeat (epoch ms, updated by the driver's conductor).
const (
	cncHeaderLength     = int64(util.CacheLineLength * 2)
	cncLengthsEnd       = 24 // version and the five buffer lengths
	rbTrailerLength     = int64(util.CacheLineLength * 12)
	rbHeartbeatInTrailr = int64(util.CacheLineLength * 10)

	// commitPosCounterTypeID is the type of the consensus module's
	// commit-position counter, keyed by the cluster id (aeron-go waits
	// for it at start).
	commitPosCounterTypeID = 203
	// recoveryStateCounterTypeID is the consensus module's recovery-state
	// counter: key leadershipTermId (int64 at 0), log position, timestamp,
	// cluster id (int32 at 24), service count, snapshot recording ids.
	recoveryStateCounterTypeID = 204

	// watchInterval is how often Run checks the driver and the
	// consensus module.
	watchInterval = 50 * time.Millisecond
	// exitGrace is how long Run waits for the container goroutine to end
	// once the driver or consensus module is gone; after it Run returns
	// anyway (the goroutine is stuck in aeron-go).
	exitGrace = time.Second
)

// errDriverStarting is a cnc.dat that is not there or not complete yet;
// errDriverStale one whose driver has not beaten within the timeout.
var (
	errDriverStarting = errors.New("driver still starting")
	errDriverStale    = errors.New("no media driver heartbeat")
)

// driverHeartbeat reads cnc.dat at path: the driver's last heartbeat
// (epoch ms). It returns errDriverStarting (wrapped) while the file is
// missing, short or of version 0, and a plain error for a version aeron-go
// does not read. It reads with pread, never a mapping, so a file that is
// being replaced cannot fault the process.
func driverHeartbeat(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: no %s", errDriverStarting, path)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var hdr [cncLengthsEnd]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: %s is shorter than its header", errDriverStarting, path)
		}
		return 0, err
	}
	version := int32(binary.LittleEndian.Uint32(hdr[0:]))
	if version == 0 {
		return 0, fmt.Errorf("%w: %s has version 0", errDriverStarting, path)
	}
	if version != counters.CurrentCncVersion {
		return 0, fmt.Errorf("%s: aeron cnc file version not understood: version=%d, aeron-go reads %d (a media driver of another Aeron version)",
			path, version, counters.CurrentCncVersion)
	}
	toDriver := int64(int32(binary.LittleEndian.Uint32(hdr[4:])))
	if toDriver <= rbTrailerLength {
		return 0, fmt.Errorf("%s: to-driver buffer length %d is not a ring buffer", path, toDriver)
	}
	var hb [8]byte
	if _, err := f.ReadAt(hb[:], cncHeaderLength+toDriver-rbTrailerLength+rbHeartbeatInTrailr); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: %s is shorter than its buffers", errDriverStarting, path)
		}
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(hb[:])), nil
}

// driverActive says whether the driver of cnc.dat at path has beaten
// within timeout of now; err as driverHeartbeat's, or one naming the stale
// heartbeat.
func driverActive(path string, timeout time.Duration, now time.Time) error {
	hb, err := driverHeartbeat(path)
	if err != nil {
		return err
	}
	if hb == 0 {
		return fmt.Errorf("%w: %s has no driver heartbeat yet", errDriverStarting, path)
	}
	if age := now.UnixMilli() - hb; age > timeout.Milliseconds() {
		return fmt.Errorf("%w in %s for %v (over the media driver timeout %v)",
			errDriverStale, path, time.Duration(age)*time.Millisecond, timeout)
	}
	return nil
}

// WaitForDriver waits, up to timeout, until the media driver of aeronDir
// is ready as Run does before it starts the container (cnc.dat there, of a
// version aeron-go reads, with a fresh driver heartbeat), for other aeron-go
// clients of the same driver.
func WaitForDriver(ctx context.Context, aeronDir string, timeout time.Duration) error {
	cnc := filepath.Join(aeronDir, counters.CncFile)
	if err := waitForDriver(ctx, cnc, timeout); err != nil {
		return fmt.Errorf("aeronhost: media driver CnC file %q: %w", cnc, err)
	}
	return nil
}

// waitForDriver waits until the driver of cnc.dat at path is active, up
// to timeout, as Java's Aeron client does: a missing or zero-version
// cnc.dat is a driver still starting and a stale heartbeat may be the
// previous driver's file about to be replaced. A version aeron-go does not
// read fails at once.
func waitForDriver(ctx context.Context, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := driverActive(path, timeout, time.Now())
		if err == nil {
			return nil
		}
		if !errors.Is(err, errDriverStarting) && !errors.Is(err, errDriverStale) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no media driver became ready within the media driver timeout %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitForDir waits up to timeout for the cluster directory, which the
// consensus module creates as it starts (its media driver may be ready
// before): aeron-go's container writes its mark file there at once.
func waitForDir(ctx context.Context, dir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		fi, err := os.Stat(dir)
		if err == nil && fi.IsDir() {
			return nil
		}
		if err == nil {
			return fmt.Errorf("cluster directory %s is not a directory", dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no cluster directory %s after %v", dir, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// watch checks, from Run's goroutine, that the media driver and the
// consensus module are still there.
type watch struct {
	cnc       string
	timeout   time.Duration
	clusterID int32

	reader  *counters.Reader // over cnc.dat, once mapped
	counter int32            // the commit-position counter, once seen
	regID   int64            // and its registration id

	handlerErr atomic.Pointer[error] // a fatal error aeron-go reported
}

// check returns why the service must stop, nil while all is well.
func (w *watch) check(now time.Time) error {
	if p := w.handlerErr.Load(); p != nil {
		return *p
	}
	if err := driverActive(w.cnc, w.timeout, now); err != nil {
		if errors.Is(err, errDriverStarting) {
			return fmt.Errorf("aeronhost: media driver lost: its %s is gone or incomplete (%w)", w.cnc, err)
		}
		return fmt.Errorf("aeronhost: media driver lost: %w", err)
	}
	if w.reader == nil {
		meta, _, err := counters.MapFile(w.cnc)
		if err != nil {
			return nil // the container maps it too and will fail
		}
		w.reader = counters.NewReader(meta.ValuesBuf.Get(), meta.MetaDataBuf.Get())
		w.counter = counters.NullCounterId
	}
	if w.counter == counters.NullCounterId {
		id := w.reader.FindCounter(commitPosCounterTypeID, func(key *aatomic.Buffer) bool {
			return key.GetInt32(0) == w.clusterID
		})
		if id != counters.NullCounterId {
			w.counter, w.regID = id, w.reader.GetCounterRegistrationId(id)
		}
		return nil
	}
	if !w.reader.IsCounterAllocated(w.counter) || w.reader.GetCounterRegistrationId(w.counter) != w.regID {
		return fmt.Errorf("aeronhost: consensus module lost: its commit-position counter %d (cluster id %d) was freed",
			w.counter, w.clusterID)
	}
	return nil
}

// recoveryTermID returns a reader of the leadership term in the consensus
// module's recovery-state counter for clusterID in cnc (the term of the
// snapshot it recovers from, -1 with none). The container reads the same
// counter before OnStart; the consensus module keeps it until the
// service's ack, after OnStart. It maps cnc itself on first use, on the
// goroutine that calls it.
func recoveryTermID(cnc string, clusterID int32) func() (int64, bool) {
	var reader *counters.Reader
	return func() (int64, bool) {
		if reader == nil {
			meta, _, err := counters.MapFile(cnc)
			if err != nil {
				return 0, false
			}
			reader = counters.NewReader(meta.ValuesBuf.Get(), meta.MetaDataBuf.Get())
		}
		var term int64
		id := reader.FindCounter(recoveryStateCounterTypeID, func(key *aatomic.Buffer) bool {
			if key.GetInt32(24) != clusterID {
				return false
			}
			term = key.GetInt64(0)
			return true
		})
		return term, id != counters.NullCounterId
	}
}

// fatalAeronError says whether an error aeron-go's client conductor
// reported ends that client: its conductor stops on a driver keepalive
// timeout, on the driver timing the client out, on a stale client
// heartbeat counter, on a stall between its duty cycles and on a panic.
func fatalAeronError(err error) bool {
	msg := err.Error()
	for _, s := range []string{
		"MediaDriver keepalive",
		"OnClientTimeout",
		"client heartbeat timestamp not active",
		"timeout between service calls",
		"Panic:",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// errorHandler is the aeron context's error handler: it hands every error
// to next and keeps the first fatal one for check.
func (w *watch) errorHandler(next func(error)) func(error) {
	return func(err error) {
		if err == nil {
			return
		}
		if next != nil {
			next(err)
		}
		if fatalAeronError(err) {
			e := fmt.Errorf("aeronhost: aeron client stopped: %w", err)
			w.handlerErr.CompareAndSwap(nil, &e)
		}
	}
}
