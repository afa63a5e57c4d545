package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lirm/aeron-go/aeron/idlestrategy"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/aeronhost"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/server/metrics"
)

// aeronNodeConfig is `matchlog aeron-node`'s command line.
type aeronNodeConfig struct {
	host        aeronhost.Options
	svc         enginesvc.Options
	metricsAddr string
	statusEvery time.Duration
	logger      *slog.Logger
}

// javaAeronDir is Java Aeron's default aeron.dir: /dev/shm/aeron-<user>
// where /dev/shm exists (Linux), else <tmp>/aeron-<user>.
func javaAeronDir() string {
	name := "default"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm/aeron-" + name
	}
	return strings.TrimSuffix(os.TempDir(), "/") + "/aeron-" + name
}

// parseSemver parses MAJOR.MINOR.PATCH into Aeron's SemanticVersion
// (major<<16 | minor<<8 | patch, each 0..255).
func parseSemver(s string) (int32, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("want MAJOR.MINOR.PATCH")
	}
	var v int32
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 255 {
			return 0, fmt.Errorf("%q: each part must be 0..255", p)
		}
		v = v<<8 | int32(n)
	}
	return v, nil
}

// parseIdle parses an idle strategy: backoff (aeron-go's default
// backoff), yield, busy, or sleep:DURATION.
func parseIdle(s string) (idlestrategy.Idler, error) {
	switch s {
	case "backoff":
		return idlestrategy.NewDefaultBackoffIdleStrategy(), nil
	case "yield":
		return idlestrategy.Yielding{}, nil
	case "busy":
		return idlestrategy.Busy{}, nil
	}
	if d, ok := strings.CutPrefix(s, "sleep:"); ok {
		dur, err := time.ParseDuration(d)
		if err == nil && dur > 0 {
			return idlestrategy.Sleeping{SleepFor: dur}, nil
		}
	}
	return nil, fmt.Errorf("%q: want backoff, yield, busy or sleep:DURATION (e.g. sleep:1ms)", s)
}

