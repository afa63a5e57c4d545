package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/server"
)

// nodeFlags are the flags of `matchlog node`.
type nodeFlags struct {
	dir            string
	listen         string
	sync           intList
	mode           modeList
	everyBytes     int64
	onExit         bool
	sessionTimeout time.Duration
}

// parseNodeFlags parses and checks `matchlog node`'s flags into server
// options.
func parseNodeFlags(args []string, stderr io.Writer) (server.Options, error) {
	f := nodeFlags{listen: server.DefaultAddr, sync: intList{1}, mode: modeList{"pauseless"}, sessionTimeout: server.DefaultSessionTimeout}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", "", "node directory holding cluster/ and archive/ (required; created on a first start)")
	fs.StringVar(&f.listen, "listen", f.listen, "TCP listen address, a loopback host (port 0: any free port)")
	fs.Var(&f.sync, "sync", syncFlagHelp+"; one value here")
	fs.Var(&f.mode, "snapshot-mode", snapshotModeFlagHelp+"; one value here")
	fs.Int64Var(&f.everyBytes, "snapshot-every-bytes", 0, "take a snapshot every N bytes of log (0: only on request or exit)")
	fs.BoolVar(&f.onExit, "snapshot-on-exit", false, "take a snapshot before exiting on SIGINT/SIGTERM")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", f.sessionTimeout, "close a session whose client sent nothing for this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog node --dir D [--listen ADDR] [flags]\n\n"+
			"Runs a node with the matching engine, serving clients over TCP until SIGINT or\n"+
			"SIGTERM; prints \"listening ADDR\" on stdout once it accepts connections.\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return server.Options{}, err
	}
	bad := func(format string, a ...any) (server.Options, error) {
		fmt.Fprintf(stderr, "node: "+format+"\n", a...)
		fs.Usage()
		return server.Options{}, errUsage
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
	syncLevel, err := f.sync.one("sync")
	if err != nil {
		return bad("%v", err)
	}
	if syncLevel < 0 || syncLevel > 2 {
		return bad("--sync %d: want 0, 1 or 2", syncLevel)
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
	return server.Options{
		Addr: f.listen,
		Node: cluster.Options{Dir: f.dir, FileSyncLevel: syncLevel, SnapshotMode: mode,
			SnapshotEveryBytes: f.everyBytes},
		SessionTimeout:     f.sessionTimeout,
		SnapshotOnShutdown: f.onExit,
	}, nil
}

// runNode implements `matchlog node`.
func runNode(args []string, stdout, stderr io.Writer) error {
	opts, err := parseNodeFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening %s\n", srv.Addr())
	if err := srv.Serve(ctx); err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "node: stopped after %d sessions (%d closed by timeout, %d for bad input, %d slow consumers)\n",
		st.Sessions, st.Timeouts, st.Malformed, st.SlowConsumers)
	return nil
}
