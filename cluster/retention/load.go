package retention

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/internal/vfs"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// SnapshotMarker marks (Aeron's SnapshotMark).
const (
	markBegin = 0
	markEnd   = 2
)

// readRecording calls fn with the payload of every DATA frame of the
// recording d in adir, in order, from its start to its stop, and fails
// when a frame is not whole or a segment file is missing or ends early.
// It is the package's only reader of recording data: one function, so it
// can move to the archive's own recording reader without touching its
// callers.
func readRecording(fsys vfs.FS, adir string, d archive.RecordingDescriptor, fn func(payload []byte, pos int64) error) error {
	if err := archive.CheckSegmentLength(d.SegmentFileLength, d.TermBufferLength); err != nil {
		return err
	}
	stop := d.StopPosition
	if stop == archive.NullPosition {
		var err error
		if stop, _, err = archive.ComputeStopPosition(fsys, adir, d); err != nil {
			return err
		}
	}
	next := d.StartPosition
	sl := int64(d.SegmentFileLength)
	for base := archive.SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength); next < stop; base += sl {
		name := archive.SegmentFileName(d.RecordingID, base)
		file, err := fsys.Open(fsys.Join(adir, name))
		if err != nil {
			return fmt.Errorf("segment file %s: %w", name, err)
		}
		size, err := file.Size()
		if err == nil {
			p := archive.SegmentParams{Base: base, StartPosition: d.StartPosition, TermLength: d.TermBufferLength,
				SegmentLength: d.SegmentFileLength, InitialTermID: d.InitialTermID, StreamID: d.StreamID}
			var res archive.ScanResult
			res, err = archive.ScanSegment(file, size, p, func(fr archive.Frame) error {
				pos := base + fr.Offset
				if pos >= stop {
					return nil
				}
				next = pos + archive.AlignedFrameLength(fr.Header.FrameLength)
				if fr.Header.Type == archive.FrameTypePad {
					return nil
				}
				return fn(fr.Payload, pos)
			})
			if err == nil && res.Problem != nil && base+res.Problem.Offset < stop {
				err = fmt.Errorf("segment file %s: %w", name, res.Problem)
			}
		}
		file.Close()
		if err != nil {
			return err
		}
		if next < stop && next < base+sl {
			return fmt.Errorf("segment file %s: whole frames end at %d, the recording stops at %d", name, next, stop)
		}
	}
	if next != stop {
		return fmt.Errorf("recording %d: frames end at %d, not at its stop %d", d.RecordingID, next, stop)
	}
	return nil
}

// proveLoadable reads snapshot recording d back (r.Loadable, r.Problem):
// every frame whole, a SnapshotMarker BEGIN first and an END after it
// (Aeron's Java service container writes its service's own snapshot after
// its END; a matchlog engine snapshot nests its own BEGIN … END); for a
// matchlog engine snapshot of service 0, the strict load and hash check
// of enginesvc.ReadSnapshot on the member directory dir.
func proveLoadable(fsys vfs.FS, dir, adir string, d archive.RecordingDescriptor, logPosition int64, r *Recording) {
	first, ends := -1, 0
	n := 0
	err := readRecording(fsys, adir, d, func(b []byte, pos int64) error {
		mark := -1
		if len(b) >= acs.MessageHeaderEncodedLength+acs.SnapshotMarkerBlockLength {
			le := binary.LittleEndian
			if le.Uint16(b[4:]) == acs.SchemaID && le.Uint16(b[2:]) == acs.SnapshotMarkerTemplateID {
				mark = int(le.Uint32(b[acs.MessageHeaderEncodedLength+28:]))
			}
		}
		if n == 0 {
			first = mark
		}
		if mark == markEnd {
			ends++
		}
		n++
		return nil
	})
	switch {
	case err != nil:
		r.Problem = fmt.Sprintf("recording %d does not read back whole: %v", r.RecordingID, err)
		return
	case n == 0:
		r.Problem = fmt.Sprintf("recording %d holds no frames", r.RecordingID)
		return
	case first != markBegin:
		r.Problem = fmt.Sprintf("recording %d does not start with a SnapshotMarker BEGIN", r.RecordingID)
		return
	case ends == 0:
		r.Problem = fmt.Sprintf("recording %d holds no SnapshotMarker END", r.RecordingID)
		return
	}
	if r.ServiceID == 0 {
		es, err := enginesvc.ReadSnapshot(fsys, dir, logPosition, true)
		switch {
		case errors.Is(err, enginesvc.ErrNotEngineSnapshot):
			// Another service's snapshot: the framing is all we can prove.
		case err != nil:
			r.Problem = fmt.Sprintf("recording %d: the strict loader refuses the engine snapshot: %v", r.RecordingID, err)
			return
		default:
			r.Engine = true
			r.StateHash = fmt.Sprintf("%016x", es.StateHash)
		}
	}
	r.Loadable = true
}
