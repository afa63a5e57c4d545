package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/matchlog/matchlog/internal/liveness"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Layout of archive-mark.dat (ArchiveMarkFile, schema 100 version 2). These
// are part of the file format: never change them.
const (
	MarkHeaderLength      = 8192 // ArchiveMarkFile.HEADER_LENGTH; the error log starts here
	MarkBlockLength       = 128
	MarkTemplateID        = 200
	MarkSchemaID          = 100
	MarkSchemaVersion     = 2
	markMessageHeaderSize = 8

	// DefaultMarkErrorBufferLength is Aeron's default archive error buffer
	// length (1 MiB).
	DefaultMarkErrorBufferLength = 1024 * 1024
	markPageSize                 = 4096

	// Offsets inside the MarkFileHeader block.
	markOffVersion              = 0
	markOffActivityTimestamp    = 8
	markOffStartTimestamp       = 16
	markOffPID                  = 24
	markOffControlStreamID      = 32
	markOffLocalControlStreamID = 36
	markOffEventsStreamID       = 40
	markOffHeaderLength         = 44
	markOffErrorBufferLength    = 48
	markOffArchiveID            = 56
)

// MarkFile is the content of archive-mark.dat.
type MarkFile struct {
	// Version is compose(3,1,0) once the archive is ready, 0 before.
	Version int32
	// ActivityTimestamp is epoch ms, refreshed about every second by a
	// running archive; -1 after a clean stop.
	ActivityTimestamp    int64
	StartTimestamp       int64
	PID                  int64
	ControlStreamID      int32
	LocalControlStreamID int32
	EventsStreamID       int32
	HeaderLength         int32 // 8192
	ErrorBufferLength    int32
	ArchiveID            int64 // -1 when not set
	ControlChannel       string
	LocalControlChannel  string
	EventsChannel        string
	AeronDirectory       string

	// HeaderOffset is where the MarkFileHeader block starts: 8 after the
	// SBE message header, or 0 in a legacy file without one. Decoding sets
	// it; encoding always writes the message header.
	HeaderOffset int
}

// IsLive reports whether an archive is running on this mark file, by the
// rule of internal/liveness: it is ready (non-zero version), its activity
// timestamp is within timeoutMs of nowMs, and the process it names still
// runs. A cleanly stopped archive (activity -1) is not live; neither is
// one whose process was killed, however fresh its timestamp.
func (m *MarkFile) IsLive(nowMs, timeoutMs int64) bool {
	return m.CheckLive("", nowMs, time.Duration(timeoutMs)*time.Millisecond) != nil
}

// CheckLive is IsLive as an error wrapping ErrArchiveActive that names
// file, the pid and the timestamp's age, or nil.
func (m *MarkFile) CheckLive(file string, nowMs int64, timeout time.Duration) error {
	return liveness.Check(liveness.Mark{File: file, Ready: m.Version != 0, ActivityMs: m.ActivityTimestamp, PID: m.PID},
		nowMs, timeout, ErrArchiveActive)
}

// CheckLive refuses an archive directory whose mark file shows a running
// archive (see IsLive), with an error wrapping ErrArchiveActive that names
// the file, the pid and how old the activity timestamp is. A missing or
// unreadable mark file is no running archive: nil. It only reads.
func CheckLive(fsys vfs.FS, dir string, nowMs int64, timeout time.Duration) error {
	m, err := ReadMarkFileIn(fsys, dir)
	if err != nil {
		return nil
	}
	return m.CheckLive(fsys.Join(dir, MarkFileName), nowMs, timeout)
}

// MarkFileLength is the file length Aeron gives a mark file:
// align(8192 + errorBufferLength, 4096).
func MarkFileLength(errorBufferLength int32) int64 {
	return alignInt64(MarkHeaderLength+int64(max(errorBufferLength, 0)), markPageSize)
}

