package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/cluster"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/sbe/enginesbe"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// lingerTimeout is how long a closing connection's input is still read
// (and discarded) so that the SessionClosed frame is not lost to a reset.
const lingerTimeout = time.Second

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn

	mu      sync.Mutex
	pending []byte // frames for the writer
	spare   []byte
	closing bool // closed: nothing more goes in
	// final: the SessionClosed frame is queued, last; the writer ends once
	// it is out. close queues it after counting and logging the close.
	final    bool
	open     bool // a session is open for this connection
	session  int64
	clientID uint64
	wakeW    chan struct{}
	wdone    chan struct{} // closed when the writer ends
	lastSeen atomic.Int64  // unix ns of the last frame received

	// reader goroutine only
	scratch []byte
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, session: -1, wakeW: make(chan struct{}, 1), wdone: make(chan struct{})}
	c.lastSeen.Store(time.Now().UnixNano())
	return c
}

func (c *conn) signal() {
	select {
	case c.wakeW <- struct{}{}:
	default:
	}
}

// enqueue queues an egress message (on the duty cycle). On overflow the
// connection is closed as a slow consumer.
func (c *conn) enqueue(msg []byte) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		c.s.st.dropClosing.Add(1)
		return
	}
	if len(c.pending)+wiresbe.FrameHeaderLength+len(msg) > c.s.opts.WriteQueueBytes {
		c.mu.Unlock()
		c.s.st.dropSlow.Add(1)
		c.shut(wiresbe.CloseCodeSlowConsumer, fmt.Sprintf("egress queue over %d bytes: the client does not read fast enough", c.s.opts.WriteQueueBytes), acs.CloseReasonSERVICEACTION)
		return
	}
	c.pending = wiresbe.AppendFrame(c.pending, msg)
	c.mu.Unlock()
	c.s.st.framesOut.Add(1)
	c.signal()
}

// shut closes the connection's session in the log for reason and queues
// SessionClosed as the connection's last frame. Only the first call acts.
func (c *conn) shut(code wiresbe.CloseCode, why string, reason cluster.CloseReason) {
	c.close(code, why, reason, true)
}

// shutNoLog is shut without closing the session in the log.
func (c *conn) shutNoLog(code wiresbe.CloseCode, why string) {
	c.close(code, why, 0, false)
}

func (c *conn) close(code wiresbe.CloseCode, why string, reason cluster.CloseReason, logIt bool) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	if code == wiresbe.CloseCodeSlowConsumer {
		c.s.st.dropSlow.Add(countFrames(c.pending))
		c.pending = c.pending[:0] // the client is behind: it gets the reason next
		c.s.st.slow.Add(1)
	}
	sid := c.session
	wasOpen := c.open
	c.open = false
	cid := c.clientID
	c.mu.Unlock()
	// The SessionClosed frame is queued once the close is counted and
	// logged, so that a client that has read it finds the close in Stats
	// and in the log.
	defer func() {
		c.mu.Lock()
		buf, off := wiresbe.BeginFrame(c.pending)
		c.pending = wiresbe.EndFrame(wiresbe.AppendSessionClosed(buf, sid, code, why), off)
		c.final = true
		c.mu.Unlock()
		c.signal()
	}()
	// Read what the client still sends for a moment, discarding it.
	c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	s := c.s
	if !wasOpen {
		refused := code != wiresbe.CloseCodeClientAction && code != wiresbe.CloseCodeShutdown && code != wiresbe.CloseCodeTimeout
		if refused {
			s.st.malformed.Add(1)
			s.st.refused.Add(1)
		}
		s.logConnClose(c, code, why, refused)
		return
	}
	s.mu.Lock()
	if s.sessions[sid] == c {
		delete(s.sessions, sid)
	}
	if s.clients[cid] == c {
		delete(s.clients, cid)
	}
	s.mu.Unlock()
	s.st.closed.Add(1)
	s.st.active.Add(-1)
	if int(code) < NumCloseCodes {
		s.st.closedBy[code].Add(1)
	}
	switch code {
	case wiresbe.CloseCodeTimeout:
		s.st.timeouts.Add(1)
	case wiresbe.CloseCodeMalformed, wiresbe.CloseCodeProtocolError:
		s.st.malformed.Add(1)
	}
	if logIt {
		if code == wiresbe.CloseCodeClientAction {
			_ = s.node.CloseSession(sid)
			reason = acs.CloseReasonCLIENTACTION
		} else {
			_ = s.node.CloseSessionReason(sid, reason)
		}
		s.poke()
	}
	s.logSessionClose(c, sid, cid, code, why, reason, logIt)
}

// countFrames counts the frames in a write queue.
func countFrames(b []byte) int64 {
	n := int64(0)
	for len(b) >= wiresbe.FrameHeaderLength {
		l := int(binary.LittleEndian.Uint32(b))
		if l > len(b)-wiresbe.FrameHeaderLength {
			break
		}
		b = b[wiresbe.FrameHeaderLength+l:]
		n++
	}
	return n
}

