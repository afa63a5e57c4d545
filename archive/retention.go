package archive

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// DefaultRetentionCheckInterval is how often Proposals evaluates the
// retention rules: Kafka's log.retention.check.interval.ms default.
const DefaultRetentionCheckInterval = 5 * time.Minute

// RetentionPolicy configures the retention proposals of [Archive.Proposals].
// Every rule is off at its zero value. A rule only proposes: nothing is
// removed until a caller approves a proposal by calling Purge (the cluster
// checks the positions of DESIGN.md §6 first).
type RetentionPolicy struct {
	// MaxAge: a segment whose largest timestamp (the sidecar index) is
	// older than now - MaxAge may go, oldest first, as Kafka's
	// retention.ms with the largestTimestamp rule ([Archive.AgeCutoff]).
	MaxAge time.Duration
	// MaxBytes: keep at most this many bytes of segment files per
	// recording (every segment file is preallocated to the segment length,
	// so a recording holds segmentLength bytes per segment from its start
	// segment to its stop or active segment), as Kafka's retention.bytes.
	MaxBytes int64
	// MinFreeBytes: when the file system holding the archive has less than
	// this free (files pending unlink counted as free), propose the oldest
	// segments of all recordings, by largest timestamp, until enough would
	// be freed. The archive's FS must implement [FreeSpaceFS], or be
	// vfs.Default; Open fails otherwise.
	MinFreeBytes uint64
	// CheckInterval is how often Proposals evaluates (0:
	// DefaultRetentionCheckInterval).
	CheckInterval time.Duration
}

// RetentionReason is a set of the rules behind a proposal.
type RetentionReason uint8

const (
	RetainAge RetentionReason = 1 << iota
	RetainSize
	RetainFreeDisk
)

