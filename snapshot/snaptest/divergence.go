package snaptest

import (
	"fmt"
	"strings"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
)

// Kind says how a snapshot was written.
type Kind string

// Snapshot kinds.
const (
	Linear   Kind = "linear"   // Publisher.Take of the primary
	Parallel Kind = "parallel" // Publisher.TakeFrozen of a clone, with workers
)

// SnapshotInfo describes one snapshot: where it was taken and how it was
// written.
type SnapshotInfo struct {
	Index    int // 0-based number of the snapshot in the run
	At       int // commands applied when it was taken (the last was command index At-1)
	Kind     Kind
	Workers  int // encoding workers (parallel only)
	MTU      int
	Term     int   // term length
	Window   int   // how far the publisher may run ahead of the reader
	Start    int64 // stream position of its first frame
	TermID   int32 // initial term id of its log
	Orders   uint64
	Triggers uint64
	Bytes    int64 // bytes written to the log, frames and padding
	Frames   int   // fragments the loader read
	Rotated  bool  // it crossed into another term
	Waits    int   // times the publisher was back-pressured and waited for the reader
}

func (s SnapshotInfo) String() string {
	kind := string(s.Kind)
	if s.Kind == Parallel {
		kind = fmt.Sprintf("parallel, %d workers", s.Workers)
	}
	return fmt.Sprintf("snapshot %d (%s, MTU %d, term %d, window %d, start position %d, initial term id %d) taken after %d commands: %d orders, %d triggers, %d bytes, %d fragments, %d waits for the reader",
		s.Index, kind, s.MTU, s.Term, s.Window, s.Start, s.TermID, s.At, s.Orders, s.Triggers, s.Bytes, s.Frames, s.Waits)
}

// Divergence is the error [RunRestoreDiff] returns at the first difference:
// the primary against the model (Model is set), the restored engine against
// the primary, or a snapshot that could not be taken or loaded (Err is set).
type Divergence struct {
	// The run: what reproduces it.
	Seed     int64
	Commands int  // the run's length
	Workers  int  // Options.Workers
	Check    bool // Options.Diff.Check

	Index   int            // 0-based index of the command at or after which it was found
	Command engine.Command // that command
	What    string
	Detail  string

	// Snapshot is the snapshot the restored engine came from: for a failed
	// take, load or restore check, the one being taken (taken after command
	// Index); otherwise the shadow's, Since commands before. Nil before the
	// first snapshot.
	Snapshot *SnapshotInfo
	Since    int

	Primary, Shadow         []engine.Event // the command's events on the primary and the restored engine
	PrimaryHash, ShadowHash uint64

	Model *enginetest.Divergence // the primary against the model
	Err   error                  // the take or load error
}

// Unwrap returns Err and Model, those that are set.
func (d *Divergence) Unwrap() []error {
	var errs []error
	if d.Err != nil {
		errs = append(errs, d.Err)
	}
	if d.Model != nil {
		errs = append(errs, d.Model)
	}
	return errs
}

// Reproduce is the command line that runs the same stream and snapshots
// (for the default generator configuration, which the command line uses).
func (d *Divergence) Reproduce() string {
	s := fmt.Sprintf("matchlog difftest --seed %d --commands %d --workers %d", d.Seed, d.Commands, d.Workers)
	if d.Check {
		s += " --check"
	}
	return s
}

// Error renders the divergence: where, the command, the snapshot, both
// sides' events and how to reproduce it.
func (d *Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snaptest: divergence at seed %d, command index %d: %s\n", d.Seed, d.Index, d.What)
	if d.Index >= 0 {
		fmt.Fprintf(&b, "command: %s\n", enginetest.FormatCommand(&d.Command))
	}
	if d.Snapshot != nil {
		if d.Model == nil && (d.Primary != nil || d.Shadow != nil || d.PrimaryHash != 0 || d.ShadowHash != 0) {
			fmt.Fprintf(&b, "restored from %v; fed %d commands since\n", *d.Snapshot, d.Since)
		} else {
			fmt.Fprintf(&b, "%v\n", *d.Snapshot)
		}
	}
	if d.Err != nil {
		fmt.Fprintf(&b, "error: %v\n", d.Err)
	}
	if m := d.Model; m != nil {
		if m.Engine != nil || m.Model != nil {
			writeEvents(&b, "engine", m.Engine, "model", m.Model)
		}
		if m.EngineHash != 0 || m.ModelHash != 0 {
			fmt.Fprintf(&b, "state hash: engine %016x, model %016x\n", m.EngineHash, m.ModelHash)
		}
		writeDetail(&b, m.Detail)
	}
	if d.Primary != nil || d.Shadow != nil {
		writeEvents(&b, "primary", d.Primary, "restored", d.Shadow)
	}
	if d.PrimaryHash != 0 || d.ShadowHash != 0 {
		fmt.Fprintf(&b, "state hash: primary %016x, restored %016x\n", d.PrimaryHash, d.ShadowHash)
	}
	writeDetail(&b, d.Detail)
	fmt.Fprintf(&b, "reproduce with: %s\n", d.Reproduce())
	return b.String()
}

// writeEvents renders both sides' events with enginetest.FormatEvent,
// marking the first that differs.
func writeEvents(b *strings.Builder, nameA string, a []engine.Event, nameB string, c []engine.Event) {
	first := firstDiff(a, c)
	if first >= 0 {
		fmt.Fprintf(b, "first differing event: %d\n", first)
	}
	for _, side := range []struct {
		name string
		evs  []engine.Event
	}{{nameA, a}, {nameB, c}} {
		fmt.Fprintf(b, "%s events (%d):\n", side.name, len(side.evs))
		for i := range side.evs {
			mark := " "
			if i == first {
				mark = "*"
			}
			fmt.Fprintf(b, " %s%3d %s\n", mark, i, enginetest.FormatEvent(&side.evs[i]))
		}
	}
}

func writeDetail(b *strings.Builder, detail string) {
	if detail == "" {
		return
	}
	b.WriteString(detail)
	if !strings.HasSuffix(detail, "\n") {
		b.WriteByte('\n')
	}
}
