package aeronhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/idlestrategy"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/matchlog/matchlog/cluster"
)

// Options configure the host.
type Options struct {
	// AeronDir is the media driver's directory (aeron.dir), where its
	// cnc.dat is. Empty: aeron-go's default, <os.TempDir()>/aeron-<user>
	// (the Java driver's default on Linux is /dev/shm/aeron-<user>: set
	// it).
	AeronDir string
	// MediaDriverTimeout bounds aeron-go's waits on the media driver
	// (0: aeron-go's default, DefaultMediaDriverTimeout). Run waits up
	// to it for the driver to be ready, and returns an error once the
	// driver's heartbeat is older than it.
	MediaDriverTimeout time.Duration
	// IdleStrategy is the aeron context's idle strategy: that of the
	// client conductor's goroutine and of the client's waits for the
	// driver (adding a publication or subscription, also for each
	// snapshot's archive connection, which aeron-go opens on a new Aeron
	// client each time). Nil: DefaultAeronIdle (aeron-go's own default,
	// a 4 ms sleep, paces each of those waits).
	IdleStrategy idlestrategy.Idler
	// ErrorHandler receives every error aeron-go's Aeron clients report
	// (the container's and the archive connections'). Nil: each is
	// logged with log/slog at Warn. Whatever it does, Run returns an
	// error once one of them stops a client (a driver keepalive timeout,
	// the driver timing the client out).
	ErrorHandler func(error)
	// ArchiveIdleStrategy is the archive client's idle strategy, which
	// paces every step of the archive connection aeron-go opens for each
	// snapshot and for the snapshot replay at start (connect, add the
	// recorded publication, await responses). Nil: DefaultArchiveIdle,
	// unless Container.ArchiveOptions sets one other than aeron-go's
	// default (a 50 ms sleep, which adds hundreds of milliseconds to
	// each snapshot).
	ArchiveIdleStrategy idlestrategy.Idler
	// OnAdapter, if set, is called once with the adapter Run hosts the
	// service in, before the container starts, so that the host can read
	// its stats (EgressDropped, Err) from any goroutine while Run runs.
	OnAdapter func(*Adapter)
	// Container is aeron-go's container configuration: cluster directory,
	// cluster and service ids, control channel and stream ids, snapshot
	// and replay channels, archive control channels. Nil:
	// aeron-go's NewOptions (the Java defaults). Run copies it, sets its
	// AppVersion, and wraps its IdleStrategy (nil: aeron-go's default
	// backoff) to be able to stop the container.
	Container *acluster.Options
	// AppVersion is the application version written into snapshots and
	// checked by the container against the log and snapshots (major
	// version only). It must be the service's (enginesvc.Options).
	AppVersion int32
	// SnapshotMaxPayloadLength is the longest message the service may
	// write into a snapshot: the snapshot publication's MTU less 32. 0: from
	// the snapshot channel's mtu parameter, else DefaultMTU. aeron-go does
	// not expose its publication's MTU; a value above it fails the
	// snapshot (aeron-go panics, which Run turns into an error).
	SnapshotMaxPayloadLength int
	// SnapshotImageTimeout, SnapshotConnectTimeout and EgressTimeout: see
	// the defaults of the same names.
	SnapshotImageTimeout   time.Duration
	SnapshotConnectTimeout time.Duration
	EgressTimeout          time.Duration
}

// DefaultMediaDriverTimeout is aeron-go's media driver timeout.
const DefaultMediaDriverTimeout = 5 * time.Second

// DefaultAeronIdle is the aeron context's idle strategy when
// Options.IdleStrategy is nil.
var DefaultAeronIdle idlestrategy.Idler = idlestrategy.Sleeping{SleepFor: time.Millisecond}

// DefaultArchiveIdle is the archive client's idle strategy when
// Options.ArchiveIdleStrategy is nil.
var DefaultArchiveIdle idlestrategy.Idler = idlestrategy.Sleeping{SleepFor: time.Millisecond}

// isAeronGoArchiveIdle says whether is is aeron-go's
// archive.DefaultOptions idle strategy, a 50 ms sleep.
func isAeronGoArchiveIdle(is idlestrategy.Idler) bool {
	s, ok := is.(idlestrategy.Sleeping)
	return ok && s.SleepFor == 50*time.Millisecond
}