func (r RetentionReason) String() string {
	var parts []string
	for _, x := range []struct {
		bit  RetentionReason
		name string
	}{{RetainAge, "age"}, {RetainSize, "size"}, {RetainFreeDisk, "free-disk"}} {
		if r&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Proposal is a candidate cutoff for one recording: a new start position
// that would detach Segments segment files (Bytes bytes). NewStart is a
// segment boundary above the segment holding the current start and never
// above the base of the active segment (active recording) or of the segment
// holding the stop position, so it passes Detach's positional rules unless a
// replay is below it.
type Proposal struct {
	RecordingID   int64
	StartPosition int64 // current start
	NewStart      int64
	Segments      int
	Bytes         int64
	Reasons       RetentionReason
}

// FreeSpaceFS is implemented by a file system that can tell how many bytes
// are free for an unprivileged user in the file system holding dir. The
// retention rule MinFreeBytes needs it; vfs.Default gets it from
// statfs(2) (see [FreeBytes]).
type FreeSpaceFS interface {
	FreeBytes(dir string) (uint64, error)
}

// ErrFreeSpaceUnsupported is returned by FreeBytes for a file system that
// cannot tell its free space.
var ErrFreeSpaceUnsupported = errors.New("archive: file system cannot tell its free space")

// FreeBytes returns the free bytes of the file system holding dir: through
// fsys's FreeBytes if it implements [FreeSpaceFS], from statfs(2) if fsys is
// vfs.Default, otherwise ErrFreeSpaceUnsupported.
func FreeBytes(fsys vfs.FS, dir string) (uint64, error) {
	if f, ok := fsys.(FreeSpaceFS); ok {
		return f.FreeBytes(dir)
	}
	if fsys == vfs.Default {
		return osFreeBytes(dir)
	}
	return 0, ErrFreeSpaceUnsupported
}

func supportsFreeBytes(fsys vfs.FS) bool {
	_, ok := fsys.(FreeSpaceFS)
	return ok || fsys == vfs.Default
}

func (p *RetentionPolicy) resolve(fsys vfs.FS) error {
	if p.MaxAge < 0 || p.MaxBytes < 0 || p.CheckInterval < 0 {
		return fmt.Errorf("archive: retention policy values must not be negative: %+v", *p)
	}
	if p.CheckInterval == 0 {
		p.CheckInterval = DefaultRetentionCheckInterval
	}
	if p.MinFreeBytes > 0 && !supportsFreeBytes(fsys) {
		return fmt.Errorf("archive: retention by free space: %w", ErrFreeSpaceUnsupported)
	}
	return nil
}

// retentionState is the Archive's memory of the last evaluation.
type retentionState struct {
	checked bool
	lastMs  int64
}

// Proposals evaluates the retention policy (Options.Retention) if the check
// interval has passed since the last evaluation (the first call always
// evaluates), and returns a proposal for each VALID recording that has
// segments to give up, in id order; nil when not due or nothing is
// proposed. nowMs is epoch ms. Recordings with an unknown stop position are
// skipped. Proposals change nothing: approve one by calling Purge (or
// Detach) with its NewStart.
func (a *Archive) Proposals(nowMs int64) ([]Proposal, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pol := a.opts.Retention
	if a.retention.checked && nowMs-a.retention.lastMs < pol.CheckInterval.Milliseconds() {
		return nil, nil
	}
	a.retention.checked, a.retention.lastMs = true, nowMs
	return a.evaluateRetention(nowMs)
}

// candidate is one recording's state during an evaluation.
type candidate struct {
	d         RecordingDescriptor
	startBase int64
	endBase   int64
	cut       int64
	reasons   RetentionReason
	times     map[int64]int64 // segment base -> largest timestamp
}

func (a *Archive) evaluateRetention(nowMs int64) ([]Proposal, error) {
	pol := a.opts.Retention
	var cands []*candidate
	for _, d := range a.cat.Recordings() {
		if checkDescriptorGeometry(&d) != nil {
			continue
		}
		end, err := a.recordedPosition(d.RecordingID)
		if err != nil {
			return nil, err
		}
		if end == NullPosition || end < d.StartPosition {
			continue
		}
		tl, sl := d.TermBufferLength, d.SegmentFileLength
		c := &candidate{
			d:         d,
			startBase: SegmentFileBasePosition(d.StartPosition, d.StartPosition, tl, sl),
			endBase:   SegmentFileBasePosition(d.StartPosition, end, tl, sl),
		}
		c.cut = c.startBase
		cands = append(cands, c)
		if c.endBase <= c.startBase {
			continue
		}
		if pol.MaxAge > 0 {
			cut, err := a.ageCutoff(d.RecordingID, nowMs-pol.MaxAge.Milliseconds())
			if err != nil {
				return nil, err
			}
			c.advance(min(cut, c.endBase), RetainAge)
		}
		if pol.MaxBytes > 0 {
			total := c.endBase - c.startBase + int64(sl) // start segment to end segment
			cut := c.startBase
			for total > pol.MaxBytes && cut < c.endBase {
				cut += int64(sl)
				total -= int64(sl)
			}
			c.advance(cut, RetainSize)
		}
	}
	if pol.MinFreeBytes > 0 {
		if err := a.freeDiskCuts(cands); err != nil {
			return nil, err
		}
	}
	var out []Proposal
	for _, c := range cands {
		if c.cut <= c.startBase {
			continue
		}
		sl := int64(c.d.SegmentFileLength)
		n := (c.cut - c.startBase) / sl
		out = append(out, Proposal{
			RecordingID:   c.d.RecordingID,
			StartPosition: c.d.StartPosition,
			NewStart:      c.cut,
			Segments:      int(n),
			Bytes:         n * sl,
			Reasons:       c.reasons,
		})
	}
	return out, nil
}

// advance raises the cutoff to cut (if higher), noting the reason.
func (c *candidate) advance(cut int64, why RetentionReason) {
	if cut > c.cut {
		c.cut = cut
		c.reasons |= why
	} else if cut == c.cut && cut > c.startBase {
		c.reasons |= why
	}
}

// freeDiskCuts raises the cutoffs, taking the segment with the oldest
// largest timestamp of all recordings each time, until the proposals and
// the files pending unlink would leave MinFreeBytes free.
func (a *Archive) freeDiskCuts(cands []*candidate) error {
	free, err := FreeBytes(a.fs, a.dir)
	if err != nil {
		return err
	}
	have := free
	for _, p := range a.deletes.pending {
		have += uint64(max(p.Size, 0))
	}
	for _, c := range cands {
		have += uint64(c.cut - c.startBase)
	}
	for have < a.opts.Retention.MinFreeBytes {
		var best *candidate
		var bestTs int64
		for _, c := range cands {
			if c.cut >= c.endBase {
				continue
			}
			if c.times == nil {
				c.times = map[int64]int64{}
				segs, err := a.segmentTimes(c.d.RecordingID)
				if err != nil {
					return err
				}
				for _, s := range segs {
					c.times[s.Base] = s.LastTimestamp
				}
			}
			ts, ok := c.times[c.cut]
			if !ok {
				ts = c.d.StartTimestamp
			}
			if best == nil || ts < bestTs {
				best, bestTs = c, ts
			}
		}
		if best == nil {
			return nil // nothing more may go: the rest is active or stop segments
		}
		best.cut += int64(best.d.SegmentFileLength)
		best.reasons |= RetainFreeDisk
		have += uint64(best.d.SegmentFileLength)
	}
	return nil
}