// writeLoop writes queued frames until the final one is written.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer close(c.wdone)
	for range c.wakeW {
		c.mu.Lock()
		buf := c.pending
		c.pending = c.spare[:0]
		final := c.final
		c.mu.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.WriteTimeout))
			if _, err := c.nc.Write(buf); err != nil {
				c.s.st.writeErrors.Add(1)
				c.shut(wiresbe.CloseCodeTimeout, "write: "+err.Error(), acs.CloseReasonTIMEOUT)
				c.nc.Close()
				return
			}
		}
		c.mu.Lock()
		c.spare = buf[:0]
		done := final && len(c.pending) == 0
		c.mu.Unlock()
		if done {
			if tc, ok := c.nc.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// readLoop reads and dispatches frames until the connection closes, then
// waits for the writer and closes the socket.
func (c *conn) readLoop() {
	s := c.s
	defer func() {
		// The writer ends once the final frame is out (or its write
		// fails within the write timeout).
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	fr := wiresbe.NewFrameReader(c.nc)
	for {
		msg, err := fr.Next()
		c.mu.Lock()
		closing := c.closing
		c.mu.Unlock()
		if closing {
			if err != nil {
				c.waitWriter()
				return
			}
			continue // discarded
		}
		if err != nil {
			c.readFailed(err)
			continue
		}
		c.lastSeen.Store(time.Now().UnixNano())
		s.st.framesIn.Add(1)
		if code, why := c.dispatch(msg); why != "" {
			reason := acs.CloseReasonSERVICEACTION
			c.shut(code, why, reason)
		}
	}
}

// waitWriter waits (bounded by the write timeout) for the writer to send
// the final frame.
func (c *conn) waitWriter() {
	t := time.NewTimer(c.s.opts.WriteTimeout + lingerTimeout)
	defer t.Stop()
	select {
	case <-c.wdone:
	case <-t.C:
	}
}

func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, io.EOF):
		c.shut(wiresbe.CloseCodeTimeout, "connection closed by the client", acs.CloseReasonTIMEOUT)
	case errors.Is(err, wiresbe.ErrFrameLength), errors.Is(err, wiresbe.ErrTruncated):
		c.shut(wiresbe.CloseCodeMalformed, err.Error(), acs.CloseReasonSERVICEACTION)
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.shut(wiresbe.CloseCodeTimeout, "read deadline", acs.CloseReasonTIMEOUT)
	default:
		c.shut(wiresbe.CloseCodeTimeout, "read: "+err.Error(), acs.CloseReasonTIMEOUT)
	}
}

// dispatch handles one message; a non-empty why closes the connection
// with code.
func (c *conn) dispatch(msg []byte) (wiresbe.CloseCode, string) {
	s := c.s
	schema, template, _, _ := wiresbe.Header(msg)
	c.mu.Lock()
	open, sid, cid := c.open, c.session, c.clientID
	c.mu.Unlock()
	switch schema {
	case wiresbe.SchemaID:
		switch template {
		case wiresbe.ConnectTemplateID:
			if err := wiresbe.CheckFixed(msg, wiresbe.ConnectBlockLength); err != nil {
				return wiresbe.CloseCodeMalformed, "Connect: " + err.Error()
			}
			if sid >= 0 {
				return wiresbe.CloseCodeProtocolError, "a second Connect on the connection"
			}
			var d wiresbe.ConnectDecoder
			_ = d.WrapWithHeader(msg, 0)
			if d.ClientId() == 0 {
				return wiresbe.CloseCodeRefused, "client id 0 is not allowed"
			}
			if v := d.ProtocolVersion(); v != wiresbe.ProtocolVersion {
				return wiresbe.CloseCodeRefused, fmt.Sprintf("protocol version %d, the server speaks %d", v, wiresbe.ProtocolVersion)
			}
			if err := s.connect(c, d.ClientId()); err != nil {
				return wiresbe.CloseCodeShutdown, "connect: " + err.Error()
			}
			return 0, ""
		case wiresbe.KeepaliveTemplateID:
			if err := wiresbe.CheckFixed(msg, wiresbe.KeepaliveBlockLength); err != nil {
				return wiresbe.CloseCodeMalformed, "Keepalive: " + err.Error()
			}
			if !open {
				return wiresbe.CloseCodeProtocolError, "Keepalive before Connect"
			}
			return 0, ""
		case wiresbe.CloseSessionTemplateID:
			if err := wiresbe.CheckFixed(msg, wiresbe.CloseSessionBlockLength); err != nil {
				return wiresbe.CloseCodeMalformed, "CloseSession: " + err.Error()
			}
			if !open {
				return wiresbe.CloseCodeProtocolError, "CloseSession before Connect"
			}
			return wiresbe.CloseCodeClientAction, "closed by the client"
		case wiresbe.SubscribeDepthTemplateID:
			if err := wiresbe.CheckFixed(msg, wiresbe.SubscribeDepthBlockLength); err != nil {
				return wiresbe.CloseCodeMalformed, "SubscribeDepth: " + err.Error()
			}
			if !open {
				return wiresbe.CloseCodeProtocolError, "SubscribeDepth before Connect"
			}
			var d wiresbe.SubscribeDepthDecoder
			_ = d.WrapWithHeader(msg, 0)
			if err := s.subscribe(c, d.Instrument(), d.Levels()); err != nil {
				return wiresbe.CloseCodeShutdown, "offer: " + err.Error()
			}
			return 0, ""
		}
		return wiresbe.CloseCodeMalformed, fmt.Sprintf("unknown template %d of schema %d", template, schema)
	case enginesbe.SchemaID:
		src, err := wire.CheckCommand(msg)
		if err != nil {
			return wiresbe.CloseCodeMalformed, err.Error()
		}
		if !open {
			return wiresbe.CloseCodeProtocolError, "command before Connect"
		}
		if src != cid {
			return wiresbe.CloseCodeProtocolError, fmt.Sprintf("command of source %d on the session of client %d", src, cid)
		}
		if err := s.offer(sid, msg); err != nil {
			return wiresbe.CloseCodeShutdown, "offer: " + err.Error()
		}
		return 0, ""
	}
	return wiresbe.CloseCodeMalformed, fmt.Sprintf("unknown schema %d", schema)
}
