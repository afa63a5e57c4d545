// Package server runs a cluster node hosting the matching engine
// (cluster/enginesvc) behind a TCP listener: the node's ingress and egress
// for remote clients (see package client).
//
// # Protocol
//
// Every message travels in a frame: a 4-byte little-endian length, then one
// SBE message, header included, of at most wiresbe.MaxFrameLength bytes. A
// connection starts with a wiresbe Connect naming the client id, which is
// the Source of every command the client sends; the server opens a session
// in the log and answers Connected (session id, keepalive interval,
// session timeout, and the engine's high-water mark of the client id: the
// highest sequence it had applied from it). Then the client sends enginesbe commands (schema 7002,
// their Source must be the client id), Keepalives, SubscribeDepth and
// finally CloseSession. The server sends the events the engine released for
// the session's commands (enginesbe messages, including Duplicate for a
// command already applied), the depth of subscribed instruments, and at the
// end a SessionClosed with a code and a short reason, after which it closes
// the connection.
//
// Anything malformed — a length out of range, a truncated frame, an unknown
// schema or template, a message whose length disagrees with its header, a
// command before Connect, a command of another source — closes the
// connection (and its session, with reason SERVICE_ACTION in the log) after
// a SessionClosed naming the problem. It never reaches the log and never
// stops the node. After CloseSession the server reads nothing more from the
// connection: what follows is discarded.
//
// # Sessions
//
// A session closes in the log with TIMEOUT when its client sent nothing for
// Options.SessionTimeout, and also when its TCP connection drops: a client
// that disappears is a client that timed out, as Aeron sees it. A second
// Connect of the same client id takes the session over: the older one is
// closed (SERVICE_ACTION, code Replaced). On start the sessions the log
// still holds open from before the restart are closed with TIMEOUT. On
// shutdown every session is closed with SERVICE_ACTION (code Shutdown).
//
// # Goroutines
//
// Serve runs the node's duty cycle on its own goroutine and the accept loop
// on another; each connection has a reader and a writer goroutine. Egress is
// routed by the node's Egress callback, on the duty cycle, into the
// connection's write queue, bounded by Options.WriteQueueBytes: a client
// that does not read fast enough is closed (code SlowConsumer), the duty
// cycle never blocks on a connection.
//
// # Logs and metrics
//
// Options.Logger (log/slog; nil logs nothing) gets one record per
// lifecycle event — serving, session open and close, a refused connection
// or command, shutdown — and, unless Node.Logger is set, the node's own
// (open, recovery plan, snapshot start and end, failure, close); see
// logging.go here and in package cluster. Stats (any goroutine),
// NodeStats and EngineStats (read on the duty cycle) are what package
// server/metrics turns into Prometheus metrics at scrape time.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// DefaultAddr is the listen address when Options.Addr is empty.
const DefaultAddr = "127.0.0.1:7717"

// Defaults of Options.
const (
	// DefaultSessionTimeout is Options.SessionTimeout's default.
	DefaultSessionTimeout = 10 * time.Second
	// DefaultWriteQueueBytes is Options.WriteQueueBytes's default.
	DefaultWriteQueueBytes = 1 << 20
	// DefaultWriteTimeout is Options.WriteTimeout's default.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultIdle is Options.Idle's default.
	DefaultIdle = time.Millisecond
	// DefaultShutdownTimeout is Options.ShutdownTimeout's default.
	DefaultShutdownTimeout = 10 * time.Second
)

// ErrClosed is returned by requests to a server that is not serving.
var ErrClosed = errors.New("server: closed")

