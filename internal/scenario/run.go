package scenario

import (
	"fmt"
	"io"

	"github.com/matchlog/matchlog/engine"
)

// Applier is what [Run] drives: [*engine.Engine], or a model of it.
type Applier interface {
	// Apply processes one command; the events are valid until the next call.
	Apply(c *engine.Command) []engine.Event
	StateHash() uint64
}

// Summary counts what [Run] did.
type Summary struct {
	Commands  int    // command lines applied
	Events    int    // events written
	StateHash uint64 // the engine's state hash after the last command
}

// flushAt is the size at which Run hands its output buffer to the writer.
const flushAt = 64 << 10

// Run reads commands from in, applies each to e as soon as it is read and
// writes the events to out as JSON lines, then a summary line (see the
// package documentation). On a bad line it writes the events of the lines
// before it, applies nothing more and returns the line's [*Error] without
// writing a summary. A write error ends the run.
func Run(in io.Reader, out io.Writer, e Applier) (Summary, error) {
	var (
		s   Summary
		c   engine.Command
		buf = make([]byte, 0, flushAt+4096)
		r   = NewReader(in)
	)
	for {
		err := r.Next(&c)
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, werr := out.Write(buf); werr != nil {
				return s, fmt.Errorf("scenario: writing events: %w", werr)
			}
			return s, err
		}
		evs := e.Apply(&c)
		s.Commands++
		s.Events += len(evs)
		for i := range evs {
			buf = AppendEvent(buf, &evs[i])
		}
		if len(buf) >= flushAt {
			if _, err := out.Write(buf); err != nil {
				return s, fmt.Errorf("scenario: writing events: %w", err)
			}
			buf = buf[:0]
		}
	}
	s.StateHash = e.StateHash()
	buf = AppendSummary(buf, s)
	if _, err := out.Write(buf); err != nil {
		return s, fmt.Errorf("scenario: writing events: %w", err)
	}
	return s, nil
}
