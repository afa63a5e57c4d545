package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/liveness"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Layout of cluster-mark.dat (Aeron's ClusterMarkFile, mark codecs schema
// 110 version 2). Part of the file format: never change.
const (
	MarkFileName          = "cluster-mark.dat"
	markHeaderLength      = 8192
	markBlockLength       = 128
	markTemplateID        = 200
	markSchemaID          = 110
	markSchemaVersion     = 2
	markVersion           = 3 << 8 // compose(0, 3, 0)
	markComponentCM       = 1
	markErrorBufferLength = 64 * 1024
)

// writeMarkFile creates or refreshes cluster-mark.dat as a consensus
// module's, with the version written last.
func writeMarkFile(fsys vfs.FS, dir string, nowMs int64, clusterDir string) (vfs.File, error) {
	path := fsys.Join(dir, MarkFileName)
	f, err := fsys.OpenRW(path)
	created := false
	if errors.Is(err, vfs.ErrNotExist) {
		f, err = fsys.Create(path)
		created = true
	}
	if err != nil {
		return nil, err
	}
	b := make([]byte, markHeaderLength)
	le := binary.LittleEndian
	le.PutUint16(b[0:], markBlockLength)
	le.PutUint16(b[2:], markTemplateID)
	le.PutUint16(b[4:], markSchemaID)
	le.PutUint16(b[6:], markSchemaVersion)
	h := b[8:]
	le.PutUint32(h[4:], markComponentCM)
	le.PutUint64(h[8:], uint64(nowMs))  // activity
	le.PutUint64(h[16:], uint64(nowMs)) // start
	le.PutUint64(h[24:], uint64(os.Getpid()))
	le.PutUint64(h[32:], ^uint64(0)) // candidateTermId -1
	le.PutUint32(h[40:], 10)         // archive stream
	le.PutUint32(h[44:], 104)        // service stream
	le.PutUint32(h[48:], 105)        // consensus module stream
	le.PutUint32(h[52:], 101)        // ingress stream
	le.PutUint32(h[56:], 0)          // member id
	le.PutUint32(h[60:], ^uint32(0)) // service id -1
	le.PutUint32(h[64:], markHeaderLength)
	le.PutUint32(h[68:], markErrorBufferLength)
	le.PutUint32(h[72:], 0) // cluster id
	off := 8 + markBlockLength
	for _, s := range []string{"", "aeron:ipc?term-length=128k", "aeron:ipc", "matchlog", "", clusterDir} {
		le.PutUint32(b[off:], uint32(len(s)))
		off += 4 + copy(b[off+4:], s)
	}
	if _, err = f.WriteAt(b, 0); err == nil {
		err = f.Truncate(markHeaderLength + markErrorBufferLength)
	}
	if err == nil {
		var v [4]byte
		le.PutUint32(v[:], markVersion)
		_, err = f.WriteAt(v[:], 8)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil && created {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MarkFile is what the tools read of cluster-mark.dat (Aeron's
// ClusterMarkFile: SBE message header, the MarkFileHeader block at offset
// 8, then the varAscii strings aeronDirectory, controlChannel,
// ingressChannel, serviceName, authenticator, servicesClusterDir;
// aeron-formats.md §3.2).
type MarkFile struct {
	Version           int32  `json:"version" doc:"the mark file's semantic version (major<<16 | minor<<8 | patch)"`
	ComponentType     int32  `json:"component_type"`
	ActivityTimestamp int64  `json:"activity_timestamp_ms" doc:"epoch ms of the last activity; -1: stopped cleanly"`
	StartTimestamp    int64  `json:"start_timestamp_ms" doc:"epoch ms"`
	PID               int64  `json:"pid"`
	ServiceName       string `json:"service_name" doc:"matchlog for a matchlog node"`
	ClusterDir        string `json:"cluster_dir"`
	// MemberID and ClusterID are the consensus module's (not in the
	// tools' JSON).
	MemberID  int32 `json:"-"`
	ClusterID int32 `json:"-"`
}

// MatchlogServiceName is the serviceName a matchlog node writes into its
// cluster-mark.dat (Aeron's consensus module leaves it empty).
const MatchlogServiceName = "matchlog"

// IsMatchlog reports whether a matchlog node wrote the file: a consensus
// module's mark file naming service MatchlogServiceName.
func (m *MarkFile) IsMatchlog() bool {
	return m.ComponentType == markComponentCM && m.ServiceName == MatchlogServiceName
}

// ErrForeignMarkFile: the cluster directory's mark file was written by
// another program (Aeron, or another service): matchlog does not open the
// directory and never overwrites that file.
var ErrForeignMarkFile = errors.New("cluster: the cluster directory belongs to another program")

// DecodeMarkFile decodes cluster-mark.dat from its bytes. It checks the
// message header (schema 110, template 200) and the string lengths, not
// the version or liveness.
func DecodeMarkFile(b []byte) (*MarkFile, error) {
	le := binary.LittleEndian
	const hdr = 8
	if len(b) < hdr+76 || le.Uint16(b[4:]) != markSchemaID || le.Uint16(b[2:]) != markTemplateID {
		return nil, fmt.Errorf("not a cluster mark file (schema %d, template %d, at least %d bytes)", markSchemaID, markTemplateID, hdr+76)
	}
	h := b[hdr:]
	m := &MarkFile{
		Version:           int32(le.Uint32(h[0:])),
		ComponentType:     int32(le.Uint32(h[4:])),
		ActivityTimestamp: int64(le.Uint64(h[8:])),
		StartTimestamp:    int64(le.Uint64(h[16:])),
		PID:               int64(le.Uint64(h[24:])),
		MemberID:          int32(le.Uint32(h[56:])),
		ClusterID:         int32(le.Uint32(h[72:])),
	}
	off := hdr + int(le.Uint16(b[0:])) // the block length from the header
	var strs [6]string
	for i := range strs {
		if off+4 > len(b) || off+4 > markHeaderLength {
			return m, fmt.Errorf("cluster mark file truncated after %d strings", i)
		}
		n := int(le.Uint32(b[off:]))
		if n < 0 || off+4+n > len(b) || off+4+n > markHeaderLength {
			return m, fmt.Errorf("cluster mark file: string %d has length %d", i, n)
		}
		strs[i] = string(b[off+4 : off+4+n])
		off += 4 + n
	}
	m.ServiceName, m.ClusterDir = strs[3], strs[5]
	return m, nil
}

// ReadMarkFile reads and decodes cluster-mark.dat in the cluster directory
// cdir (a node directory's ClusterDirName). It only reads.
func ReadMarkFile(fsys vfs.FS, cdir string) (*MarkFile, error) {
	return readMarkFile(fsys, fsys.Join(cdir, MarkFileName))
}

// markDecodeError is a mark file that was read but does not decode.
type markDecodeError struct{ err error }

func (e *markDecodeError) Error() string { return e.err.Error() }
func (e *markDecodeError) Unwrap() error { return e.err }

func readMarkFile(fsys vfs.FS, path string) (*MarkFile, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b := make([]byte, min(size, markHeaderLength))
	if n, err := f.ReadAt(b, 0); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := DecodeMarkFile(b)
	if err != nil {
		return m, &markDecodeError{fmt.Errorf("%s: %w", path, err)}
	}
	return m, nil
}

// checkLive is the liveness rule (internal/liveness) applied to m.
func (m *MarkFile) checkLive(file string, nowMs int64, timeout time.Duration) error {
	return liveness.Check(liveness.Mark{File: file, Ready: m.Version != 0, ActivityMs: m.ActivityTimestamp, PID: m.PID},
		nowMs, timeout, ErrNodeRunning)
}

// CheckLive refuses a node directory (holding ClusterDirName and
// ArchiveDirName) in which a node or an archive runs: cluster-mark.dat or
// archive-mark.dat ready, its activity timestamp within timeout of nowMs
// (epoch ms) and the process it names still running. A process killed with
// SIGKILL leaves a fresh timestamp and a pid that is gone: not live. The
// error wraps ErrNodeRunning (or archive.ErrArchiveActive) and names the
// file, the pid and the timestamp's age. Missing or unreadable mark files
// are no running node. Every offline tool that writes calls it, and Open
// applies the same rule; it only reads.
func CheckLive(fsys vfs.FS, dir string, nowMs int64, timeout time.Duration) error {
	cdir := fsys.Join(dir, ClusterDirName)
	if m, err := ReadMarkFile(fsys, cdir); err == nil {
		if err := m.checkLive(fsys.Join(cdir, MarkFileName), nowMs, timeout); err != nil {
			return err
		}
	}
	return archive.CheckLive(fsys, fsys.Join(dir, ArchiveDirName), nowMs, timeout)
}

// checkMarkFile is what Open checks of cdir/cluster-mark.dat before it
// writes anything: a mark file another program wrote (not a consensus
// module's naming MatchlogServiceName, or none beside a recording.log or an
// archive catalog) is
// refused with ErrForeignMarkFile, and a live node (see CheckLive) with
// ErrNodeRunning. A missing file, and one whose version is not written yet
// (a creation cut by a crash: shorter than a header, zeros, or the header
// without its last write), is no node.
func checkMarkFile(fsys vfs.FS, cdir, adir string, nowMs int64, timeout time.Duration) error {
	path := fsys.Join(cdir, MarkFileName)
	m, err := readMarkFile(fsys, path)
	var derr *markDecodeError
	if err != nil && !errors.Is(err, vfs.ErrNotExist) && !errors.As(err, &derr) {
		return fmt.Errorf("cluster: mark file: %w", err)
	}
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		// A node writes its mark file before recording.log: a recording
		// log without one is another program's.
		for _, f := range []struct{ dir, name string }{{cdir, recordinglog.FileName}, {adir, archive.CatalogFileName}} {
			if _, serr := fsys.Stat(fsys.Join(f.dir, f.name)); serr == nil {
				return fmt.Errorf("%w: %s holds %s but %s has no %s, which a matchlog node writes first: another program wrote it; matchlog does not open it",
					ErrForeignMarkFile, f.dir, f.name, cdir, MarkFileName)
			}
		}
		return nil
	case m == nil && markTornAtCreation(fsys, path):
		return nil
	case m == nil:
		return fmt.Errorf("%w: %s: %v; matchlog does not overwrite it: give the node a directory of its own, or move the file aside if it is known to be a matchlog node's, damaged",
			ErrForeignMarkFile, path, err)
	case m.Version == 0:
		return nil // not ready: writeMarkFile was cut before its last write
	case err != nil:
		return fmt.Errorf("%w: %v; matchlog does not overwrite it", ErrForeignMarkFile, err)
	}
	if !m.IsMatchlog() {
		who := "another service"
		if m.ServiceName == "" && m.ComponentType == markComponentCM {
			who = "Aeron's consensus module"
		}
		return fmt.Errorf("%w: %s was written by %s (component type %d, service name %q, pid %d), not by a matchlog node; "+
			"matchlog does not open the directory and never overwrites that file: give the node a directory of its own "+
			"(read this one with `matchlog cluster describe`)", ErrForeignMarkFile, path, who, m.ComponentType, m.ServiceName, m.PID)
	}
	return m.checkLive(path, nowMs, timeout)
}

// checkArchiveMark refuses a node's archive directory whose
// archive-mark.dat shows another running archive (the liveness rule), before
// openArchive marks a crashed node's archive mark file stopped. The file of
// an archive of this process (a node of this process that crashed in a
// test) is left to that rule's timestamp.
func checkArchiveMark(fsys vfs.FS, adir string, nowMs int64, timeout time.Duration) error {
	path := fsys.Join(adir, archive.MarkFileName)
	f, err := fsys.Open(path)
	if errors.Is(err, vfs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: archive mark file: %w", err)
	}
	defer f.Close()
	m, err := archive.ReadMarkFile(f)
	if errors.Is(err, archive.ErrCorrupt) {
		return nil // torn: the archive recreates it
	}
	if err != nil {
		return fmt.Errorf("cluster: archive mark file: %w", err)
	}
	if m.PID == int64(os.Getpid()) {
		return nil
	}
	return m.CheckLive(path, nowMs, timeout)
}

// markTornAtCreation reports whether the file at path is shorter than a
// mark file's header or holds only zeros there: writeMarkFile was cut
// before its first write completed.
func markTornAtCreation(fsys vfs.FS, path string) bool {
	f, err := fsys.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	const n = 8 + 76
	if size, err := f.Size(); err == nil && size < n {
		return true
	}
	b := make([]byte, n)
	if got, _ := f.ReadAt(b, 0); got < n {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// stampMarkFile writes the activity timestamp (-1 after a clean stop).
func stampMarkFile(f vfs.File, ts int64) error {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(ts))
	_, err := f.WriteAt(v[:], 16)
	return err
}