// Options configure a Server.
type Options struct {
	// Addr is the TCP listen address (DefaultAddr if empty; port 0 picks
	// a free one, see Server.Addr).
	Addr string
	// Node configures the cluster node: Dir, FS, FileSyncLevel, the
	// snapshot options and so on. Service and Egress are the server's and
	// are overwritten.
	Node cluster.Options
	// Service configures the engine service.
	Service enginesvc.Options
	// SessionTimeout closes a session whose client sent nothing for this
	// long (default DefaultSessionTimeout).
	SessionTimeout time.Duration
	// KeepaliveInterval is what Connected tells clients (default a
	// quarter of SessionTimeout).
	KeepaliveInterval time.Duration
	// WriteQueueBytes bounds a connection's egress waiting for its writer
	// (default DefaultWriteQueueBytes).
	WriteQueueBytes int
	// SocketWriteBuffer, if positive, sets each connection's kernel send
	// buffer (SO_SNDBUF), which with WriteQueueBytes bounds the egress a
	// slow client can hold.
	SocketWriteBuffer int
	// WriteTimeout bounds one write to a connection (default
	// DefaultWriteTimeout); a client not reading for that long is dropped.
	WriteTimeout time.Duration
	// Idle is the longest the duty cycle sleeps when it has nothing to do
	// (default DefaultIdle); ingress wakes it at once.
	Idle time.Duration
	// SnapshotOnShutdown takes a snapshot before the node closes.
	SnapshotOnShutdown bool
	// ShutdownTimeout bounds the shutdown's draining and snapshot
	// (default DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// OnSessionOpen and OnSessionClose, if set, are called on the duty
	// cycle when a session opens or closes in the log (live, and during
	// the replay at start).
	OnSessionOpen  func(sessionID int64)
	OnSessionClose func(sessionID int64, reason cluster.CloseReason)
	// EgressFilter, if set, sees each released egress message on the duty
	// cycle; false drops it (fault injection for tests: a lost answer).
	EgressFilter func(sessionID int64, msg []byte) bool
	// Logger receives one record per lifecycle event: serving, session
	// open and close, a refused connection, shutdown (see logging.go).
	// It is also the node's logger when Node.Logger is nil. Nil
	// discards them.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = o.SessionTimeout / 4
	}
	if o.WriteQueueBytes <= 0 {
		o.WriteQueueBytes = DefaultWriteQueueBytes
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Stats count what a server did.
type Stats struct {
	Connections    int64 // accepted
	Sessions       int64 // opened by Connect
	Closed         int64 // sessions closed, every reason
	Timeouts       int64 // sessions closed for silence or a dropped connection
	Malformed      int64 // connections closed for malformed or out-of-place input
	SlowConsumers  int64 // connections closed because their queue overflowed
	Replaced       int64 // sessions taken over by a newer Connect
	FramesIn       int64
	FramesOut      int64 // egress messages queued
	Offered        int64 // messages offered to the log
	StaleClosed    int64 // sessions open in the log at start, closed
	ActiveSessions int64 // open now
	// SessionsClosedBy counts the sessions closed, by the code of their
	// SessionClosed (indexed by wiresbe.CloseCode); they add up to
	// Closed. Refused counts the connections closed before a session
	// opened, for malformed or out-of-place input or a refused Connect.
	SessionsClosedBy [NumCloseCodes]int64
	Refused          int64
	// Egress messages the node released that were not queued to a
	// connection: for a session with no connection (closed, or open in
	// the log from before a restart), to a connection already closing,
	// discarded with a slow consumer's queue (the message that overflowed
	// it and those still queued), or dropped by Options.EgressFilter.
	DroppedNoConnection, DroppedClosing, DroppedSlowConsumer, DroppedFiltered int64
	// WriteErrors counts failed writes to a connection (each closes it).
	WriteErrors int64
}

// NumCloseCodes bounds the wiresbe.CloseCode values Stats counts.
const NumCloseCodes = int(wiresbe.CloseCodeRefused) + 1

type counters struct {
	connections, sessions, closed, timeouts, malformed, slow, replaced,
	framesIn, framesOut, offered, stale, active atomic.Int64
	closedBy                                               [NumCloseCodes]atomic.Int64
	refused, dropNoConn, dropClosing, dropSlow, dropFilter atomic.Int64
	writeErrors                                            atomic.Int64
}

// Server is a node with its TCP front end.
type Server struct {
	opts Options
	node *cluster.Node
	svc  *enginesvc.Service
	ln   net.Listener

	mu       sync.Mutex
	conns    map[*conn]struct{}
	sessions map[int64]*conn  // open sessions by id, for egress
	clients  map[uint64]*conn // by client id
	stopping bool
	wg       sync.WaitGroup // connection goroutines

	wake    chan struct{}
	reqs    chan func()
	served  atomic.Bool
	stopped chan struct{}
	st      counters

	// The engine service's counters when the node went live (after the
	// replay at start), on the duty cycle: EngineStats subtracts them.
	baseRejected                [256]int64
	baseDuplicates, baseSkipped int64
}

// hooked is the engine service with the server's log hooks.
type hooked struct {
	*enginesvc.Service
	s *Server
}

// OnSessionOpen implements cluster.Service.
func (h hooked) OnSessionOpen(sess *cluster.ClientSession, ts int64) error {
	if err := h.Service.OnSessionOpen(sess, ts); err != nil {
		return err
	}
	if f := h.s.opts.OnSessionOpen; f != nil {
		f(sess.ID)
	}
	return nil
}

// OnRoleChange implements cluster.Service. The node calls it once it has
// replayed its log at start: the engine's counters are taken as the
// baseline of EngineStats.
func (h hooked) OnRoleChange(r cluster.Role) error {
	if err := h.Service.OnRoleChange(r); err != nil {
		return err
	}
	h.s.baseRejected, h.s.baseDuplicates, h.s.baseSkipped = h.Service.Rejected, h.Service.Duplicates, h.Service.Skipped
	return nil
}

// OnSessionClose implements cluster.Service.
func (h hooked) OnSessionClose(sess *cluster.ClientSession, ts int64, r cluster.CloseReason) error {
	if err := h.Service.OnSessionClose(sess, ts, r); err != nil {
		return err
	}
	if f := h.s.opts.OnSessionClose; f != nil {
		f(sess.ID, r)
	}
	return nil
}

// New listens, then opens the node (recovering its snapshot and log) and
// closes the sessions left open in the log with TIMEOUT. Call Serve to run
// it, or Close to release it without serving. The listener is bound
// first, so an unusable address fails before the node directory is opened
// or created; no connection is accepted before Serve.
func New(opts Options) (*Server, error) {
	opts.defaults()
	if err := opts.Node.FileSyncLevel.Check(); err != nil {
		return nil, fmt.Errorf("server: Options.Node.FileSyncLevel: %w", err)
	}
	s := &Server{opts: opts, conns: map[*conn]struct{}{}, sessions: map[int64]*conn{}, clients: map[uint64]*conn{},
		wake: make(chan struct{}, 1), reqs: make(chan func()), stopped: make(chan struct{})}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	s.svc = enginesvc.New(opts.Service)
	no := opts.Node
	no.Service = hooked{Service: s.svc, s: s}
	no.Egress = s.egress
	if no.Logger == nil {
		no.Logger = opts.Logger
	}
	node, err := cluster.Open(no)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.node = node
	for _, id := range node.OpenSessions() {
		if err := node.CloseSessionReason(id, acs.CloseReasonTIMEOUT); err != nil {
			ln.Close()
			node.Close()
			return nil, err
		}
		s.st.stale.Add(1)
		s.logStaleClose(id)
	}
	s.ln = ln
	return s, nil
}

// WriteQueueBytes is the bound of each connection's egress queue
// (Options.WriteQueueBytes after defaults): a client that lets more of its
// egress wait is closed as a slow consumer. A client that subscribes to
// no depth and never has more commands outstanding than their events fill
// this many bytes (framed) is never closed for it, however late it reads:
// its queue only ever holds the events of its outstanding commands.
func (s *Server) WriteQueueBytes() int { return s.opts.WriteQueueBytes }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	c := &s.st
	st := Stats{Connections: c.connections.Load(), Sessions: c.sessions.Load(), Closed: c.closed.Load(),
		Timeouts: c.timeouts.Load(), Malformed: c.malformed.Load(), SlowConsumers: c.slow.Load(),
		Replaced: c.replaced.Load(), FramesIn: c.framesIn.Load(), FramesOut: c.framesOut.Load(),
		Offered: c.offered.Load(), StaleClosed: c.stale.Load(), ActiveSessions: c.active.Load(),
		Refused: c.refused.Load(), DroppedNoConnection: c.dropNoConn.Load(), DroppedClosing: c.dropClosing.Load(),
		DroppedSlowConsumer: c.dropSlow.Load(), DroppedFiltered: c.dropFilter.Load(), WriteErrors: c.writeErrors.Load()}
	for i := range c.closedBy {
		st.SessionsClosedBy[i] = c.closedBy[i].Load()
	}
	return st
}

