package cluster

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/internal/vfs"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// LogEntry is one entry of the log as ScanLog reads it back.
type LogEntry struct {
	Position  int64  // after the entry's frame
	Template  uint16 // cluster schema template id (1: session message, 20..24: events)
	SessionID int64  // session messages, opens and closes
	Timestamp int64
	Payload   []byte // a session message's payload, valid during the call
}

func openStopped(fsys vfs.FS, dir string) (*archive.Catalog, *recordinglog.Log, error) {
	cat, err := archive.OpenCatalogFile(fsys, fsys.Join(dir, ArchiveDirName), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	rl, err := recordinglog.Open(fsys, fsys.Join(dir, ClusterDirName), recordinglog.Options{ReadOnly: true, Repair: true})
	if err != nil {
		cat.Close()
		return nil, nil, err
	}
	return cat, rl, nil
}

func stopOf(fsys vfs.FS, adir string, d archive.RecordingDescriptor) (archive.RecordingDescriptor, error) {
	if d.StopPosition == archive.NullPosition {
		stop, _, err := archive.ComputeStopPosition(fsys, adir, d)
		if err != nil {
			return d, err
		}
		d.StopPosition = stop
	}
	return d, nil
}

// ScanLog reads the whole log recording of a stopped node directory (the
// recording of the last TERM in recording.log) from its start and calls fn
// for each entry. It writes nothing.
func ScanLog(fsys vfs.FS, dir string, fn func(e *LogEntry) error) error {
	return ScanLogFrom(fsys, dir, -1, fn)
}

// ScanLogFrom is ScanLog from log position from (an entry's start, such
// as the Position of an entry ScanLog passed before; negative: the
// recording's start). A position outside the recording is an error.
func ScanLogFrom(fsys vfs.FS, dir string, from int64, fn func(e *LogEntry) error) error {
	cat, rl, err := openStopped(fsys, dir)
	if err != nil {
		return err
	}
	defer cat.Close()
	defer rl.Close()
	term, ok := rl.FindLastTerm()
	if !ok {
		return nil
	}
	d, err := cat.Descriptor(term.RecordingID)
	if err != nil {
		return err
	}
	adir := fsys.Join(dir, ArchiveDirName)
	if d, err = stopOf(fsys, adir, d); err != nil {
		return err
	}
	if from < 0 {
		from = d.StartPosition
	}
	if from > d.StopPosition {
		return fmt.Errorf("cluster: scan of log recording %d from %d: past its stop position %d", d.RecordingID, from, d.StopPosition)
	}
	r, err := newSegReader(fsys, adir, d, from, d.StopPosition)
	if err != nil {
		return err
	}
	defer r.Close()
	var fr segFrame
	var e LogEntry
	for r.Next(&fr) {
		b := fr.Payload
		h, err := acs.WrapMessageHeader(b, 0)
		if err != nil {
			return err
		}
		e = LogEntry{Position: fr.Position, Template: h.TemplateId()}
		switch h.TemplateId() {
		case acs.SessionMessageHeaderTemplateID:
			var d acs.SessionMessageHeaderDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				return err
			}
			e.SessionID, e.Timestamp = d.ClusterSessionId(), d.Timestamp()
			e.Payload = b[acs.MessageHeaderEncodedLength+d.ActingBlockLength():]
		case acs.SessionOpenEventTemplateID:
			var d acs.SessionOpenEventDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				return err
			}
			e.SessionID, e.Timestamp = d.ClusterSessionId(), d.Timestamp()
		case acs.SessionCloseEventTemplateID:
			var d acs.SessionCloseEventDecoder
			if err := d.WrapWithHeader(b, 0); err != nil {
				return err
			}
			e.SessionID, e.Timestamp = d.ClusterSessionId(), d.Timestamp()
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	if r.Position() != d.StopPosition {
		return fmt.Errorf("cluster: scan of log recording %d from %d: frames end at %d, before its stop position %d", d.RecordingID, from, r.Position(), d.StopPosition)
	}
	return nil
}

// ServiceSnapshot opens the latest valid snapshot of service 0 in a
// stopped node directory (or the one at logPosition when it is >= 0) and
// returns its image positioned after the container's ClientSession section,
// the snapshot's info, and a function to close it.
func ServiceSnapshot(fsys vfs.FS, dir string, logPosition int64) (SnapshotImage, SnapshotInfo, func() error, error) {
	cat, rl, err := openStopped(fsys, dir)
	if err != nil {
		return nil, SnapshotInfo{}, nil, err
	}
	defer rl.Close()
	var entry *recordinglog.Entry
	for _, e := range rl.Entries() {
		if e.Type == recordinglog.TypeSnapshot && e.Valid && e.ServiceID == 0 && (logPosition < 0 || e.LogPosition == logPosition) {
			e := e
			entry = &e
		}
	}
	if entry == nil {
		cat.Close()
		return nil, SnapshotInfo{}, nil, fmt.Errorf("%w: no snapshot of service 0 in %s", ErrSnapshot, dir)
	}
	d, err := cat.Descriptor(entry.RecordingID)
	adir := fsys.Join(dir, ArchiveDirName)
	if err == nil {
		d, err = stopOf(fsys, adir, d)
	}
	var r *segReader
	if err == nil {
		r, err = newSegReader(fsys, adir, d, 0, d.StopPosition)
	}
	if err != nil {
		cat.Close()
		return nil, SnapshotInfo{}, nil, err
	}
	src := r
	_, info, err := loadServiceSessions(src, SnapshotInfo{LogPosition: entry.LogPosition, LeadershipTermID: entry.LeadershipTermID})
	closer := func() error { return errors.Join(r.Close(), cat.Close()) }
	if err != nil {
		closer()
		return nil, info, nil, err
	}
	return src, info, closer, nil
}

var _ stream.FragmentSource = (*segReader)(nil)
