package aeronhost

import (
	"context"
	"errors"
	"fmt"
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
	// (0: aeron-go's default, 5 s).
	MediaDriverTimeout time.Duration
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
// reachable over the container's IPC archive control channels. Run fails
// at once when there is no media driver in AeronDir; with a driver but no
// consensus module it waits (for the module's commit-position counter)
// until ctx is done.
//
// It returns the service's first error, an error for an aeron-go failure
// (aeron-go panics on several conditions; Run recovers them on its
// goroutine), ctx's error when cancelled, or nil once the consensus module
// has terminated the service. The aeron-go client is never closed
// (aeron-go's agent has no Close): exit the process after Run returns.
func Run(ctx context.Context, opts Options, svc cluster.Service) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if svc == nil {
		return errors.New("aeronhost: nil service")
	}
	var copts acluster.Options
	if opts.Container != nil {
		copts = *opts.Container
	} else {
		copts = *acluster.NewOptions()
	}
	if copts.ArchiveOptions == nil {
		return errors.New("aeronhost: Options.Container has no ArchiveOptions")
	}
	copts.AppVersion = opts.AppVersion
	if copts.IdleStrategy == nil {
		copts.IdleStrategy = idlestrategy.NewDefaultBackoffIdleStrategy()
	}
	opts.Container = &copts
	a := New(svc, opts)
	idler := &stopIdler{inner: copts.IdleStrategy, a: a}
	copts.IdleStrategy = idler

	actx := aeron.NewContext()
	if opts.AeronDir != "" {
		actx.AeronDir(opts.AeronDir)
	}
	if opts.MediaDriverTimeout > 0 {
		actx.MediaDriverTimeout(opts.MediaDriverTimeout)
	}
	agent, err := newAgent(actx, &copts, a)
	if err != nil {
		return fmt.Errorf("aeronhost: starting the clustered service container (media driver CnC file %q): %w", actx.CncFileName(), err)
	}

	return a.runAgent(ctx, agent, idler)
}

// containerAgent is the part of aeron-go's ClusteredServiceAgent Run
// drives.
type containerAgent interface {
	OnStart() error
	DoWork() int
}

// runAgent runs agent on a goroutine of its own until the service
// terminates or fails, or ctx is done.
func (a *Adapter) runAgent(ctx context.Context, agent containerAgent, idler *stopIdler) error {
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

	var runErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		a.Stop()
		runErr = <-done
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
