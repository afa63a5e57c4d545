package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/server/metrics"
)

// nodeFlags are the flags of `matchlog node`.
type nodeFlags struct {
	dir            string
	listen         string
	sync           intList
	mode           modeList
	everyBytes     int64
	onExit         bool
	workers        int
	sessionTimeout time.Duration
	metrics        string
	logFormat      string
	logLevel       string
	segmentLength  int64
	// automatic retention
	retInterval time.Duration
	retMaxAge   time.Duration
	retMaxBytes int64
	retMinFree  uint64
	keep        int
	delay       time.Duration
	force       bool
	// storage gate
	storageReserve int64
}

// nodeConfig is `matchlog node`'s command line: the server's options
// (with the logger) and the metrics address ("" for none).
type nodeConfig struct {
	server.Options
	metricsAddr string
	// logJSON: stderr carries JSON lines only (--log-format json).
	logJSON bool
}

// parseNodeFlags parses and checks `matchlog node`'s flags into server
// options; the logger it sets writes to stderr.
func parseNodeFlags(args []string, stderr io.Writer) (nodeConfig, error) {
	f := nodeFlags{listen: server.DefaultAddr, sync: intList{1}, mode: modeList{"pauseless"}, sessionTimeout: server.DefaultSessionTimeout}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", "", "node directory holding cluster/ and archive/ (required; created on a first start)")
	fs.StringVar(&f.listen, "listen", f.listen, "TCP listen address, a loopback host (port 0: any free port)")
	fs.Var(&f.sync, "sync", syncFlagHelp+"; one value here")
	fs.Var(&f.mode, "snapshot-mode", snapshotModeFlagHelp+"; one value here")
	fs.Int64Var(&f.everyBytes, "snapshot-every-bytes", 0, "take a snapshot every N bytes of log (0: only on request or exit)")
	fs.BoolVar(&f.onExit, "snapshot-on-exit", false, "take a snapshot before exiting on SIGINT/SIGTERM")
	fs.IntVar(&f.workers, "workers", 0, workersFlagHelp)
	fs.DurationVar(&f.sessionTimeout, "session-timeout", f.sessionTimeout, "close a session whose client sent nothing for this long")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, a loopback host (port 0: any free port; default: none)")
	fs.StringVar(&f.logFormat, "log-format", "text", "lifecycle log on stderr: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "lowest level logged: debug, info, warn or error")
	fs.Int64Var(&f.segmentLength, "segment-length", 0, "archive segment file length of a new node's log: a power of two, 64 KiB to 1 GiB (default 128 MiB; an existing log keeps its own)")
	fs.DurationVar(&f.retInterval, "retention-interval", 0, "automatic retention: how often the rules are checked (default 5m; also when the log enters a new segment and after each snapshot)")
	fs.DurationVar(&f.retMaxAge, "retention-max-age", 0, "automatic retention: propose the log segments whose newest entry is older than this (0: no age rule)")
	fs.Int64Var(&f.retMaxBytes, "retention-max-bytes", 0, "automatic retention: budget of the archive directory in bytes; propose the oldest log segments until it is met (0: no size rule)")
	fs.Uint64Var(&f.retMinFree, "retention-min-free-bytes", 0, "automatic retention: propose the oldest log segments while the disk has less free than this (0: no free-disk rule)")
	fs.IntVar(&f.keep, "keep", 0, "automatic retention: complete snapshot generations to keep; older ones are deleted whole and the log is never cut past the oldest kept (default 2 once a --retention rule is given; giving it alone turns on the deletion of older generations)")
	fs.DurationVar(&f.delay, "delay", archive.DefaultDeleteDelay, "automatic retention: delay between renaming a file *.deleted and unlinking it; 0 unlinks at once")
	fs.BoolVar(&f.force, "force", false, "start even when the directory's restart-vs-rebuild verdict is not normal-restart or full-replay (logged as a WARNING)")
	fs.Int64Var(&f.storageReserve, "storage-reserve", 0, "free bytes the archive's volume must keep for the node to take commands; below it each command is answered Rejected storage_full until space returns (0: one log segment plus twice the last snapshot; -1: no check)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog node --dir D [--listen ADDR] [flags]\n\n"+
			"Runs a node with the matching engine, serving clients over TCP until SIGINT or\n"+
			"SIGTERM; prints \"listening ADDR\" on stdout once it accepts connections (and\n"+
			"\"metrics http://ADDR/metrics\" with --metrics). Lifecycle events (open, recovery\n"+
			"plan, snapshots, sessions, refusals, shutdown) are logged on stderr.\n\n"+
			"Automatic retention (off unless a --retention-* rule or --keep is given): the\n"+
			"rules propose a new start for the log; it is approved only when rounded down to a\n"+
			"segment boundary, not past C (the greatest boundary <= the oldest kept snapshot\n"+
			"generation's position) and not into the segment being written; the node then\n"+
			"detaches, validates its recovery plan and deletes in two phases while it runs.\n"+
			"Each proposal, approval and refusal is logged (\"retention ...\") and counted\n"+
			"(matchlog_retention_* with --metrics).\n\n"+
			"Before it opens D the node computes D's restart-vs-rebuild verdict (as\n"+
			"'matchlog retention verdict --member 0=D') and starts only on normal-restart\n"+
			"or full-replay, or on a first start (no TERM entry in recording.log and no\n"+
			"recorded log in the archive); any other verdict exits 1 naming the verdict,\n"+
			"its reasons and the command that applies. --force starts anyway.\n\n"+
			"A full disk: while the archive volume has less free than --storage-reserve the\n"+
			"node refuses commands (Rejected, reason storage_full; logged \"storage full\" with\n"+
			"the path and the bytes needed) and takes them again by itself once space\n"+
			"returns. A write that still fails (ENOSPC, EIO) or a failed sync stops the node\n"+
			"with the error; restart it once the disk is fixed.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return nodeConfig{}, err
	}
	bad := func(format string, a ...any) (nodeConfig, error) {
		fmt.Fprintf(stderr, "node: "+format+"\n", a...)
		fs.Usage()
		return nodeConfig{}, errUsage
	}
	if f.dir == "" {
		return bad("--dir is required")
	}
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return bad("--listen %q: %v", f.listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return bad("--listen %q: the host must be a loopback address (the server has no authentication)", f.listen)
	}
	n, err := f.sync.one("sync")
	if err != nil {
		return bad("%v", err)
	}
	syncLevel := archive.SyncLevel(n)
	if syncLevel.Check() != nil {
		return bad("--sync %d: want 0, 1 or 2", n)
	}
	modeName, err := f.mode.one()
	if err != nil {
		return bad("%v", err)
	}
	mode := cluster.Pauseless
	if modeName == "stw" {
		mode = cluster.StopTheWorld
	}
	if f.everyBytes < 0 {
		return bad("--snapshot-every-bytes must not be negative")
	}
	if f.sessionTimeout <= 0 {
		return bad("--session-timeout must be positive")
	}
	if err := checkWorkers(f.workers); err != nil {
		return bad("%v", err)
	}
	termLength := 0
	if f.segmentLength != 0 {
		if f.segmentLength < archive.MinSegmentLength || f.segmentLength > archive.MaxSegmentLength || f.segmentLength&(f.segmentLength-1) != 0 {
			return bad("--segment-length %d: want a power of two from %d to %d", f.segmentLength, archive.MinSegmentLength, archive.MaxSegmentLength)
		}
		// The log's term length must not exceed its segment length.
		termLength = int(min(f.segmentLength, 16<<20))
	}
	if f.storageReserve < -1 {
		return bad("--storage-reserve %d: give a number of bytes, 0 for the default or -1 for no check", f.storageReserve)
	}
	if f.retInterval < 0 || f.retMaxAge < 0 || f.retMaxBytes < 0 || f.keep < 0 || f.delay < 0 {
		return bad("--retention-interval, --retention-max-age, --retention-max-bytes, --keep and --delay must not be negative")
	}
	ret := cluster.RetentionOptions{CheckInterval: f.retInterval, MaxAge: f.retMaxAge, MaxBytes: f.retMaxBytes, MinFreeBytes: f.retMinFree,
		Keep: f.keep, DeleteDelay: f.delay}
	if f.delay == 0 {
		ret.DeleteDelay = -1 // unlink at once
	}
	if f.metrics != "" {
		if err := checkLoopback(f.metrics); err != nil {
			return bad("--metrics %q: %v", f.metrics, err)
		}
	}
	logger, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return bad("%v", err)
	}
	return nodeConfig{Options: server.Options{
		Addr: f.listen,
		Node: cluster.Options{Dir: f.dir, FileSyncLevel: syncLevel, SnapshotMode: mode,
			SnapshotEveryBytes: f.everyBytes, SegmentLength: int32(f.segmentLength), TermLength: termLength, Retention: ret,
			StartGate: startGate(f.force, logger), StorageReserve: f.storageReserve},
		Service:            enginesvc.Options{Workers: f.workers},
		SessionTimeout:     f.sessionTimeout,
		SnapshotOnShutdown: f.onExit,
		Logger:             logger,
	}, metricsAddr: f.metrics, logJSON: f.logFormat == "json"}, nil
}