// EncodeMarkHeader returns the first MarkHeaderLength bytes of a mark file
// holding m: message header, block and strings, zeros after. Version is
// written as given; CreateMarkFile writes it separately, last.
func EncodeMarkHeader(m *MarkFile) ([]byte, error) {
	n := markMessageHeaderSize + MarkBlockLength
	strs := []string{m.ControlChannel, m.LocalControlChannel, m.EventsChannel, m.AeronDirectory}
	for _, s := range strs {
		n += 4 + len(s)
	}
	if n > MarkHeaderLength {
		return nil, fmt.Errorf("archive: mark file header needs %d bytes, more than %d", n, MarkHeaderLength)
	}
	b := make([]byte, MarkHeaderLength)
	binary.LittleEndian.PutUint16(b[0:], MarkBlockLength)
	binary.LittleEndian.PutUint16(b[2:], MarkTemplateID)
	binary.LittleEndian.PutUint16(b[4:], MarkSchemaID)
	binary.LittleEndian.PutUint16(b[6:], MarkSchemaVersion)
	h := b[markMessageHeaderSize:]
	binary.LittleEndian.PutUint32(h[markOffVersion:], uint32(m.Version))
	putI64(h, markOffActivityTimestamp, m.ActivityTimestamp)
	putI64(h, markOffStartTimestamp, m.StartTimestamp)
	putI64(h, markOffPID, m.PID)
	binary.LittleEndian.PutUint32(h[markOffControlStreamID:], uint32(m.ControlStreamID))
	binary.LittleEndian.PutUint32(h[markOffLocalControlStreamID:], uint32(m.LocalControlStreamID))
	binary.LittleEndian.PutUint32(h[markOffEventsStreamID:], uint32(m.EventsStreamID))
	binary.LittleEndian.PutUint32(h[markOffHeaderLength:], uint32(m.HeaderLength))
	binary.LittleEndian.PutUint32(h[markOffErrorBufferLength:], uint32(m.ErrorBufferLength))
	putI64(h, markOffArchiveID, m.ArchiveID)
	off := markMessageHeaderSize + MarkBlockLength
	for _, s := range strs {
		binary.LittleEndian.PutUint32(b[off:], uint32(len(s)))
		off += 4 + copy(b[off+4:], s)
	}
	return b, nil
}

// DecodeMarkFile decodes a mark file from its first bytes (at least the
// header block). It accepts legacy files without a message header, and
// checks neither version nor liveness.
func DecodeMarkFile(b []byte) (*MarkFile, error) {
	m := &MarkFile{}
	blockLength := MarkBlockLength
	if len(b) >= markMessageHeaderSize &&
		binary.LittleEndian.Uint16(b[2:]) == MarkTemplateID && binary.LittleEndian.Uint16(b[4:]) == MarkSchemaID {
		m.HeaderOffset = markMessageHeaderSize
		blockLength = int(binary.LittleEndian.Uint16(b[0:]))
		if blockLength < markOffArchiveID+8 {
			return nil, corruptf("mark file: offset 0: block length %d is shorter than %d", blockLength, markOffArchiveID+8)
		}
	}
	if len(b) < m.HeaderOffset+blockLength {
		return nil, corruptf("mark file: %d bytes, shorter than the %d-byte header block", len(b), m.HeaderOffset+blockLength)
	}
	h := b[m.HeaderOffset:]
	m.Version = int32(binary.LittleEndian.Uint32(h[markOffVersion:]))
	m.ActivityTimestamp = int64(binary.LittleEndian.Uint64(h[markOffActivityTimestamp:]))
	m.StartTimestamp = int64(binary.LittleEndian.Uint64(h[markOffStartTimestamp:]))
	m.PID = int64(binary.LittleEndian.Uint64(h[markOffPID:]))
	m.ControlStreamID = int32(binary.LittleEndian.Uint32(h[markOffControlStreamID:]))
	m.LocalControlStreamID = int32(binary.LittleEndian.Uint32(h[markOffLocalControlStreamID:]))
	m.EventsStreamID = int32(binary.LittleEndian.Uint32(h[markOffEventsStreamID:]))
	m.HeaderLength = int32(binary.LittleEndian.Uint32(h[markOffHeaderLength:]))
	m.ErrorBufferLength = int32(binary.LittleEndian.Uint32(h[markOffErrorBufferLength:]))
	m.ArchiveID = int64(binary.LittleEndian.Uint64(h[markOffArchiveID:]))
	off := m.HeaderOffset + blockLength
	for i, dst := range []*string{&m.ControlChannel, &m.LocalControlChannel, &m.EventsChannel, &m.AeronDirectory} {
		if len(b)-off < 4 {
			return nil, corruptf("mark file: offset %d: string %d length cut off (file has %d bytes)", off, i, len(b))
		}
		n := uint64(binary.LittleEndian.Uint32(b[off:]))
		if n > uint64(len(b)-off-4) || off+4+int(n) > MarkHeaderLength {
			return nil, corruptf("mark file: offset %d: string %d of length %d runs past the %d-byte header", off, i, n, MarkHeaderLength)
		}
		*dst = string(b[off+4 : off+4+int(n)])
		off += 4 + int(n)
	}
	return m, nil
}

