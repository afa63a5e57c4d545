package archive

import (
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Settling an active recording, read-only.
//
// A recording whose stop position is -1 in the catalog is active: it is
// being recorded, or its archive was killed while it was (a crash never
// writes the stop). When Aeron's archive next opens the catalog it settles
// every such VALID entry (Catalog.refreshAndFixDescriptor): the stop becomes
// the end of the last whole frame of the recording's highest segment file
// (Catalog.computeStopPosition, the same scan ArchiveTool verify runs), or
// the start position when the recording has no segment file, and the stop
// timestamp becomes the time of the opening. A last frame that straddles a
// page boundary and cannot be shown whole makes the archive refuse to start
// until ArchiveTool verify has decided about it. Aeron's tools that ask a
// running archive (ClusterTool recovery-plan) therefore see the settled stop.
//
// SettleStopPosition and SettledCatalog compute that stop without writing
// anything: the catalog and the segment files stay as they are, so offline
// tools show what Aeron will see, on a directory they must not change.

// ErrUnsettled is wrapped by the errors of SettleStopPosition when an
// active recording's stop cannot be settled as Aeron's archive would
// settle it without a repair first.
var ErrUnsettled = errors.New("archive: active recording cannot be settled")

// SettleStopPosition returns the stop position entry e has once Aeron's
// archive has opened the catalog of dir: its stored stop position unless e
// is VALID with stop position -1, in which case the end of the last whole
// frame of its highest segment file (ComputeStopPosition), and settled
// true. Nothing is written. It fails, wrapping ErrUnsettled and naming the
// fix, when that segment ends with a last frame only suspected torn
// (FrameProblem.Unverified: Aeron's archive refuses to start then) or with
// an InvalidFrame (the data is damaged, not torn). A torn tail that is
// certain is not counted, as the archive's scan stops before it.
func SettleStopPosition(fsys vfs.FS, dir string, e CatalogEntry) (stop int64, settled bool, err error) {
	d := e.Descriptor
	if e.State != StateValid || d.StopPosition != NullPosition {
		return d.StopPosition, false, nil
	}
	stop, res, last, err := computeStopPosition(fsys, dir, d)
	if err != nil {
		return NullPosition, false, err
	}
	if p := res.Problem; p != nil && (p.Unverified || p.Kind == InvalidFrame) {
		fix := "Aeron's archive refuses to open this catalog until the frame is decided: ArchiveTool verify asks whether to cut it, " +
			"`matchlog archive verify --truncate` keeps it and writes the stop position after it"
		if p.Kind == InvalidFrame {
			fix = "the data is damaged, not torn: `matchlog archive verify --mark-invalid` marks the recording INVALID; restore the archive from a backup or rebuild the member"
		}
		return NullPosition, false, fmt.Errorf("%w: recording %d has stop position -1 and its last segment %s: %v; %s",
			ErrUnsettled, d.RecordingID, last, p, fix)
	}
	return stop, true, nil
}

// SettledCatalog is a read-only view of a catalog whose active recordings
// are settled (see SettleStopPosition): Descriptor returns the descriptor
// of a VALID recording with its settled stop position. It is what a
// recovery plan reads to agree with Aeron's, which asks the running
// archive. The catalog and the files are never written.
type SettledCatalog struct {
	FS vfs.FS
	// Dir is the archive directory (holding archive.catalog).
	Dir     string
	Catalog *Catalog
}

// Descriptor returns recording id's VALID descriptor with its stop
// position settled; StopTimestamp stays as stored (-1 for a settled one:
// Aeron's archive stamps the time it opened the catalog).
func (s SettledCatalog) Descriptor(id int64) (RecordingDescriptor, error) {
	d, err := s.Catalog.Descriptor(id)
	if err != nil {
		return d, err
	}
	stop, _, err := SettleStopPosition(s.FS, s.Dir, CatalogEntry{State: StateValid, Descriptor: d})
	if err != nil {
		return d, err
	}
	d.StopPosition = stop
	return d, nil
}
