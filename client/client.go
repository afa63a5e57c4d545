// Package client is the Go client of a matchlog node's TCP server (package
// server): it opens a session, sends engine commands with its own source
// and sequence, delivers the events the node releases, keeps the session
// alive, and — with Options.Reconnect — survives a node restart without
// applying anything twice.
//
// # Sequences and answers
//
// Send sets a command's Source to Options.ClientID and its Seq to the next
// sequence (from Options.FirstSeq, default 1), and keeps the command as
// outstanding until its terminal answer arrives: the Release event the
// engine emits last for every command it applies, or a Duplicate when the
// engine had applied that (Source, Seq) before. The engine's idempotent
// ingress ignores a command at or below its source's high-water mark, so a
// client that restarts must start above the sequences it used before
// (FirstSeq); the same ClientID must not be used by two clients at once (a
// second Connect takes the session over).
//
// A node whose disk is short of space answers a command it does not take
// with a Rejected event of reason engine.RejStorageFull and its Release
// (OnEvent sees both; the command is answered): the engine never applied
// it, so the same command may be sent again, under a new sequence, once the
// node takes commands again.
//
// # Reconnect
//
// When the connection drops (the node restarted, or the server closed the
// session for a timeout, a slow read or its shutdown), a client with
// Reconnect redials with exponential backoff between ReconnectMin and
// ReconnectMax, for at most ReconnectTimeout, opens a new session, sends its
// depth subscriptions again and then resends every outstanding command with
// the same Source and Seq, in order. A command that was applied before the
// drop is answered Duplicate; one that never reached the log is applied
// now. Events of a command the node applied before the drop but whose
// answer was lost are not repeated: the client learns of it only through
// the Duplicate. Commands sent while disconnected wait as outstanding and go
// out with the resend.
//
// # Goroutines
//
// The callbacks (OnEvent, OnDuplicate, OnDepth, OnDepthSnapshotEnd,
// OnSessionClosed) run on the client's reader goroutine, one at a time, in
// the order the messages arrive; an event passed to a callback is valid
// during the call only. A callback must not call Wait or Close (they wait
// for the reader). Send, SubscribeDepth, Outstanding, Wait and Close may be
// called from any goroutine.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/enginesbe"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// Defaults of Options.
const (
	// DefaultKeepaliveInterval is used when neither Options nor the
	// server's Connected give an interval.
	DefaultKeepaliveInterval = time.Second
	// DefaultDialTimeout is Options.DialTimeout's default.
	DefaultDialTimeout = 5 * time.Second
	// DefaultReconnectMin is Options.ReconnectMin's default.
	DefaultReconnectMin = 20 * time.Millisecond
	// DefaultReconnectMax is Options.ReconnectMax's default.
	DefaultReconnectMax = time.Second
	// DefaultReconnectTimeout is Options.ReconnectTimeout's default.
	DefaultReconnectTimeout = 30 * time.Second
	// DefaultMaxOutstanding is Options.MaxOutstanding's default.
	DefaultMaxOutstanding = 1 << 16
)

// Errors.
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("client: closed")
	// ErrTooManyOutstanding is returned by Send when MaxOutstanding
	// commands await their answers.
	ErrTooManyOutstanding = errors.New("client: too many outstanding commands")
)