// checkLoopback checks that addr is host:port with a loopback host (an
// IP address or localhost): what the node serves has no authentication.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("the host must be a loopback address (the server has no authentication)")
	}
	return nil
}

// newLogger is the lifecycle logger of --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	switch level {
	case "debug":
		lv = slog.LevelDebug
	case "info":
		lv = slog.LevelInfo
	case "warn":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	ho := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// runNode implements `matchlog node`.
func runNode(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseNodeFlags(args, stderr)
	if err != nil {
		return err
	}
	opts := cfg.Options
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The metrics address is bound before the node directory is touched:
	// an unusable one fails before any work.
	var mln net.Listener
	var m *metrics.Metrics
	if cfg.metricsAddr != "" {
		if mln, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			return fmt.Errorf("--metrics %s: %w", cfg.metricsAddr, err)
		}
		defer mln.Close()
		m = metrics.New(metrics.Options{Runtime: true})
		m.Instrument(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening %s\n", srv.Addr())
	if m != nil {
		m.Attach(srv)
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(mln)
		defer hs.Close()
		opts.Logger.Info("metrics", "addr", mln.Addr().String(), "path", "/metrics")
		fmt.Fprintf(stdout, "metrics http://%s/metrics\n", mln.Addr())
	}
	if err := srv.Serve(ctx); err != nil {
		return err
	}
	if cfg.logJSON {
		return nil // the "stopped" record says it
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "node: stopped after %d sessions (%d closed by timeout, %d for bad input, %d slow consumers)\n",
		st.Sessions, st.Timeouts, st.Malformed, st.SlowConsumers)
	return nil
}
