package recordinglog

import (
	"errors"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/internal/vfs"
)

// BackupFileName is the copy of recording.log that SeedFromSnapshot keeps
// of the file it replaces (ClusterTool's recording.log.bak).
const BackupFileName = FileName + ".bak"

// seedTempName is the file SeedFromSnapshot writes before it renames it
// over recording.log (ClusterTool's recording.log.tmp).
const seedTempName = FileName + ".tmp"

// ErrNoSnapshotToSeed: the recording log holds no valid consensus-module
// SNAPSHOT entry to seed a new log from.
var ErrNoSnapshotToSeed = errors.New("recordinglog: no valid consensus-module snapshot to seed from")

// ErrBackupExists: BackupFileName (or the temporary file) is already in
// the cluster directory; SeedFromSnapshot never overwrites it.
var ErrBackupExists = errors.New("recordinglog: the backup of recording.log already exists")

// SeedEntries returns the entries Aeron's ClusterTool
// seed-recording-log-from-snapshot writes (ClusterToolOperator
// .seedRecordingLogFromSnapshot) for entries in Aeron's sorted order (as
// Log.Entries returns them): the last valid consensus-module SNAPSHOT entry
// and, walking back from it, the valid SNAPSHOT entries of service 0, 1, …
// for as long as each is the next service's; in file order (service N-1 …
// 0, then the consensus module), each with termBaseLogPosition and
// logPosition 0 and its recording id, leadership term, timestamp and
// service id kept. ok is false when there is no valid consensus-module
// snapshot (Aeron then deletes recording.log). It is a pure function.
func SeedEntries(entries []Entry) (seeded []Entry, ok bool) {
	at := -1
	for i := len(entries) - 1; i >= 0; i-- {
		if isValidSnapshot(&entries[i]) && entries[i].ServiceID == ConsensusModuleServiceID {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, false
	}
	want := int32(ConsensusModuleServiceID)
	for i := at; i >= 0; i-- {
		e := &entries[i]
		if !isValidSnapshot(e) || e.ServiceID != want {
			break
		}
		seeded = append(seeded, Entry{RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			Timestamp: e.Timestamp, ServiceID: e.ServiceID, Type: TypeSnapshot, Valid: true})
		want++
	}
	for i, j := 0, len(seeded)-1; i < j; i, j = i+1, j-1 {
		seeded[i], seeded[j] = seeded[j], seeded[i]
	}
	for i := range seeded {
		seeded[i].Index = i
		seeded[i].Offset = int64(i * EntryLength)
	}
	return seeded, true
}

// Seeded is what SeedFromSnapshot did.
type Seeded struct {
	// Path is recording.log; BackupPath the byte-for-byte copy of the
	// file it replaced.
	Path, BackupPath string
	// Old are the entries before, in Aeron's order; New those written,
	// in file order.
	Old, New []Entry
}

// SeedFromSnapshot replaces dir/recording.log by SeedEntries of its
// entries, as ClusterTool seed-recording-log-from-snapshot does, but it
// refuses (changing nothing) where that tool would overwrite or delete:
// when dir holds BackupFileName or recording.log.tmp already
// (ErrBackupExists), and when there is no valid consensus-module snapshot
// (ErrNoSnapshotToSeed; ClusterTool deletes the file). A file that does
// not decode whole (a torn tail included) is refused too. It first copies
// recording.log byte for byte to BackupFileName, then writes the new
// entries to recording.log.tmp, syncs them and renames that over
// recording.log, syncing the directory after each step. When it fails
// before the rename it removes what it created; after the rename the new
// file is in place and the backup holds the old one.
func SeedFromSnapshot(fsys vfs.FS, dir string) (*Seeded, error) {
	path := fsys.Join(dir, FileName)
	bak, tmp := fsys.Join(dir, BackupFileName), fsys.Join(dir, seedTempName)
	for _, p := range []string{bak, tmp} {
		if _, err := fsys.Stat(p); err == nil {
			return nil, fmt.Errorf("%w: %s is there; it is never overwritten: move it aside (it may be the backup of an earlier seed) and run again", ErrBackupExists, p)
		} else if !errors.Is(err, vfs.ErrNotExist) {
			return nil, fmt.Errorf("recordinglog: seed: %w", err)
		}
	}
	l, err := Open(fsys, dir, Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	old := l.Entries()
	raw := make([]byte, l.end)
	if l.end > 0 {
		if n, err := l.f.ReadAt(raw, 0); n != len(raw) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			l.Close()
			return nil, fmt.Errorf("recordinglog: seed: read %s: %w", path, err)
		}
	}
	if err := l.Close(); err != nil {
		return nil, err
	}
	seeded, ok := SeedEntries(old)
	if !ok {
		return nil, fmt.Errorf("%w in %s: ClusterTool would delete the file; nothing was changed", ErrNoSnapshotToSeed, path)
	}
	var b []byte
	for _, e := range seeded {
		b = AppendEntry(b, e)
	}
	created := []string{}
	undo := func(err error) error {
		for i := len(created) - 1; i >= 0; i-- {
			if rerr := fsys.Remove(created[i]); rerr != nil {
				err = errors.Join(err, fmt.Errorf("recordinglog: seed: remove %s: %w", created[i], rerr))
			}
		}
		if len(created) > 0 {
			if serr := fsys.SyncDir(dir); serr != nil {
				err = errors.Join(err, serr)
			}
		}
		return err
	}
	write := func(p string, data []byte) error {
		f, err := fsys.Create(p)
		if err != nil {
			return fmt.Errorf("recordinglog: seed: %w", err)
		}
		created = append(created, p)
		if _, err := f.WriteAt(data, 0); err != nil {
			f.Close()
			return fmt.Errorf("recordinglog: seed: write %s: %w", p, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("recordinglog: seed: sync %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("recordinglog: seed: close %s: %w", p, err)
		}
		return fsys.SyncDir(dir)
	}
	if err := write(bak, raw); err != nil {
		return nil, undo(err)
	}
	if err := write(tmp, b); err != nil {
		return nil, undo(err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return nil, undo(fmt.Errorf("recordinglog: seed: rename %s to %s: %w", tmp, path, err))
	}
	if err := fsys.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("recordinglog: seed: %s is in place (the old file is %s), but syncing %s failed: %w", path, bak, dir, err)
	}
	return &Seeded{Path: path, BackupPath: bak, Old: old, New: seeded}, nil
}