// Options configure a Client.
type Options struct {
	// Addr is the server's address (host:port).
	Addr string
	// ClientID identifies the client: it is the Source of its commands
	// (non-zero).
	ClientID uint64
	// FirstSeq is the sequence of the first command (default 1); a client
	// that ran before under the same ClientID must start above every
	// sequence it used.
	FirstSeq uint64
	// Resume starts above the engine's high-water mark for ClientID as
	// Connected reports it (the highest sequence the engine had applied
	// from it when the session opened): the first sequence is
	// max(FirstSeq, high-water mark + 1). For a client process that
	// restarts without keeping its sequence. Commands of an earlier
	// connection that were still on their way into the log are not in
	// that mark: resume only once the earlier process is gone and its
	// connection closed.
	Resume bool
	// KeepaliveInterval: a Keepalive goes out when nothing was sent for
	// this long (default: what the server's Connected says, else
	// DefaultKeepaliveInterval).
	KeepaliveInterval time.Duration
	// DialTimeout bounds one dial and handshake (default
	// DefaultDialTimeout).
	DialTimeout time.Duration

	// OnEvent receives every event of the client's own commands.
	OnEvent func(ev *engine.Event)
	// OnDuplicate reports a command answered Duplicate: applied before.
	OnDuplicate func(source, seq uint64)
	// OnDepth receives the depth of subscribed instruments: the levels
	// answering SubscribeDepth (Source ClientID, Seq 0), the depth events
	// of other clients' commands, and — also passed to OnEvent — those of
	// the client's own commands.
	OnDepth func(ev *engine.Event)
	// OnDepthSnapshotEnd reports the end of the levels answering a
	// SubscribeDepth.
	OnDepthSnapshotEnd func(instrument uint32)
	// OnSessionClosed reports the server's SessionClosed.
	OnSessionClosed func(code wiresbe.CloseCode, reason string)

	// Reconnect after a dropped connection (see the package doc).
	Reconnect bool
	// ReconnectMin and ReconnectMax bound the backoff between attempts,
	// ReconnectTimeout the whole reconnection (defaults
	// DefaultReconnectMin, DefaultReconnectMax, DefaultReconnectTimeout).
	ReconnectMin, ReconnectMax, ReconnectTimeout time.Duration
	// MaxOutstanding bounds the commands awaiting an answer (default
	// DefaultMaxOutstanding).
	MaxOutstanding int
}

func (o *Options) defaults() error {
	if o.ClientID == 0 {
		return errors.New("client: Options.ClientID is 0")
	}
	if o.Addr == "" {
		return errors.New("client: Options.Addr is empty")
	}
	if o.FirstSeq == 0 {
		o.FirstSeq = 1
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = DefaultReconnectMin
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = max(DefaultReconnectMax, o.ReconnectMin)
	}
	if o.ReconnectTimeout <= 0 {
		o.ReconnectTimeout = DefaultReconnectTimeout
	}
	if o.MaxOutstanding <= 0 {
		o.MaxOutstanding = DefaultMaxOutstanding
	}
	return nil
}

// Stats count what a client did.
type Stats struct {
	Sent       int64 // commands sent (resends included)
	Answered   int64 // commands answered
	Duplicates int64 // answered Duplicate
	Reconnects int64 // successful reconnections
	Resent     int64 // commands resent after a reconnection
}

type sub struct {
	instrument uint32
	levels     uint16
}

// SessionClosedError is a client's failure after the server closed its
// session for a reason that a reconnect would not cure (malformed input,
// a protocol error, a refused connect, a takeover by another connection of
// the same client id).
type SessionClosedError struct {
	Code   wiresbe.CloseCode
	Reason string
}

// Error implements error.
func (e *SessionClosedError) Error() string {
	return fmt.Sprintf("client: session closed by the server: %v: %s", e.Code, e.Reason)
}

// Client is a session with a node's server.
type Client struct {
	opts Options

	mu        sync.Mutex
	nc        net.Conn // nil while disconnected
	session   int64
	wbuf      []byte
	highWater uint64 // from the first Connected
	next      uint64
	out       []engine.Command // outstanding: out[head:], in Seq order
	head      int
	subs      []sub
	zero      chan struct{} // closed when nothing is outstanding (made by Wait)
	err       error         // permanent failure
	closing   bool
	keepalive time.Duration

	lastSend atomic.Int64
	failed   chan struct{} // closed on a permanent failure or Close
	done     chan struct{} // closed when the reader ends
	kaDone   chan struct{}

	// reader goroutine only
	ev        engine.Event
	lastClose *SessionClosedError

	sent, answered, dups, reconnects, resent atomic.Int64
}

// Dial connects to the server and opens a session: it returns once the
// server answered Connected, or an error when ctx ends or the server
// refuses.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	c := &Client{opts: opts, next: opts.FirstSeq, failed: make(chan struct{}), done: make(chan struct{}), kaDone: make(chan struct{})}
	nc, fr, sid, ka, hw, err := c.handshake(ctx)
	if err != nil {
		return nil, err
	}
	c.highWater = hw
	if opts.Resume && hw >= c.next {
		c.next = hw + 1
	}
	c.nc, c.session = nc, sid
	c.keepalive = opts.KeepaliveInterval
	if c.keepalive <= 0 {
		c.keepalive = ka
	}
	if c.keepalive <= 0 {
		c.keepalive = DefaultKeepaliveInterval
	}
	c.lastSend.Store(time.Now().UnixNano())
	go c.readLoop(nc, fr)
	go c.keepaliveLoop()
	return c, nil
}