// ReadMarkFile reads and decodes the mark file in f.
func ReadMarkFile(f vfs.File) (*MarkFile, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("archive: mark file %s: %w", f.Name(), err)
	}
	n := min(size, MarkHeaderLength)
	b := make([]byte, n)
	if got, err := f.ReadAt(b, 0); int64(got) != n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("archive: mark file %s: read %d of %d bytes: %w", f.Name(), got, n, err)
	}
	m, err := DecodeMarkFile(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, f.Name())
	}
	return m, nil
}

// CreateMarkFile writes m into the empty file f, as Aeron does: the file is
// sized to MarkFileLength(m.ErrorBufferLength) (zeros: an empty error log),
// every field but the version is written, then the version is written last
// to signal readiness, then the file is synced. A zero m.Version is written
// as SemanticVersion; a zero HeaderLength as 8192.
func CreateMarkFile(f vfs.File, m MarkFile) error {
	if m.Version == 0 {
		m.Version = SemanticVersion
	}
	if m.HeaderLength == 0 {
		m.HeaderLength = MarkHeaderLength
	}
	version := m.Version
	m.Version = 0
	b, err := EncodeMarkHeader(&m)
	if err != nil {
		return err
	}
	if size, err := f.Size(); err != nil {
		return fmt.Errorf("archive: mark file %s: %w", f.Name(), err)
	} else if size != 0 {
		return fmt.Errorf("archive: mark file %s: file is not empty (%d bytes)", f.Name(), size)
	}
	if err := f.Truncate(MarkFileLength(m.ErrorBufferLength)); err != nil {
		return fmt.Errorf("archive: mark file %s: %w", f.Name(), err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("archive: mark file %s: %w", f.Name(), err)
	}
	var v [4]byte
	binary.LittleEndian.PutUint32(v[:], uint32(version))
	if _, err := f.WriteAt(v[:], markMessageHeaderSize+markOffVersion); err != nil {
		return fmt.Errorf("archive: mark file %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("archive: mark file %s: sync: %w", f.Name(), err)
	}
	return nil
}

// UpdateMarkActivity writes the activity timestamp (epoch ms) of the mark
// file in f, whose header block is at headerOffset (MarkFile.HeaderOffset,
// 8 for files this package writes). Use NullTimestamp to signal a clean
// stop, as Aeron's signalTerminated.
func UpdateMarkActivity(f vfs.File, headerOffset int, timestampMs int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(timestampMs))
	if _, err := f.WriteAt(b[:], int64(headerOffset+markOffActivityTimestamp)); err != nil {
		return fmt.Errorf("archive: mark file %s: update activity timestamp: %w", f.Name(), err)
	}
	return nil
}

// MarkStopped marks the mark file of the archive directory dir stopped
// (activity NullTimestamp, as a clean stop leaves it), for an owner that
// knows the archive that wrote it is gone (a node restarting after its own
// crash). No mark file is not an error; one that does not decode is left
// as it is, for Open to judge.
func MarkStopped(fsys vfs.FS, dir string) error {
	f, err := fsys.OpenRW(fsys.Join(dir, MarkFileName))
	if errors.Is(err, vfs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive: mark file: %w", err)
	}
	m, rerr := ReadMarkFile(f)
	if rerr == nil {
		err = UpdateMarkActivity(f, m.HeaderOffset, NullTimestamp)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