func parseAeronNodeFlags(args []string, stderr io.Writer) (aeronNodeConfig, error) {
	def := acluster.NewOptions()
	var (
		aeronDir, clusterDir, appVersion                   string
		serviceID, clusterID                               int
		controlChannel, snapshotChannel, replayChannel     string
		cmStream, serviceStream, snapshotStream, replayStr int
		archReq, archResp                                  string
		archReqStream, archRespStream                      int
		idle, aeronIdle, archiveIdle                       string
		driverTimeout, statusEvery                         time.Duration
		workers                                            int
		metricsAddr, logFormat, logLevel                   string
	)
	fs := flag.NewFlagSet("aeron-node", flag.ContinueOnError)
	fs.StringVar(&aeronDir, "aeron-dir", "", "the media driver's directory, holding cnc.dat (aeron.dir; default: Java's, /dev/shm/aeron-<user> where /dev/shm exists)")
	fs.StringVar(&clusterDir, "cluster-dir", "aeron-cluster", "the consensus module's cluster directory (aeron.cluster.dir; Java's default)")
	fs.IntVar(&serviceID, "service-id", 0, "this service's id (aeron.cluster.service.id), 0..127")
	fs.IntVar(&clusterID, "cluster-id", 0, "the cluster's id (aeron.cluster.id)")
	fs.StringVar(&appVersion, "app-version", "0.0.1", "application version, MAJOR.MINOR.PATCH: the consensus module's (Java's declares 0.0.1 and has no property to change it; the major versions must agree)")
	fs.StringVar(&controlChannel, "control-channel", def.ControlChannel, "service control channel (aeron.cluster.service.control.channel)")
	fs.IntVar(&cmStream, "consensus-module-stream-id", int(def.ConsensusModuleStreamId), "stream id to the consensus module (aeron.cluster.consensus.module.stream.id)")
	fs.IntVar(&serviceStream, "service-stream-id", int(def.ServiceStreamId), "stream id from the consensus module (aeron.cluster.service.stream.id)")
	fs.StringVar(&snapshotChannel, "snapshot-channel", def.SnapshotChannel, "snapshot recording channel (aeron.cluster.snapshot.channel; an mtu parameter sets the snapshot message size)")
	fs.IntVar(&snapshotStream, "snapshot-stream-id", int(def.SnapshotStreamId), "snapshot stream id (aeron.cluster.snapshot.stream.id)")
	fs.StringVar(&replayChannel, "replay-channel", def.ReplayChannel, "snapshot replay channel at start (aeron.cluster.replay.channel)")
	fs.IntVar(&replayStr, "replay-stream-id", int(def.ReplayStreamId), "snapshot replay stream id (aeron.cluster.replay.stream.id)")
	fs.StringVar(&archReq, "archive-control-channel", def.ArchiveOptions.RequestChannel, "the archive's local control request channel, IPC (aeron.archive.local.control.channel)")
	fs.IntVar(&archReqStream, "archive-control-stream-id", int(def.ArchiveOptions.RequestStream), "archive control request stream id (aeron.archive.local.control.stream.id)")
	fs.StringVar(&archResp, "archive-response-channel", def.ArchiveOptions.ResponseChannel, "archive control response channel, IPC")
	fs.IntVar(&archRespStream, "archive-response-stream-id", int(def.ArchiveOptions.ResponseStream), "archive control response stream id")
	fs.StringVar(&idle, "idle", "backoff", "the container's idle strategy: backoff, yield, busy or sleep:DURATION")
	fs.StringVar(&aeronIdle, "aeron-idle", "sleep:1ms", "the Aeron client's idle strategy: its conductor's, and its waits for the driver, also in each snapshot's archive connection (same forms; aeron-go's own default, sleep:4ms, paces each of those waits)")
	fs.StringVar(&archiveIdle, "archive-idle", "sleep:1ms", "the archive client's idle strategy, which paces each snapshot's archive connection (same forms; aeron-go's own default, sleep:50ms, adds hundreds of ms to each snapshot)")
	fs.DurationVar(&driverTimeout, "media-driver-timeout", 10*time.Second, "how long to wait for the media driver at start, and how stale its heartbeat may get before the service exits (aeron.driver.timeout; Java's default)")
	fs.DurationVar(&statusEvery, "status-every", 10*time.Second, "log a status line (role, log position, state hash) this often (0: never)")
	fs.IntVar(&workers, "workers", 0, workersFlagHelp)
	fs.StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, a loopback host (port 0: any free port; default: none)")
	fs.StringVar(&logFormat, "log-format", "text", "log on stderr: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "lowest level logged: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog aeron-node [--aeron-dir D] [--cluster-dir D] [flags]\n\n"+
			"Runs the matching engine as a service of a real Aeron Cluster member, in aeron-go's\n"+
			"clustered service container, against the member's running Aeron media driver,\n"+
			"archive and consensus module (Java's io.aeron.cluster.ClusteredMediaDriver, with\n"+
			"aeron.cluster.service.count 1). The defaults are Aeron's. It waits for the media\n"+
			"driver up to --media-driver-timeout, then logs on stderr (log/slog): \"started\"\n"+
			"(role, log position, engine state hash, after the snapshot restore), \"role\",\n"+
			"\"snapshot\" (position, state hash, the take, gap_before: the time since the\n"+
			"previous callback, mostly aeron-go's archive connection), \"after snapshot\" (gap:\n"+
			"the time to the next callback, mostly aeron-go's teardown and ack), \"status\" every\n"+
			"--status-every, and \"terminated\" or \"stopped\" with the final state hash. With\n"+
			"--metrics it prints \"metrics http://ADDR/metrics\" on stdout and serves matchlog\n"+
			"node's metrics that apply to a hosted service.\n\n"+
			"It runs until SIGINT/SIGTERM (exit 0) or until the consensus module terminates\n"+
			"the service (exit 0); it exits 1 when the media driver or consensus module goes\n"+
			"away (no driver heartbeat for --media-driver-timeout, the commit-position counter\n"+
			"freed) or the service fails. Supervise it together with the member's JVM: killing\n"+
			"only this process makes the consensus module terminate; after a kill -9 the\n"+
			"member can restart only about 10 s later (Aeron's mark files).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return aeronNodeConfig{}, err
	}
	bad := usageErr(fs, stderr, "aeron-node")
	fail := func(format string, a ...any) (aeronNodeConfig, error) { return aeronNodeConfig{}, bad(format, a...) }
	if aeronDir == "" {
		aeronDir = javaAeronDir()
	}
	if clusterDir == "" {
		return fail("--cluster-dir must not be empty")
	}
	av, err := parseSemver(appVersion)
	if err != nil {
		return fail("--app-version %q: %v", appVersion, err)
	}
	if serviceID < 0 || serviceID > 127 {
		return fail("--service-id %d: want 0..127", serviceID)
	}
	for name, v := range map[string]int{"--cluster-id": clusterID, "--consensus-module-stream-id": cmStream,
		"--service-stream-id": serviceStream, "--snapshot-stream-id": snapshotStream, "--replay-stream-id": replayStr,
		"--archive-control-stream-id": archReqStream, "--archive-response-stream-id": archRespStream} {
		if int64(v) != int64(int32(v)) {
			return fail("%s %d: out of the int32 range", name, v)
		}
	}
	if !strings.HasPrefix(archReq, "aeron:ipc") || !strings.HasPrefix(archResp, "aeron:ipc") {
		return fail("--archive-control-channel and --archive-response-channel must be IPC channels (aeron:ipc...): aeron-go requires it")
	}
	var cIdle, aIdle, arIdle idlestrategy.Idler
	for _, x := range []struct {
		name, val string
		dst       *idlestrategy.Idler
	}{{"--idle", idle, &cIdle}, {"--aeron-idle", aeronIdle, &aIdle}, {"--archive-idle", archiveIdle, &arIdle}} {
		is, err := parseIdle(x.val)
		if err != nil {
			return fail("%s %v", x.name, err)
		}
		*x.dst = is
	}
	if driverTimeout <= 0 {
		return fail("--media-driver-timeout must be positive")
	}
	if statusEvery < 0 {
		return fail("--status-every must not be negative")
	}
	if err := checkWorkers(workers); err != nil {
		return fail("%v", err)
	}
	if metricsAddr != "" {
		if err := checkLoopback(metricsAddr); err != nil {
			return fail("--metrics %q: %v", metricsAddr, err)
		}
	}
	logger, err := newLogger(stderr, logFormat, logLevel)
	if err != nil {
		return fail("%v", err)
	}

	c := acluster.NewOptions()
	c.ClusterDir = clusterDir
	c.ClusterId = int32(clusterID)
	c.ServiceId = int32(serviceID)
	c.ControlChannel = controlChannel
	c.ConsensusModuleStreamId = int32(cmStream)
	c.ServiceStreamId = int32(serviceStream)
	c.SnapshotChannel = snapshotChannel
	c.SnapshotStreamId = int32(snapshotStream)
	c.ReplayChannel = replayChannel
	c.ReplayStreamId = int32(replayStr)
	c.ArchiveOptions.RequestChannel = archReq
	c.ArchiveOptions.RequestStream = int32(archReqStream)
	c.ArchiveOptions.ResponseChannel = archResp
	c.ArchiveOptions.ResponseStream = int32(archRespStream)
	c.IdleStrategy = cIdle
	return aeronNodeConfig{
		host: aeronhost.Options{
			AeronDir:            aeronDir,
			MediaDriverTimeout:  driverTimeout,
			Container:           c,
			AppVersion:          av,
			IdleStrategy:        aIdle,
			ArchiveIdleStrategy: arIdle,
			ErrorHandler:        func(err error) { logger.Warn("aeron client error", "err", err) },
		},
		svc:         enginesvc.Options{Workers: workers, AppVersion: av},
		metricsAddr: metricsAddr,
		statusEvery: statusEvery,
		logger:      logger,
	}, nil
}

