package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/matchlog/matchlog/internal/vfs"
)

// File names in a backup directory (never change: the planner and later
// versions read them).
const (
	// ManifestFileName is the manifest, written last and only after the
	// image verified.
	ManifestFileName = "backup.json"
	// DrillLogFileName is the drill log: one JSON object a line, appended
	// by every drill.
	DrillLogFileName = "drills.jsonl"
	// manifestVersion is the manifest's format version.
	manifestVersion = 1
)

// File is one file of the image.
type File struct {
	Path   string `json:"path" doc:"relative to the backup directory: cluster/... or archive/..."`
	Size   int64  `json:"size_bytes"`
	SHA256 string `json:"sha256"`
}

// Manifest describes a verified backup image (BDIR/backup.json).
type Manifest struct {
	Version int    `json:"version"`
	Source  string `json:"source" doc:"the node directory the image was taken from"`
	// SourceRunning: a node was running on the source while it was read.
	SourceRunning bool   `json:"source_running" doc:"a node ran on the source while it was read"`
	Created       string `json:"created" doc:"RFC 3339, UTC"`
	CreatedMs     int64  `json:"created_ms" doc:"epoch ms"`
	// S is the log position of the snapshot set in the image; B the
	// image's position, the end of its log.
	S                int64 `json:"S" doc:"log position of the image's snapshot set"`
	B                int64 `json:"B" doc:"the image's position: the end of its log"`
	LeadershipTermID int64 `json:"leadership_term_id" doc:"of the snapshot set"`
	// SourceLogRecordingID is the log recording read in the source;
	// LogRecordingID its copy in the image.
	SourceLogRecordingID int64 `json:"source_log_recording_id"`
	LogRecordingID       int64 `json:"log_recording_id"`
	// SnapshotRecordingIDs are the set's recordings in the image: the
	// consensus module's, then service 0's.
	SnapshotRecordingIDs []int64 `json:"snapshot_recording_ids"`
	TermLength           int32   `json:"term_length"`
	SegmentLength        int32   `json:"segment_length"`
	MTU                  int32   `json:"mtu"`
	AppVersion           int32   `json:"app_version" doc:"the engine snapshot's; a node started from the image uses it"`
	// SnapshotStateHash is the engine snapshot's hash (at S), StateHash
	// the engine's after the replay of the image's log (at B).
	SnapshotStateHash string `json:"snapshot_state_hash" doc:"engine state hash at S"`
	StateHash         string `json:"state_hash" doc:"engine state hash at B, 16 hex digits"`
	ReplayedEntries   int64  `json:"replayed_entries" doc:"log entries the verification replayed from S to B"`
	Files             []File `json:"files"`
	Bytes             int64  `json:"bytes" doc:"total of the files' sizes"`
	// Verified: the image was restored to a scratch directory, a node
	// started from it (strict snapshot load, replay to B) and its state
	// hash taken. A manifest is only written when this holds.
	Verified bool `json:"verified" doc:"always true: a manifest is written only after the image verified"`
}

// DrillRecord is one line of the drill log (BDIR/drills.jsonl).
type DrillRecord struct {
	Date   string `json:"date" doc:"RFC 3339, UTC: when the drill started"`
	UnixMs int64  `json:"unix_ms"`
	OK     bool   `json:"ok"`
	Why    string `json:"why,omitempty" doc:"why the drill failed"`
	// WorkDir is where the image was restored.
	WorkDir         string  `json:"work_dir" doc:"where the image was restored"`
	DurationSeconds float64 `json:"duration_seconds" doc:"restore, start and check, end to end"`
	// RestoreBytes were copied in RestoreSeconds.
	RestoreBytes        int64   `json:"restore_bytes" doc:"the image's files' sizes"`
	RestoreWrittenBytes int64   `json:"restore_written_bytes" doc:"what was written: a sparse segment's unwritten holes stay holes"`
	RestoreSeconds      float64 `json:"restore_seconds"`
	RestoreBytesPerSec  float64 `json:"restore_bytes_per_sec" doc:"0 when not measured"`
	// ReplayedPositions (B - S) were replayed in ReplaySeconds, the
	// node's replay of the log after the snapshot load.
	ReplayedPositions     int64   `json:"replayed_positions"`
	ReplayedEntries       int64   `json:"replayed_entries"`
	ReplaySeconds         float64 `json:"replay_seconds"`
	ReplayPositionsPerSec float64 `json:"replay_positions_per_sec" doc:"0 when not measured"`
	StartSeconds          float64 `json:"start_seconds" doc:"the node's whole start: snapshot load and replay"`
	B                     int64   `json:"B" doc:"the manifest's B, where the replay ends"`
	StateHash             string  `json:"state_hash" doc:"what the started node had; empty when it did not start"`
	ExpectedStateHash     string  `json:"expected_state_hash" doc:"the manifest's"`
}