// EngineStats count what the engine service did since the node went live
// (the commands replayed at start are not counted).
type EngineStats struct {
	// Rejected counts rejected commands by reason (reasons with a count
	// only).
	Rejected map[engine.Reason]int64
	// Duplicates counts the commands answered Duplicate (at or below
	// their source's high-water mark).
	Duplicates int64
	// Undecodable counts the log's session messages that did not decode
	// as a command (enginesvc.Service.Skipped).
	Undecodable int64
}

// EngineStats returns the engine service's counters, read on the duty
// cycle (see Inspect).
func (s *Server) EngineStats(ctx context.Context) (EngineStats, error) {
	var st EngineStats
	err := s.Inspect(ctx, func(_ *cluster.Node, svc *enginesvc.Service) {
		st.Rejected = map[engine.Reason]int64{}
		for r, n := range svc.Rejected {
			if d := n - s.baseRejected[r]; d != 0 {
				st.Rejected[engine.Reason(r)] = d
			}
		}
		st.Duplicates = svc.Duplicates - s.baseDuplicates
		st.Undecodable = svc.Skipped - s.baseSkipped
	})
	return st, err
}

// RequestSnapshot asks the node for a snapshot at its next duty cycle.
func (s *Server) RequestSnapshot() { s.node.RequestSnapshot(); s.poke() }