// runAeronNode implements `matchlog aeron-node`.
func runAeronNode(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseAeronNodeFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := cfg.logger
	hs := newHostedService(enginesvc.New(cfg.svc), log)
	hs.inner = cfg.host.Container.IdleStrategy
	cfg.host.Container.IdleStrategy = hs
	var adapter atomic.Pointer[aeronhost.Adapter]
	cfg.host.OnAdapter = func(a *aeronhost.Adapter) { adapter.Store(a) }

	if cfg.metricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics %s: %w", cfg.metricsAddr, err)
		}
		defer mln.Close()
		m := metrics.New(metrics.Options{Runtime: true})
		m.AttachHosted(func(ctx context.Context) (metrics.HostedStats, error) {
			st, err := hs.stats(ctx)
			if a := adapter.Load(); a != nil {
				st.EgressDropped = a.EgressDropped()
			}
			return st, err
		})
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(mln)
		defer srv.Close()
		log.Info("metrics", "addr", mln.Addr().String(), "path", "/metrics")
		fmt.Fprintf(stdout, "metrics http://%s/metrics\n", mln.Addr())
	}
	if cfg.statusEvery > 0 {
		done := make(chan struct{})
		defer close(done)
		go hs.statusLoop(done, cfg.statusEvery)
	}
	c := cfg.host.Container
	log.Info("starting", "aeron_dir", cfg.host.AeronDir, "cluster_dir", c.ClusterDir, "cluster_id", c.ClusterId,
		"service_id", c.ServiceId, "app_version", semverString(cfg.host.AppVersion),
		"media_driver_timeout", cfg.host.MediaDriverTimeout.String())
	err = aeronhost.Run(ctx, cfg.host, hs)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		log.Info("stopped", "signal", true, "log_position", hs.position.Load(), "state_hash", hs.hashNow())
		return nil
	}
	if err != nil {
		log.Error("failed", "err", err)
		return err
	}
	return nil
}