func (o Options) withDefaults() Options {
	if o.SnapshotMaxPayloadLength <= 0 {
		mtu := DefaultMTU
		if o.Container != nil {
			if m, ok := channelMTU(o.Container.SnapshotChannel); ok {
				mtu = m
			}
		}
		o.SnapshotMaxPayloadLength = mtu - DataFrameHeaderLength
	}
	if o.SnapshotImageTimeout <= 0 {
		o.SnapshotImageTimeout = DefaultSnapshotImageTimeout
	}
	if o.SnapshotConnectTimeout <= 0 {
		o.SnapshotConnectTimeout = DefaultSnapshotConnectTimeout
	}
	if o.EgressTimeout <= 0 {
		o.EgressTimeout = DefaultEgressTimeout
	}
	return o
}

// channelMTU reads the mtu parameter of an Aeron channel URI
// ("aeron:ipc?alias=snapshot|mtu=8k").
func channelMTU(channel string) (int, bool) {
	_, params, ok := strings.Cut(channel, "?")
	if !ok {
		return 0, false
	}
	for _, kv := range strings.Split(params, "|") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != "mtu" {
			continue
		}
		v = strings.ToLower(strings.TrimSpace(v))
		mult := 1
		if strings.HasSuffix(v, "k") {
			mult, v = 1024, strings.TrimSuffix(v, "k")
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 64*1024 {
			return 0, false
		}
		n *= mult
		return n, n > DataFrameHeaderLength && n <= 64*1024
	}
	return 0, false
}

// stopIdler wraps the container's idle strategy. Outside our service's
// callbacks (in aeron-go's own waits: for the consensus module's counters,
// for images, for the archive) it ends the container goroutine once the
// host is stopping, as aeron-go's waits have no other way out.
type stopIdler struct {
	inner idlestrategy.Idler
	a     *Adapter
}

func (s *stopIdler) Idle(n int) {
	if s.a.inCallback == 0 && s.a.stopErr() != nil {
		runtime.Goexit()
	}
	s.inner.Idle(n)
}

// Run hosts svc in aeron-go's clustered service container until ctx is
// done, the consensus module terminates the service, or the service fails.
//
// The host must provide, before Run: an Aeron media driver whose directory
// is opts.AeronDir; the cluster's consensus module (Java) with the same
// cluster directory, cluster id, service count and control channel/stream
// ids as opts.Container; and the Aeron archive the consensus module uses,
// reachable over the container's IPC archive control channels. Run waits
// up to the media driver timeout for the driver to be ready (cnc.dat
// there, of a non-zero version, with a fresh driver heartbeat: a driver
// that is still starting) and fails after it; with a driver but no
// consensus module it waits (for the module's commit-position counter)
// until ctx is done.
//
// While it runs it watches the driver's heartbeat and the consensus
// module's commit-position counter: when the driver has not beaten for
// the media driver timeout, an aeron client reports a fatal error, or the
// counter is freed (the consensus module is gone), Run stops the
// container and returns an error, after at most exitGrace more if
// the container is stuck in aeron-go (the service's OnTerminate is then
// not called).
//
// It returns the service's first error, an error for an aeron-go failure
// (aeron-go panics on several conditions; Run recovers them on its
// goroutine), the driver or consensus module loss, ctx's error when
// cancelled, or nil once the consensus module has terminated the service.
// The aeron-go client is never closed (aeron-go's agent has no Close):
// exit the process after Run returns.
func Run(ctx context.Context, opts Options, svc cluster.Service) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if svc == nil {
		return errors.New("aeronhost: nil service")
	}
	copts, err := containerOptions(opts)
	if err != nil {
		return err
	}
	opts.Container = copts
	actx := aeron.NewContext()
	a := New(svc, opts)
	if opts.OnAdapter != nil {
		opts.OnAdapter(a)
	}
	idler := &stopIdler{inner: copts.IdleStrategy, a: a}
	copts.IdleStrategy = idler

	if opts.AeronDir != "" {
		actx.AeronDir(opts.AeronDir)
	}
	driverTimeout := opts.MediaDriverTimeout
	if driverTimeout <= 0 {
		driverTimeout = DefaultMediaDriverTimeout
	}
	actx.MediaDriverTimeout(driverTimeout)
	if opts.IdleStrategy != nil {
		actx.IdleStrategy(opts.IdleStrategy)
	} else {
		actx.IdleStrategy(DefaultAeronIdle)
	}
	w := &watch{cnc: actx.CncFileName(), timeout: driverTimeout, clusterID: copts.ClusterId}
	a.startTermID = recoveryTermID(w.cnc, copts.ClusterId)
	next := opts.ErrorHandler
	if next == nil {
		next = func(err error) { slog.Warn("aeron client error", "err", err) }
	}
	actx.ErrorHandler(w.errorHandler(next))

	if err := waitForDriver(ctx, w.cnc, driverTimeout); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("aeronhost: media driver CnC file %q: %w", actx.CncFileName(), err)
	}
	if err := waitForDir(ctx, copts.ClusterDir, driverTimeout); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("aeronhost: %w: the consensus module creates it at start (aeron.cluster.dir); Options.Container.ClusterDir must be its", err)
	}
	agent, err := newAgent(actx, copts, a)
	if err != nil {
		return fmt.Errorf("aeronhost: starting the clustered service container (media driver CnC file %q): %w", actx.CncFileName(), err)
	}

	return a.runAgent(ctx, agent, idler, w.check)
}