// handshake dials and exchanges Connect and Connected.
func (c *Client) handshake(ctx context.Context) (net.Conn, *wiresbe.FrameReader, int64, time.Duration, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.opts.Addr)
	if err != nil {
		return nil, nil, 0, 0, 0, fmt.Errorf("client: dial %s: %w", c.opts.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	dl, _ := ctx.Deadline()
	nc.SetDeadline(dl)
	fail := func(err error) (net.Conn, *wiresbe.FrameReader, int64, time.Duration, uint64, error) {
		nc.Close()
		return nil, nil, 0, 0, 0, err
	}
	if _, err := nc.Write(wiresbe.AppendFrame(nil, wiresbe.AppendConnect(nil, c.opts.ClientID))); err != nil {
		return fail(fmt.Errorf("client: connect: %w", err))
	}
	fr := wiresbe.NewFrameReader(nc)
	msg, err := fr.Next()
	if err != nil {
		return fail(fmt.Errorf("client: connect: %w", err))
	}
	schema, template, _, _ := wiresbe.Header(msg)
	switch {
	case schema == wiresbe.SchemaID && template == wiresbe.ConnectedTemplateID:
		var d wiresbe.ConnectedDecoder
		if err := d.WrapWithHeader(msg, 0); err != nil {
			return fail(fmt.Errorf("client: Connected: %w", err))
		}
		if d.ClientId() != c.opts.ClientID {
			return fail(fmt.Errorf("client: Connected for client %d, want %d", d.ClientId(), c.opts.ClientID))
		}
		nc.SetDeadline(time.Time{})
		return nc, fr, d.SessionId(), time.Duration(d.KeepaliveIntervalMs()) * time.Millisecond, d.SourceHighWater(), nil
	case schema == wiresbe.SchemaID && template == wiresbe.SessionClosedTemplateID:
		return fail(decodeClosed(msg))
	}
	return fail(fmt.Errorf("client: connect answered by schema %d template %d", schema, template))
}

func decodeClosed(msg []byte) *SessionClosedError {
	var d wiresbe.SessionClosedDecoder
	if err := d.WrapWithHeader(msg, 0); err != nil {
		return &SessionClosedError{Code: wiresbe.CloseCodeMalformed, Reason: "undecodable SessionClosed: " + err.Error()}
	}
	code := d.Code()
	why, _ := d.Reason()
	return &SessionClosedError{Code: code, Reason: string(why)}
}

// permanent reports whether a close code ends the client.
func permanent(code wiresbe.CloseCode) bool {
	switch code {
	case wiresbe.CloseCodeMalformed, wiresbe.CloseCodeProtocolError, wiresbe.CloseCodeRefused, wiresbe.CloseCodeReplaced:
		return true
	}
	return false
}

// Send sends cmd with Source ClientID and the next sequence, which it
// returns (and sets in cmd). The command stays outstanding until its
// answer; while disconnected it waits for the reconnection. An error means
// the command was not taken.
func (c *Client) Send(cmd *engine.Command) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if len(c.out)-c.head >= c.opts.MaxOutstanding {
		return 0, ErrTooManyOutstanding
	}
	cmd.Source, cmd.Seq = c.opts.ClientID, c.next
	buf, off := wiresbe.BeginFrame(c.wbuf[:0])
	buf, err := wire.AppendCommand(buf, cmd)
	if err != nil {
		return 0, err
	}
	c.wbuf = wiresbe.EndFrame(buf, off)
	c.next++
	if c.head > 0 && len(c.out) == cap(c.out) {
		n := copy(c.out, c.out[c.head:])
		c.out = c.out[:n]
		c.head = 0
	}
	c.out = append(c.out, *cmd)
	c.writeLocked(c.wbuf)
	c.sent.Add(1)
	return cmd.Seq, nil
}

// writeLocked writes to the connection if there is one; a failed write
// closes it, and the reader reconnects.
func (c *Client) writeLocked(b []byte) {
	if c.nc == nil {
		return
	}
	if _, err := c.nc.Write(b); err != nil {
		c.nc.Close()
		c.nc = nil
		return
	}
	c.lastSend.Store(time.Now().UnixNano())
}