// Time is when the drill ran.
func (d DrillRecord) Time() time.Time { return time.UnixMilli(d.UnixMs).UTC() }

// ErrNoManifest: the directory holds no manifest (no backup, or one whose
// creation did not finish).
var ErrNoManifest = errors.New("backup: no manifest: not a verified backup image")

// ReadManifest reads dir's manifest. A manifest that does not parse, or
// is not marked verified, is an error.
func ReadManifest(fsys vfs.FS, dir string) (*Manifest, error) {
	b, err := readAll(fsys, fsys.Join(dir, ManifestFileName))
	if errors.Is(err, vfs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no %s (create one with `matchlog backup create`)", ErrNoManifest, dir, ManifestFileName)
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("backup: %s: %w", fsys.Join(dir, ManifestFileName), err)
	}
	switch {
	case m.Version != manifestVersion:
		return nil, fmt.Errorf("backup: %s: version %d, this build reads %d", fsys.Join(dir, ManifestFileName), m.Version, manifestVersion)
	case !m.Verified:
		return nil, fmt.Errorf("backup: %s: the image is not marked verified", fsys.Join(dir, ManifestFileName))
	case m.B < m.S || m.S < 0:
		return nil, fmt.Errorf("backup: %s: positions S = %d, B = %d do not describe an image", fsys.Join(dir, ManifestFileName), m.S, m.B)
	}
	return &m, nil
}

// ReadDrills returns every record of dir's drill log, oldest first (none:
// no drill yet). A line that does not parse is an error naming it.
func ReadDrills(fsys vfs.FS, dir string) ([]DrillRecord, error) {
	b, err := readAll(fsys, fsys.Join(dir, DrillLogFileName))
	if errors.Is(err, vfs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	var out []DrillRecord
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var d DrillRecord
		if err := json.Unmarshal(line, &d); err != nil {
			return nil, fmt.Errorf("backup: %s line %d: %w", fsys.Join(dir, DrillLogFileName), i+1, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// LastDrill is the newest record of dir's drill log (nil: none).
func LastDrill(fsys vfs.FS, dir string) (*DrillRecord, error) {
	ds, err := ReadDrills(fsys, dir)
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	d := ds[len(ds)-1]
	return &d, nil
}

// appendDrill appends d to dir's drill log and syncs it.
func appendDrill(fsys vfs.FS, dir string, d DrillRecord) error {
	line, err := json.Marshal(d)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	p := fsys.Join(dir, DrillLogFileName)
	f, err := fsys.OpenRW(p)
	created := false
	if errors.Is(err, vfs.ErrNotExist) {
		f, err = fsys.Create(p)
		created = true
	}
	if err != nil {
		return fmt.Errorf("backup: drill log: %w", err)
	}
	size, err := f.Size()
	if err == nil {
		_, err = f.WriteAt(line, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && created {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("backup: drill log %s: %w", p, err)
	}
	return nil
}

// writeManifest writes m as dir's manifest: under a temporary name,
// synced, renamed into place, the directory synced.
func writeManifest(fsys vfs.FS, dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp := fsys.Join(dir, ManifestFileName+".tmp")
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("backup: manifest: %w", err)
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, fsys.Join(dir, ManifestFileName))
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("backup: manifest: %w", err)
	}
	return nil
}

func readAll(fsys vfs.FS, p string) ([]byte, error) {
	size, err := fsys.Stat(p)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

// CheckFiles checks, by their sizes only (a drill checks their digests),
// that the image's files are all in dir as the manifest m lists them.
func CheckFiles(fsys vfs.FS, dir string, m *Manifest) error {
	var errs []error
	for _, f := range m.Files {
		size, err := fsys.Stat(fsys.Join(dir, f.Path))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", f.Path, err))
		case size != f.Size:
			errs = append(errs, fmt.Errorf("%s has %d bytes, the manifest says %d", f.Path, size, f.Size))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrImageChanged, errors.Join(errs...))
	}
	return nil
}
