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
// when a frame is not whole or fails its checks, or a segment file is
// missing or ends early. It is the package's only reader of recording
// data, and it reads through archive.RecordingReader.
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
	r, err := archive.OpenRecordingReader(fsys, adir, d, d.StartPosition, stop)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		h, payload, end, ok := r.Next()
		if !ok {
			break
		}
		if err := fn(payload, end-archive.AlignedFrameLength(h.FrameLength)); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if r.Position() != stop {
		return fmt.Errorf("recording %d: frames end at %d, not at its stop %d", d.RecordingID, r.Position(), stop)
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