// SubscribeDepth subscribes to the top levels (per side; 0: the server's
// default) of an instrument's book: the current levels come to OnDepth,
// then OnDepthSnapshotEnd, then every change. Subscriptions are renewed
// after a reconnection.
func (c *Client) SubscribeDepth(instrument uint32, levels uint16) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	found := false
	for i := range c.subs {
		if c.subs[i].instrument == instrument {
			c.subs[i].levels, found = levels, true
		}
	}
	if !found {
		c.subs = append(c.subs, sub{instrument, levels})
	}
	buf, off := wiresbe.BeginFrame(c.wbuf[:0])
	c.wbuf = wiresbe.EndFrame(wiresbe.AppendSubscribeDepth(buf, instrument, levels), off)
	c.writeLocked(c.wbuf)
	return nil
}

// Outstanding is the number of commands sent and not yet answered.
func (c *Client) Outstanding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out) - c.head
}

// HighWater is the engine's high-water mark for ClientID that the first
// Connected reported (see Options.Resume).
func (c *Client) HighWater() uint64 { return c.highWater }

// NextSeq is the sequence the next Send will use.
func (c *Client) NextSeq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// Session is the id of the current session.
func (c *Client) Session() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Err is the client's permanent failure, if any.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Sent: c.sent.Load(), Answered: c.answered.Load(), Duplicates: c.dups.Load(),
		Reconnects: c.reconnects.Load(), Resent: c.resent.Load()}
}

// Wait waits until every command sent is answered, the client fails, or
// ctx ends.
func (c *Client) Wait(ctx context.Context) error {
	for {
		c.mu.Lock()
		if len(c.out) == c.head {
			c.mu.Unlock()
			return nil
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if c.zero == nil {
			c.zero = make(chan struct{})
		}
		ch := c.zero
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.failed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// answered ends the outstanding commands up to seq.
func (c *Client) answeredUpTo(seq uint64) {
	c.mu.Lock()
	n := 0
	for c.head < len(c.out) && c.out[c.head].Seq <= seq {
		c.head++
		n++
	}
	if c.head == len(c.out) {
		c.out = c.out[:0]
		c.head = 0
		if c.zero != nil {
			close(c.zero)
			c.zero = nil
		}
	}
	c.mu.Unlock()
	c.answered.Add(int64(n))
}

// Close closes the session (CloseSession) and the connection, and stops
// the client's goroutines. Outstanding commands are abandoned.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closing = true
	if c.err == nil {
		c.err = ErrClosed
		close(c.failed)
	}
	nc := c.nc
	if nc != nil {
		buf, off := wiresbe.BeginFrame(c.wbuf[:0])
		c.wbuf = wiresbe.EndFrame(wiresbe.AppendCloseSession(buf, c.session), off)
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write(c.wbuf)
		// The server answers SessionClosed and closes; don't wait long.
		nc.SetReadDeadline(time.Now().Add(time.Second))
	}
	c.mu.Unlock()
	<-c.done
	<-c.kaDone
	return nil
}

// fail ends the client with err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		close(c.failed)
	}
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
	c.mu.Unlock()
}

func (c *Client) keepaliveLoop() {
	defer close(c.kaDone)
	t := time.NewTicker(max(c.keepalive/2, time.Millisecond))
	defer t.Stop()
	var buf []byte
	for {
		select {
		case <-c.failed:
			return
		case now := <-t.C:
			if now.UnixNano()-c.lastSend.Load() < int64(c.keepalive) {
				continue
			}
			c.mu.Lock()
			if c.nc != nil {
				b, off := wiresbe.BeginFrame(buf[:0])
				buf = wiresbe.EndFrame(wiresbe.AppendKeepalive(b, c.session), off)
				c.writeLocked(buf)
			}
			c.mu.Unlock()
		}
	}
}