// containerOptions is the container configuration Run uses: a copy of
// opts.Container (or aeron-go's defaults) with its own copy of the archive
// options, the app version, and the default idle strategies.
func containerOptions(opts Options) (*acluster.Options, error) {
	var copts acluster.Options
	if opts.Container != nil {
		copts = *opts.Container
	} else {
		copts = *acluster.NewOptions()
	}
	if copts.ArchiveOptions == nil {
		return nil, errors.New("aeronhost: Options.Container has no ArchiveOptions")
	}
	archOpts := *copts.ArchiveOptions
	switch {
	case opts.ArchiveIdleStrategy != nil:
		archOpts.IdleStrategy = opts.ArchiveIdleStrategy
	case archOpts.IdleStrategy == nil || isAeronGoArchiveIdle(archOpts.IdleStrategy):
		archOpts.IdleStrategy = DefaultArchiveIdle
	}
	copts.ArchiveOptions = &archOpts
	copts.AppVersion = opts.AppVersion
	if copts.IdleStrategy == nil {
		copts.IdleStrategy = idlestrategy.NewDefaultBackoffIdleStrategy()
	}
	return &copts, nil
}

// containerAgent is the part of aeron-go's ClusteredServiceAgent Run
// drives.
type containerAgent interface {
	OnStart() error
	DoWork() int
}

// runAgent runs agent on a goroutine of its own until the service
// terminates or fails, ctx is done, or check (nil: none), called every
// watchInterval, returns an error.
func (a *Adapter) runAgent(ctx context.Context, agent containerAgent, idler *stopIdler, check func(time.Time) error) error {
	a.exit = runtime.Goexit
	done := make(chan error, 1)
	go func() {
		var err error
		normal := false
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("aeronhost: aeron-go container failed: %v", r)
			} else if !normal && err == nil && a.Err() == nil && !a.stop.Load() {
				err = errors.New("aeronhost: container goroutine ended")
			}
			done <- err
		}()
		if err = agent.OnStart(); err != nil {
			err = fmt.Errorf("aeronhost: container start: %w", err)
			return
		}
		for !a.terminated && a.stopErr() == nil {
			idler.inner.Idle(agent.DoWork())
		}
		normal = true
	}()

	var tick <-chan time.Time
	if check != nil {
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		tick = t.C
	}
	var runErr error
wait:
	for {
		select {
		case runErr = <-done:
			break wait
		case <-ctx.Done():
			a.Stop()
			runErr = <-done
			break wait
		case now := <-tick:
			lost := check(now)
			if lost == nil {
				continue
			}
			a.Stop()
			select {
			case <-done:
			case <-time.After(exitGrace):
				// Stuck in aeron-go: leave the goroutine (and the
				// service) as they are; the process should exit.
				return lost
			}
			a.exit = nil
			if !a.terminated && a.started {
				a.OnTerminate(nil)
			}
			return lost
		}
	}
	a.exit = nil
	if !a.terminated && a.started {
		a.OnTerminate(nil)
	}
	if err := a.Err(); err != nil && !(a.stop.Load() && errors.Is(err, ErrStopped)) {
		return err // a service stopped by the host is no failure
	}
	if runErr != nil {
		return runErr
	}
	if !a.terminated || a.stop.Load() {
		return ctx.Err()
	}
	return nil
}

// newAgent builds aeron-go's container, turning its panics into errors.
func newAgent(actx *aeron.Context, opts *acluster.Options, svc acluster.ClusteredService) (agent *acluster.ClusteredServiceAgent, err error) {
	defer func() {
		if r := recover(); r != nil {
			agent, err = nil, fmt.Errorf("aeron-go: %v", r)
		}
	}()
	return acluster.NewClusteredServiceAgent(actx, opts, svc)
}