// Inspect runs f on the duty cycle, where the node and the engine may be
// read, and waits for it. Before Serve starts it waits for it; it fails if
// ctx ends first or after Serve has returned (ErrClosed).
func (s *Server) Inspect(ctx context.Context, f func(node *cluster.Node, svc *enginesvc.Service)) error {
	done := make(chan struct{})
	req := func() { f(s.node, s.svc); close(done) }
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped:
		return ErrClosed
	}
	<-done // the duty cycle runs it as soon as it takes it
	return nil
}

// StateHash returns the engine's state hash, read on the duty cycle.
func (s *Server) StateHash(ctx context.Context) (uint64, error) {
	var h uint64
	err := s.Inspect(ctx, func(_ *cluster.Node, svc *enginesvc.Service) { h = svc.Engine().StateHash() })
	return h, err
}

// NodeStats returns the node's counters, read on the duty cycle.
func (s *Server) NodeStats(ctx context.Context) (cluster.Stats, error) {
	var st cluster.Stats
	err := s.Inspect(ctx, func(n *cluster.Node, _ *enginesvc.Service) { st = n.Stats() })
	return st, err
}

// poke wakes the duty cycle.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close releases a server that was never served: the listener and the
// node. A served server closes itself when Serve returns.
func (s *Server) Close() error {
	if s.served.Load() {
		return errors.New("server: Close of a served server: cancel Serve's context")
	}
	s.served.Store(true)
	close(s.stopped)
	s.ln.Close()
	return s.node.Close()
}

// Serve runs the server until ctx is done or the node fails, then shuts
// down: stops accepting, closes every session (in the log) and connection,
// drains the node, takes a snapshot if Options.SnapshotOnShutdown, and
// closes the node. It returns nil after a clean shutdown on ctx.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("server: Serve called twice, or after Close")
	}
	acceptDone := make(chan struct{})
	go func() { defer close(acceptDone); s.acceptLoop() }()
	s.logServing()
	runErr := s.run(ctx)
	s.logShutdown(runErr)
	s.ln.Close()
	<-acceptDone
	err := s.shutdown(runErr)
	s.logStopped(err)
	return err
}

func (s *Server) acceptLoop() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.st.connections.Add(1)
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			if s.opts.SocketWriteBuffer > 0 {
				tc.SetWriteBuffer(s.opts.SocketWriteBuffer)
			}
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
}

// run is the duty cycle.
func (s *Server) run(ctx context.Context) error {
	timer := time.NewTimer(s.opts.Idle)
	defer timer.Stop()
	check := min(s.opts.SessionTimeout/4, 100*time.Millisecond)
	lastCheck := time.Now()
	for {
		select {
		case f := <-s.reqs:
			f()
		default:
		}
		if ctx.Err() != nil {
			return nil
		}
		w, err := s.node.DoWork()
		if err != nil {
			return err
		}
		if now := time.Now(); now.Sub(lastCheck) >= check {
			lastCheck = now
			s.checkTimeouts(now)
		}
		if w > 0 {
			continue
		}
		d := s.opts.Idle
		if s.node.Pending() > 0 {
			d = min(d, 50*time.Microsecond)
		}
		timer.Reset(d)
		select {
		case <-ctx.Done():
		case <-s.wake:
		case f := <-s.reqs:
			f()
		case <-timer.C:
		}
	}
}

// checkTimeouts closes sessions (and unconnected connections) silent for
// the session timeout.
func (s *Server) checkTimeouts(now time.Time) {
	limit := now.Add(-s.opts.SessionTimeout).UnixNano()
	var expired []*conn
	s.mu.Lock()
	for c := range s.conns {
		if c.lastSeen.Load() < limit {
			expired = append(expired, c)
		}
	}
	s.mu.Unlock()
	for _, c := range expired {
		c.shut(wiresbe.CloseCodeTimeout, fmt.Sprintf("nothing received for %v", s.opts.SessionTimeout), acs.CloseReasonTIMEOUT)
	}
}

