// Package liveness is the one rule by which every matchlog program decides
// whether the process that wrote a mark file (cluster-mark.dat,
// archive-mark.dat) still runs on it.
//
// A mark file is live when all of these hold:
//
//   - it is ready (its version field is written, the last step of its
//     creation);
//   - its activity timestamp is not -1 (a clean stop writes -1) and lies
//     within the timeout (10 s by default, as Aeron's) of now, in either
//     direction;
//   - the process id it records still runs on this host. A process killed
//     with SIGKILL leaves a fresh timestamp behind; its pid is gone, so the
//     file is not live at once, not after the timeout. A pid that cannot be
//     asked about (not a unix host) counts as running, and so does this
//     process's own pid (then the timestamp alone decides).
//
// The owners of the files (package archive, package cluster) decode them
// and call Check; no other package applies a rule of its own.
package liveness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultTimeout is how recent an activity timestamp must be for a live
// writer (Aeron's mark file timeout).
const DefaultTimeout = 10 * time.Second

// Mark is what the rule reads of a mark file.
type Mark struct {
	// File is the file's path, for messages.
	File string
	// Ready: the version field is written.
	Ready bool
	// ActivityMs is the activity timestamp, epoch ms; -1 after a clean stop.
	ActivityMs int64
	// PID is the writer's process id (0 or negative: unknown).
	PID int64
}

// Error is a live mark file: what Check returns when the writer runs.
type Error struct {
	Mark
	// AgeMs is now minus the activity timestamp; Timeout the limit applied.
	AgeMs   int64
	Timeout time.Duration
	// Kind is the sentinel error it wraps (cluster.ErrNodeRunning,
	// archive.ErrArchiveActive), nil for none.
	Kind error
}

// Reason says why the file is live, naming it by its base name, without
// the sentinel's text.
func (e *Error) Reason() string {
	return fmt.Sprintf("%s activity timestamp %s is %d ms old (within %s) and its process %d is running",
		filepath.Base(e.File), time.UnixMilli(e.ActivityMs).UTC().Format(time.RFC3339Nano), e.AgeMs, e.Timeout, e.PID)
}

func (e *Error) Error() string {
	s := e.Reason() + " (" + e.File + "); stop that process first"
	if e.Kind != nil {
		s = e.Kind.Error() + ": " + s
	}
	return s
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Check applies the rule to m at nowMs: nil when m is not live, else an
// *Error wrapping kind.
func Check(m Mark, nowMs int64, timeout time.Duration, kind error) error {
	if !m.Ready || m.ActivityMs <= 0 {
		return nil
	}
	age := nowMs - m.ActivityMs
	if t := timeout.Milliseconds(); age > t || -age > t {
		return nil
	}
	if m.PID > 0 && m.PID != int64(os.Getpid()) && !ProcessRunning(int(m.PID)) {
		return nil
	}
	return &Error{Mark: m, AgeMs: age, Timeout: timeout, Kind: kind}
}

// IsLive reports whether err is (or wraps) an *Error.
func IsLive(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