// readLoop reads the connection, dispatches, and reconnects.
func (c *Client) readLoop(nc net.Conn, fr *wiresbe.FrameReader) {
	defer close(c.done)
	for {
		msg, err := fr.Next()
		if err == nil {
			c.handle(msg)
			continue
		}
		nc.Close()
		c.mu.Lock()
		if c.nc == nc {
			c.nc = nil
		}
		closing := c.closing
		c.mu.Unlock()
		if closing {
			return
		}
		if lc := c.lastClose; lc != nil && permanent(lc.Code) {
			c.fail(lc)
			return
		}
		if !c.opts.Reconnect {
			if c.lastClose != nil {
				c.fail(c.lastClose)
			} else {
				c.fail(fmt.Errorf("client: connection lost: %w", err))
			}
			return
		}
		nc, fr, err = c.reconnect()
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// reconnect redials with backoff, opens a session and resends.
func (c *Client) reconnect() (net.Conn, *wiresbe.FrameReader, error) {
	start := time.Now()
	backoff := c.opts.ReconnectMin
	t := time.NewTimer(backoff)
	defer t.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-c.failed:
			return nil, nil, ErrClosed
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-c.failed:
				cancel()
			case <-ctx.Done():
			}
		}()
		nc, fr, sid, _, _, err := c.handshake(ctx)
		cancel()
		if err == nil {
			c.mu.Lock()
			if c.closing {
				c.mu.Unlock()
				nc.Close()
				return nil, nil, ErrClosed
			}
			c.nc, c.session = nc, sid
			c.lastClose = nil
			c.resendLocked()
			c.mu.Unlock()
			c.reconnects.Add(1)
			return nc, fr, nil
		}
		var sc *SessionClosedError
		if errors.As(err, &sc) && permanent(sc.Code) {
			return nil, nil, err
		}
		if time.Since(start) >= c.opts.ReconnectTimeout {
			return nil, nil, fmt.Errorf("client: reconnect gave up after %d attempts in %v: %w", attempt, time.Since(start).Round(time.Millisecond), err)
		}
		backoff = min(backoff*2, c.opts.ReconnectMax)
		t.Reset(backoff)
	}
}

// resendLocked sends the subscriptions and the outstanding commands.
func (c *Client) resendLocked() {
	var buf []byte
	for _, s := range c.subs {
		b, off := wiresbe.BeginFrame(buf)
		buf = wiresbe.EndFrame(wiresbe.AppendSubscribeDepth(b, s.instrument, s.levels), off)
	}
	for i := c.head; i < len(c.out); i++ {
		b, off := wiresbe.BeginFrame(buf)
		b, err := wire.AppendCommand(b, &c.out[i])
		if err != nil {
			continue // encoded once already by Send
		}
		buf = wiresbe.EndFrame(b, off)
	}
	n := len(c.out) - c.head
	c.writeLocked(buf)
	c.resent.Add(int64(n))
	c.sent.Add(int64(n))
}

// handle dispatches one message (reader goroutine).
func (c *Client) handle(msg []byte) {
	schema, template, _, _ := wiresbe.Header(msg)
	if schema == wiresbe.SchemaID {
		if template == wiresbe.SessionClosedTemplateID {
			e := decodeClosed(msg)
			c.lastClose = e
			if f := c.opts.OnSessionClosed; f != nil {
				f(e.Code, e.Reason)
			}
		}
		return
	}
	if schema != enginesbe.SchemaID {
		return
	}
	switch wire.EventKind(msg) {
	case 0:
		return
	case wire.EvDuplicate:
		src, seq, err := wire.DecodeDuplicate(msg)
		if err != nil || src != c.opts.ClientID {
			return
		}
		c.dups.Add(1)
		if f := c.opts.OnDuplicate; f != nil {
			f(src, seq)
		}
		c.answeredUpTo(seq)
		return
	case wire.EvDepthSnapshotEnd:
		if f := c.opts.OnDepthSnapshotEnd; f != nil {
			_, _, inst, _, err := wire.DecodeDepthSnapshotEnd(msg)
			if err == nil {
				f(inst)
			}
		}
		return
	}
	ev := &c.ev
	if wire.DecodeEvent(msg, ev) != nil {
		return
	}
	own := ev.Source == c.opts.ClientID && ev.Seq != 0
	if ev.Kind == engine.EvDepth && c.opts.OnDepth != nil && (!own || c.subscribed(ev.Instrument)) {
		c.opts.OnDepth(ev)
	}
	if !own {
		return
	}
	if f := c.opts.OnEvent; f != nil {
		f(ev)
	}
	if ev.Kind == engine.EvRelease {
		c.answeredUpTo(ev.Seq)
	}
}

func (c *Client) subscribed(inst uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		if s.instrument == inst {
			return true
		}
	}
	return false
}