// egress routes a released message to its session's connection (on the
// duty cycle).
func (s *Server) egress(sid int64, msg []byte) {
	if f := s.opts.EgressFilter; f != nil && !f(sid, msg) {
		s.st.dropFilter.Add(1)
		return
	}
	s.mu.Lock()
	c := s.sessions[sid]
	s.mu.Unlock()
	if c != nil {
		c.enqueue(msg)
	} else {
		s.st.dropNoConn.Add(1)
	}
}

// shutdown closes everything after the duty cycle stopped: the answers
// to what was sequenced go out first, then every session is closed.
func (s *Server) shutdown(runErr error) error {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	err := runErr
	deadline := time.Now().Add(s.opts.ShutdownTimeout)
	if err == nil {
		err = s.drain(deadline)
	}
	s.mu.Lock()
	all := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		if err == nil {
			c.shut(wiresbe.CloseCodeShutdown, "server shutting down", acs.CloseReasonSERVICEACTION)
		} else {
			c.shutNoLog(wiresbe.CloseCodeShutdown, "server failed")
		}
	}
	if err == nil {
		err = s.drain(deadline)
		if err == nil && s.opts.SnapshotOnShutdown {
			err = s.snapshot(deadline)
		}
	}
	// The readers stop reading; each waits for its writer's last frame.
	for _, c := range all {
		c.nc.SetReadDeadline(time.Now())
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(max(time.Until(deadline), time.Second))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		for _, c := range all {
			c.nc.SetDeadline(time.Now())
		}
		<-done
	}
	close(s.stopped)
	return errors.Join(err, s.node.Close())
}

// drain runs the duty cycle until nothing is pending.
func (s *Server) drain(deadline time.Time) error {
	for {
		w, err := s.node.DoWork()
		if err != nil {
			return err
		}
		if w == 0 && s.node.Pending() == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("server: shutdown timed out draining the node")
		}
		if w == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// snapshot takes a snapshot and waits for it.
func (s *Server) snapshot(deadline time.Time) error {
	before := s.node.Stats().Snapshots
	s.node.RequestSnapshot()
	for s.node.Stats().Snapshots == before {
		w, err := s.node.DoWork()
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("server: shutdown timed out taking the snapshot")
		}
		if w == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return s.node.AwaitSnapshot(time.Until(deadline))
}

// connect opens a session for c (on c's reader goroutine).
func (s *Server) connect(c *conn, clientID uint64) error {
	// The engine's high-water mark of this source, for Connected: read on
	// the duty cycle before the session opens.
	var hw uint64
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	err := s.Inspect(ctx, func(_ *cluster.Node, svc *enginesvc.Service) { hw, _ = svc.Engine().HighWater(clientID) })
	cancel()
	if err != nil {
		return err
	}
	sid, err := s.node.Connect(c.nc.RemoteAddr().String(), 0)
	if err != nil {
		return err
	}
	// c.mu before s.mu: close, which takes them one after the other,
	// either sees the session open or is seen here.
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		_ = s.node.CloseSessionReason(sid, acs.CloseReasonSERVICEACTION)
		s.poke()
		return nil
	}
	s.mu.Lock()
	old := s.clients[clientID]
	s.clients[clientID] = c
	s.sessions[sid] = c
	s.mu.Unlock()
	c.session, c.clientID = sid, clientID
	c.open = true
	buf, off := wiresbe.BeginFrame(c.pending)
	buf = wiresbe.AppendConnected(buf, sid, clientID, uint32(s.opts.KeepaliveInterval.Milliseconds()), uint32(s.opts.SessionTimeout.Milliseconds()), hw)
	c.pending = wiresbe.EndFrame(buf, off)
	s.st.sessions.Add(1)
	s.st.active.Add(1)
	c.mu.Unlock()
	s.logSessionOpen(c, sid, clientID)
	c.signal()
	if old != nil {
		s.st.replaced.Add(1)
		old.shut(wiresbe.CloseCodeReplaced, fmt.Sprintf("a newer connection of client %d took the session over", clientID), acs.CloseReasonSERVICEACTION)
	}
	s.poke()
	return nil
}

// offer queues a validated command of c's session for the log.
func (s *Server) offer(sid int64, msg []byte) error {
	if err := s.node.Offer(sid, msg); err != nil {
		return err
	}
	s.st.offered.Add(1)
	s.poke()
	return nil
}

// subscribe offers a SubscribeDepth on behalf of c.
func (s *Server) subscribe(c *conn, instrument uint32, levels uint16) error {
	c.scratch = wire.AppendSubscribeDepth(c.scratch[:0], c.clientID, 0, instrument, levels)
	return s.offer(c.session, c.scratch)
}
