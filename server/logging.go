package server

import (
	"context"
	"log/slog"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/sbe/wiresbe"
)

// Lifecycle log
//
// The server writes one record to Options.Logger per lifecycle event,
// never per command (the node's own events, open, recovery plan, snapshot
// start and end, close, are the node's: cluster.Options.Logger, which the
// server sets to Options.Logger when nil). Messages and attributes:
//
//	"serving"             Info   addr
//	"session open"        Info   session, client, remote
//	"session close"       Info   session, client, remote, code (the SessionClosed code:
//	                             ClientAction, Timeout, Shutdown, Replaced), reason (text),
//	                             log_reason (the log's CloseReason, if the close was sequenced)
//	                      Warn   the same, for a refused command or input: code Malformed,
//	                             ProtocolError, Refused or SlowConsumer
//	"session close"       Info   session, reason "open in the log at start", log_reason
//	                             TIMEOUT: a session the log held open from before a restart
//	"connection refused"  Warn   remote, code, reason: closed before a session opened, for
//	                             malformed or out-of-place input or a refused Connect
//	"connection closed"   Debug  remote, code, reason: closed before a session opened, by
//	                             the client, a timeout or the shutdown
//	"shutdown"            Info   log_position, durable_position, sessions (open), cause
//	                             ("requested", or the node's error at Error level)
//	"stopped"             Info   sessions (opened in all), closed, timeouts, malformed,
//	                             slow_consumers, error (at Error level, if shutting down failed)
//
// A command the engine rejects is answered to its client and counted
// (EngineStats, and metrics), not logged.

func (s *Server) logServing() {
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "serving", slog.String("addr", s.ln.Addr().String()))
}

func (s *Server) logStaleClose(id int64) {
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "session close",
		slog.Int64("session", id), slog.String("reason", "open in the log at start"), slog.String("log_reason", "TIMEOUT"))
}

func (s *Server) logSessionOpen(c *conn, sid int64, clientID uint64) {
	s.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "session open",
		slog.Int64("session", sid), slog.Uint64("client", clientID), slog.String("remote", c.nc.RemoteAddr().String()))
}

// refusal reports whether a close code is the server refusing the
// client's input.
func refusal(code wiresbe.CloseCode) bool {
	switch code {
	case wiresbe.CloseCodeMalformed, wiresbe.CloseCodeProtocolError, wiresbe.CloseCodeRefused, wiresbe.CloseCodeSlowConsumer:
		return true
	}
	return false
}

func (s *Server) logSessionClose(c *conn, sid int64, clientID uint64, code wiresbe.CloseCode, why string, reason cluster.CloseReason, sequenced bool) {
	level := slog.LevelInfo
	if refusal(code) {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.Int64("session", sid), slog.Uint64("client", clientID),
		slog.String("remote", c.nc.RemoteAddr().String()), slog.String("code", code.String()), slog.String("reason", why)}
	if sequenced {
		attrs = append(attrs, slog.String("log_reason", reason.String()))
	}
	s.opts.Logger.LogAttrs(context.Background(), level, "session close", attrs...)
}

func (s *Server) logConnClose(c *conn, code wiresbe.CloseCode, why string, refused bool) {
	level, msg := slog.LevelDebug, "connection closed"
	if refused {
		level, msg = slog.LevelWarn, "connection refused"
	}
	s.opts.Logger.LogAttrs(context.Background(), level, msg,
		slog.String("remote", c.nc.RemoteAddr().String()), slog.String("code", code.String()), slog.String("reason", why))
}

// logShutdown runs on the duty cycle's goroutine once it stopped.
func (s *Server) logShutdown(runErr error) {
	st := s.node.Stats()
	attrs := []slog.Attr{slog.Int64("log_position", st.LogPosition), slog.Int64("durable_position", st.DurableLog),
		slog.Int64("sessions", s.st.active.Load())}
	level := slog.LevelInfo
	if runErr != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("cause", runErr.Error()))
	} else {
		attrs = append(attrs, slog.String("cause", "requested"))
	}
	s.opts.Logger.LogAttrs(context.Background(), level, "shutdown", attrs...)
}

func (s *Server) logStopped(err error) {
	st := s.Stats()
	attrs := []slog.Attr{slog.Int64("sessions", st.Sessions), slog.Int64("closed", st.Closed), slog.Int64("timeouts", st.Timeouts),
		slog.Int64("malformed", st.Malformed), slog.Int64("slow_consumers", st.SlowConsumers)}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	s.opts.Logger.LogAttrs(context.Background(), level, "stopped", attrs...)
}