func semverString(v int32) string {
	return fmt.Sprintf("%d.%d.%d", v>>16&0xff, v>>8&0xff, v&0xff)
}

// hostedService wraps the engine service for aeron-node: it logs the
// lifecycle and keeps the figures of the status lines and metrics. It is
// also the container's idle strategy (wrapping the configured one): when
// the container idles outside the service's callbacks it runs the
// requests of other goroutines (status, metrics) on the container's
// goroutine, where the engine may be read.
type hostedService struct {
	svc   *enginesvc.Service
	log   *slog.Logger
	inner idlestrategy.Idler

	inCallback int
	started    bool
	c          cluster.Cluster
	reqs       chan func()

	// lastReturn is when the last callback returned; snapEnd, when the
	// last snapshot's take returned (zero once reported): the time
	// aeron-go spends before a take (its archive connection, the
	// recorded publication) and after it (closing them, then the ack)
	// is the gap to the callbacks around it, under traffic.
	lastReturn time.Time
	snapEnd    time.Time

	mu       sync.Mutex // guards last (the figures a callback published)
	last     metrics.HostedStats
	position atomic.Int64
	finished atomic.Bool
	final    atomic.Uint64
}

func newHostedService(svc *enginesvc.Service, log *slog.Logger) *hostedService {
	h := &hostedService{svc: svc, log: log, reqs: make(chan func(), 4)}
	h.position.Store(-1)
	return h
}

var _ cluster.Service = (*hostedService)(nil)

// Idle implements aeron-go's idlestrategy.Idler.
func (h *hostedService) Idle(n int) {
	if h.inCallback == 0 && h.started {
		for {
			select {
			case f := <-h.reqs:
				f()
				continue
			default:
			}
			break
		}
	}
	h.inner.Idle(n)
}

// inspect runs f on the container's goroutine at its next idle.
func (h *hostedService) inspect(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case h.reqs <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hostedService) hashNow() string {
	if h.finished.Load() {
		return fmt.Sprintf("%016x", h.final.Load())
	}
	return "unknown"
}

// stats reads the service's figures on the container's goroutine.
func (h *hostedService) stats(ctx context.Context) (metrics.HostedStats, error) {
	var st metrics.HostedStats
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := h.inspect(ctx, func() {
		h.mu.Lock()
		st = h.last
		h.mu.Unlock()
		st.Up = true
		st.LogPosition = h.c.LogPosition()
		st.Role = h.c.Role().String()
		st.StateHash = h.svc.Engine().StateHash()
		st.Engine.Duplicates = h.svc.Duplicates
		st.Engine.Undecodable = h.svc.Skipped
		st.Engine.Rejected = map[int]int64{}
		for r, n := range h.svc.Rejected {
			if n != 0 {
				st.Engine.Rejected[r] = n
			}
		}
	})
	return st, err
}

func (h *hostedService) statusLoop(done <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		st, err := h.stats(context.Background())
		if err != nil {
			continue // the container is busy or not started
		}
		h.log.Info("status", "role", st.Role, "log_position", st.LogPosition, "state_hash", fmt.Sprintf("%016x", st.StateHash),
			"applied", st.Applied, "snapshots", st.Snapshots)
	}
}

func (h *hostedService) enter() {
	h.inCallback++
	if !h.snapEnd.IsZero() && h.inCallback == 1 {
		h.log.Info("after snapshot", "gap", time.Since(h.snapEnd).String())
		h.snapEnd = time.Time{}
	}
}

func (h *hostedService) leave() {
	h.inCallback--
	h.lastReturn = time.Now()
}

// OnStart implements cluster.Service.
func (h *hostedService) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	h.enter()
	defer h.leave()
	start := time.Now()
	if err := h.svc.OnStart(c, img); err != nil {
		return err
	}
	h.c, h.started = c, true
	h.position.Store(c.LogPosition())
	h.log.Info("started", "role", c.Role().String(), "log_position", c.LogPosition(),
		"leadership_term_id", c.LeadershipTermID(), "restored", img != nil,
		"state_hash", fmt.Sprintf("%016x", h.svc.Engine().StateHash()), "restore", time.Since(start).String())
	return nil
}

// OnSessionOpen implements cluster.Service.
func (h *hostedService) OnSessionOpen(s *cluster.ClientSession, ts int64) error {
	h.enter()
	defer h.leave()
	h.log.Debug("session open", "session", s.ID)
	return h.svc.OnSessionOpen(s, ts)
}

// OnSessionClose implements cluster.Service.
func (h *hostedService) OnSessionClose(s *cluster.ClientSession, ts int64, r cluster.CloseReason) error {
	h.enter()
	defer h.leave()
	h.log.Debug("session close", "session", s.ID)
	return h.svc.OnSessionClose(s, ts, r)
}

// OnSessionMessage implements cluster.Service.
func (h *hostedService) OnSessionMessage(s *cluster.ClientSession, ts int64, msg []byte, pos int64) error {
	h.enter()
	err := h.svc.OnSessionMessage(s, ts, msg, pos)
	h.leave()
	h.position.Store(pos)
	h.mu.Lock()
	h.last.Applied++
	h.mu.Unlock()
	return err
}

// OnTimerEvent implements cluster.Service.
func (h *hostedService) OnTimerEvent(id, ts int64) error {
	h.enter()
	defer h.leave()
	return h.svc.OnTimerEvent(id, ts)
}

// OnTakeSnapshot implements cluster.Service.
func (h *hostedService) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	start := time.Now()
	before := start.Sub(h.lastReturn)
	h.enter()
	defer h.leave()
	err := h.svc.OnTakeSnapshot(info, pub, idle)
	took := time.Since(start)
	if err != nil {
		return err
	}
	defer func() { h.snapEnd = time.Now() }()
	h.mu.Lock()
	h.last.Snapshots++
	h.last.SnapshotPosition = info.LogPosition
	h.last.LastSnapshotTake = took
	h.mu.Unlock()
	h.log.Info("snapshot", "log_position", info.LogPosition, "leadership_term_id", info.LeadershipTermID,
		"state_hash", fmt.Sprintf("%016x", h.svc.Engine().StateHash()), "take", took.String(), "gap_before", before.String())
	return nil
}

// OnRoleChange implements cluster.Service.
func (h *hostedService) OnRoleChange(r cluster.Role) error {
	h.enter()
	defer h.leave()
	h.log.Info("role", "role", r.String())
	return h.svc.OnRoleChange(r)
}

// OnTerminate implements cluster.Service.
func (h *hostedService) OnTerminate(c cluster.Cluster) error {
	h.enter()
	defer h.leave()
	if h.started {
		hash := h.svc.Engine().StateHash()
		h.final.Store(hash)
		h.finished.Store(true)
		h.position.Store(h.c.LogPosition())
		h.log.Info("terminated", "log_position", h.c.LogPosition(), "state_hash", fmt.Sprintf("%016x", hash))
	}
	return h.svc.OnTerminate(c)
}
