package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/matchlog/matchlog/internal/vfs"
	sbe "github.com/matchlog/matchlog/sbe/aeronarchivesbe"
)

// File names inside an archive directory (Archive.Configuration,
// ArchiveMarkFile).
const (
	CatalogFileName  = "archive.catalog"
	MarkFileName     = "archive-mark.dat"
	MarkLinkFileName = "archive-mark.lnk"
)

// Versions and layout constants of the catalog. They are part of the file
// format that Aeron's archive and tools read: never change them.
const (
	// SemanticVersion is ArchiveMarkFile.SEMANTIC_VERSION, compose(3, 1, 0),
	// written into the catalog header and the mark file.
	SemanticVersion int32 = 3<<16 | 1<<8 // 0x030100: major 3, minor 1, patch 0
	// MajorVersion is the major version a catalog or mark file must have.
	MajorVersion = 3

	// CatalogHeaderLength is the length of the CatalogHeader block and the
	// offset of the first entry (unless the catalog is legacy).
	CatalogHeaderLength = 32
	// DescriptorHeaderLength is the length of a RecordingDescriptorHeader.
	DescriptorHeaderLength = 32
	// DescriptorBlockLength is the fixed part of a RecordingDescriptor.
	DescriptorBlockLength = 80
	// minDescriptorLength is the fixed block plus three empty strings.
	minDescriptorLength = DescriptorBlockLength + 3*4

	// CatalogAlignment is the entry alignment of catalogs created now
	// (CACHE_LINE_LENGTH).
	CatalogAlignment = 64
	// LegacyCatalogAlignment is the alignment, and the first entry offset,
	// of a catalog whose header alignment is 0.
	LegacyCatalogAlignment = 1024

	// DefaultCatalogCapacity is Aeron's default catalog capacity.
	DefaultCatalogCapacity = 1024 * 1024
	// MinCatalogCapacity and MaxCatalogCapacity bound the capacity.
	MinCatalogCapacity = 32
	MaxCatalogCapacity = math.MaxInt32

	// NullPosition and NullTimestamp mark a recording still in progress.
	NullPosition  int64 = -1
	NullTimestamp int64 = -1
)

// Field offsets inside the RecordingDescriptor body (after the 32-byte
// descriptor header).
const (
	offControlSessionID  = 0
	offCorrelationID     = 8
	offRecordingID       = 16
	offStartTimestamp    = 24
	offStopTimestamp     = 32
	offStartPosition     = 40
	offStopPosition      = 48
	offInitialTermID     = 56
	offSegmentFileLength = 60
	offTermBufferLength  = 64
	offMTULength         = 68
	offSessionID         = 72
	offStreamID          = 76
)

// RecordingState is the state of a catalog entry (RecordingState in the SBE
// schema).
type RecordingState int32

// Recording states.
const (
	StateInvalid RecordingState = 0
	StateValid   RecordingState = 1
	StateDeleted RecordingState = 2
)

func (s RecordingState) String() string {
	switch s {
	case StateInvalid:
		return "INVALID"
	case StateValid:
		return "VALID"
	case StateDeleted:
		return "DELETED"
	}
	return fmt.Sprintf("RecordingState(%d)", int32(s))
}

// Errors a caller may test with errors.Is.
var (
	// ErrCorrupt marks every error about a damaged or unreadable catalog,
	// mark file or segment.
	ErrCorrupt = errors.New("archive: corrupt file")
	// ErrRecordingNotFound is returned for a recording id with no entry.
	ErrRecordingNotFound = errors.New("archive: recording not found")
	// ErrReadOnly is returned by updates on a catalog opened read-only.
	ErrReadOnly = errors.New("archive: catalog opened read-only")
)

// corruptf returns an error that satisfies errors.Is(err, ErrCorrupt).
func corruptf(format string, args ...any) error {
	return &corruptError{msg: "archive: " + fmt.Sprintf(format, args...)}
}

type corruptError struct{ msg string }

func (e *corruptError) Error() string        { return e.msg }
func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }

// RecordingDescriptor is the decoded body of a catalog entry.
type RecordingDescriptor struct {
	ControlSessionID  int64
	CorrelationID     int64
	RecordingID       int64
	StartTimestamp    int64 // epoch ms
	StopTimestamp     int64 // epoch ms, NullTimestamp while recording
	StartPosition     int64
	StopPosition      int64 // NullPosition while recording
	InitialTermID     int32
	SegmentFileLength int32
	TermBufferLength  int32
	MTULength         int32
	SessionID         int32
	StreamID          int32
	StrippedChannel   string
	OriginalChannel   string
	SourceIdentity    string
}

// CatalogEntry is one entry of the catalog, of any state.
type CatalogEntry struct {
	// Offset is the file offset of the entry's descriptor header.
	Offset int64
	// Length is the header's length field: the aligned entry length - 32.
	Length int32
	// State and Checksum are the header's fields.
	State    RecordingState
	Checksum int32
	// Descriptor is the decoded body.
	Descriptor RecordingDescriptor
}

// NewRecording holds what [Catalog.AddRecording] writes, like the arguments
// of Aeron's Catalog.addNewRecording. ControlSessionID and CorrelationID of
// the new descriptor are 0, as in Aeron; [Catalog.ExtendRecording] sets them.
type NewRecording struct {
	StartPosition     int64
	StopPosition      int64 // NullPosition for a recording that starts now
	StartTimestamp    int64
	StopTimestamp     int64 // NullTimestamp for a recording that starts now
	InitialTermID     int32
	SegmentFileLength int32
	TermBufferLength  int32
	MTULength         int32
	SessionID         int32
	StreamID          int32
	StrippedChannel   string
	OriginalChannel   string
	SourceIdentity    string
}

// CatalogOptions configure [CreateCatalog] and [OpenCatalog].
type CatalogOptions struct {
	// Capacity is the minimum file length. A new catalog gets this length
	// (DefaultCatalogCapacity when 0); an existing writable one shorter than
	// it is extended with zeros, as Aeron maps max(file size, capacity).
	Capacity int64
	// SyncLevel is Aeron's catalogFileSyncLevel: 0 never syncs, 1 calls
	// File.Sync after each update, 2 calls File.SyncAll.
	SyncLevel SyncLevel
	// ReadOnly opens without writing anything; updates fail with
	// ErrReadOnly, and a nextRecordingId lower than the last id + 1 is
	// tolerated (as Aeron does for a read-only catalog).
	ReadOnly bool
}

// catalogEntryRef locates one entry.
type catalogEntryRef struct {
	offset int // header offset
	frame  int // aligned entry length
	id     int64
}

// Catalog is an open archive.catalog. It keeps a copy of the file in memory
// (as Aeron maps it) and writes every change through to the file with
// positional writes, in Aeron's order, followed by a sync when SyncLevel > 0.
//
// A Catalog is not safe for concurrent use.
type Catalog struct {
	f         vfs.File
	name      string // f.Name(), for errors
	buf       []byte // the file, [0, capacity)
	readOnly  bool
	syncLevel SyncLevel
	err       error // sticky: a failed write leaves the catalog unusable

	version         int32
	alignment       int
	legacy          bool
	firstOffset     int
	nextOffset      int
	nextRecordingID int64

	// dirtyEnd is just past the last non-zero byte after the last entry
	// (== nextOffset when that space is zero, as it should be). Stale bytes
	// there, e.g. the body of an entry whose header write never happened,
	// are zeroed by the next AddRecording before its header is written.
	dirtyEnd int

	entries []catalogEntryRef // every entry, in file order
	valid   map[int64]int     // VALID recording id -> index in entries
}

// CreateCatalog writes a new, empty catalog into f, which must be empty:
// header version 0x030100, length 32, nextRecordingId 0, alignment 64, and
// zeros up to the capacity.
func CreateCatalog(f vfs.File, opts CatalogOptions) (*Catalog, error) {
	if opts.ReadOnly {
		return nil, errors.New("archive: CreateCatalog with ReadOnly set")
	}
	capacity := opts.Capacity
	if capacity == 0 {
		capacity = DefaultCatalogCapacity
	}
	if capacity < MinCatalogCapacity || capacity > MaxCatalogCapacity {
		return nil, fmt.Errorf("archive: catalog capacity %d outside [%d, %d]", capacity, MinCatalogCapacity, MaxCatalogCapacity)
	}
	if size, err := f.Size(); err != nil {
		return nil, fmt.Errorf("archive: catalog %s: %w", f.Name(), err)
	} else if size != 0 {
		return nil, fmt.Errorf("archive: catalog %s: file is not empty (%d bytes)", f.Name(), size)
	}
	if err := f.Truncate(capacity); err != nil {
		return nil, fmt.Errorf("archive: catalog %s: %w", f.Name(), err)
	}
	c := &Catalog{
		f:         f,
		name:      f.Name(),
		buf:       make([]byte, capacity),
		syncLevel: opts.SyncLevel,
		version:   SemanticVersion,
		alignment: CatalogAlignment,
		valid:     map[int64]int{},
	}
	c.firstOffset = CatalogHeaderLength
	c.nextOffset = CatalogHeaderLength
	c.dirtyEnd = CatalogHeaderLength
	var enc sbe.CatalogHeaderEncoder
	if err := enc.WrapForEncode(c.buf, 0); err != nil {
		return nil, fmt.Errorf("archive: encode catalog header: %w", err)
	}
	enc.Version(SemanticVersion).Length(CatalogHeaderLength).NextRecordingId(0).Alignment(CatalogAlignment)
	if err := c.write(0, CatalogHeaderLength); err != nil {
		return nil, err
	}
	if err := c.sync(); err != nil {
		return nil, err
	}
	return c, nil
}

// OpenCatalog reads an existing catalog from f, checks its header and
// indexes its entries by Aeron's rules:
//
//   - the header's major version must be 3;
//   - entries are read from the first entry offset, each align(length+32,
//     alignment) long, until a header with length <= 0;
//   - an entry must lie inside the file and hold a whole descriptor;
//   - VALID recording ids must be >= 0 and strictly increase in file order;
//   - nextRecordingId 0 is replaced by the last entry's id + 1; otherwise,
//     unless ReadOnly, a nextRecordingId below the last id + 1 is an error.
//
// Any violation is an error naming the offset; it satisfies
// errors.Is(err, ErrCorrupt).
func OpenCatalog(f vfs.File, opts CatalogOptions) (*Catalog, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("archive: catalog %s: %w", f.Name(), err)
	}
	if size < CatalogHeaderLength {
		return nil, corruptf("catalog %s: file is %d bytes, shorter than the %d-byte header", f.Name(), size, CatalogHeaderLength)
	}
	if size > MaxCatalogCapacity {
		return nil, corruptf("catalog %s: file is %d bytes, more than the maximum capacity %d", f.Name(), size, int64(MaxCatalogCapacity))
	}
	capacity := size
	if !opts.ReadOnly && opts.Capacity > capacity {
		if opts.Capacity > MaxCatalogCapacity {
			return nil, fmt.Errorf("archive: catalog capacity %d above %d", opts.Capacity, int64(MaxCatalogCapacity))
		}
		capacity = opts.Capacity
	}
	buf := make([]byte, capacity)
	if n, err := f.ReadAt(buf[:size], 0); n != int(size) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("archive: catalog %s: read %d of %d bytes: %w", f.Name(), n, size, err)
	}
	if capacity > size {
		// The entries must fit the file as it is: zeros added past its end
		// would make a cut entry read as a whole one.
		if _, err := parseCatalog(buf[:size:size], f.Name(), !opts.ReadOnly); err != nil {
			return nil, err
		}
	}
	c, err := parseCatalog(buf, f.Name(), !opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	c.f = f
	c.name = f.Name()
	c.readOnly = opts.ReadOnly
	c.syncLevel = opts.SyncLevel
	if capacity > size {
		if err := f.Truncate(capacity); err != nil {
			return nil, fmt.Errorf("archive: catalog %s: extend to %d bytes: %w", f.Name(), capacity, err)
		}
		if err := c.sync(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseCatalog checks and indexes the catalog image buf.
func parseCatalog(buf []byte, name string, writable bool) (*Catalog, error) {
	var hd sbe.CatalogHeaderDecoder
	if err := hd.WrapForDecode(buf, 0, CatalogHeaderLength, sbe.SchemaVersion); err != nil {
		return nil, corruptf("catalog %s: header: %v", name, err)
	}
	c := &Catalog{buf: buf, version: hd.Version(), valid: map[int64]int{}}
	if c.version == 0 {
		return nil, corruptf("catalog %s: offset 0: version 0: the header was never written (a catalog created without sync and then a crash?)", name)
	}
	if major := (c.version >> 16) & 0xFF; major != MajorVersion {
		return nil, corruptf("catalog %s: offset 0: incompatible version %s (0x%06x), major version must be %d",
			name, versionString(c.version), uint32(c.version), MajorVersion)
	}
	switch a := hd.Alignment(); {
	case a == 0:
		c.legacy = true
		c.alignment = LegacyCatalogAlignment
		c.firstOffset = LegacyCatalogAlignment
	case a < 32 || a > LegacyCatalogAlignment*1024 || bits.OnesCount32(uint32(a)) != 1:
		return nil, corruptf("catalog %s: offset 16: alignment %d is not a power of two in [32, %d]", name, a, LegacyCatalogAlignment*1024)
	default:
		c.alignment = int(a)
		c.firstOffset = CatalogHeaderLength
		c.nextRecordingID = hd.NextRecordingId()
	}

	capacity := len(buf)
	off := c.firstOffset
	lastID := int64(-1)
	lastValid, haveValid := int64(0), false
	for off < capacity {
		if capacity-off < 4 {
			break // not even a length field: nothing more (Aeron would stop too)
		}
		length := int32(binary.LittleEndian.Uint32(buf[off:]))
		if length <= 0 {
			break
		}
		if capacity-off < DescriptorHeaderLength {
			return nil, corruptf("catalog %s: offset %d: entry header cut off by the end of the file (%d bytes)", name, off, capacity)
		}
		frame := alignInt64(int64(length)+DescriptorHeaderLength, int64(c.alignment))
		if int64(off)+frame > int64(capacity) {
			return nil, corruptf("catalog %s: offset %d: entry length %d (aligned %d) runs past the end of the file (%d bytes)",
				name, off, length, frame, capacity)
		}
		if length < minDescriptorLength {
			return nil, corruptf("catalog %s: offset %d: entry length %d is shorter than a descriptor (%d)", name, off, length, minDescriptorLength)
		}
		e, err := decodeEntry(buf, off)
		if err != nil {
			return nil, corruptf("catalog %s: offset %d: %v", name, off, err)
		}
		id := e.Descriptor.RecordingID
		if e.State == StateValid {
			if id < 0 {
				return nil, corruptf("catalog %s: offset %d: VALID entry has negative recording id %d", name, off, id)
			}
			if haveValid && id <= lastValid {
				return nil, corruptf("catalog %s: offset %d: VALID recording id %d does not increase (previous VALID id %d)", name, off, id, lastValid)
			}
			lastValid, haveValid = id, true
			c.valid[id] = len(c.entries)
		}
		c.entries = append(c.entries, catalogEntryRef{offset: off, frame: int(frame), id: id})
		lastID = id
		off += int(frame)
	}
	c.nextOffset = off
	c.dirtyEnd = off
	for i := len(buf) - 1; i >= off; i-- {
		if buf[i] != 0 {
			c.dirtyEnd = i + 1
			break
		}
	}
	if c.nextRecordingID == 0 {
		c.nextRecordingID = lastID + 1
	} else if writable && c.nextRecordingID < lastID+1 {
		return nil, corruptf("catalog %s: offset 8: invalid nextRecordingId %d, must be at least %d (last id + 1)",
			name, c.nextRecordingID, lastID+1)
	}
	return c, nil
}

// decodeEntry decodes the entry whose header is at off; the caller has
// checked that align(length+32) bytes are there.
func decodeEntry(buf []byte, off int) (CatalogEntry, error) {
	var hd sbe.RecordingDescriptorHeaderDecoder
	if err := hd.WrapForDecode(buf, off, DescriptorHeaderLength, sbe.SchemaVersion); err != nil {
		return CatalogEntry{}, err
	}
	e := CatalogEntry{Offset: int64(off), Length: hd.Length(), State: RecordingState(hd.State()), Checksum: hd.Checksum()}
	bodyStart := off + DescriptorHeaderLength
	if e.Length < minDescriptorLength || int64(bodyStart)+int64(e.Length) > int64(len(buf)) {
		return e, fmt.Errorf("entry length %d does not fit", e.Length)
	}
	body := buf[bodyStart : bodyStart+int(e.Length)]
	var d sbe.RecordingDescriptorDecoder
	if err := d.WrapForDecode(body, 0, DescriptorBlockLength, sbe.SchemaVersion); err != nil {
		return e, err
	}
	e.Descriptor = RecordingDescriptor{
		ControlSessionID:  d.ControlSessionId(),
		CorrelationID:     d.CorrelationId(),
		RecordingID:       d.RecordingId(),
		StartTimestamp:    d.StartTimestamp(),
		StopTimestamp:     d.StopTimestamp(),
		StartPosition:     d.StartPosition(),
		StopPosition:      d.StopPosition(),
		InitialTermID:     d.InitialTermId(),
		SegmentFileLength: d.SegmentFileLength(),
		TermBufferLength:  d.TermBufferLength(),
		MTULength:         d.MtuLength(),
		SessionID:         d.SessionId(),
		StreamID:          d.StreamId(),
	}
	strs := []struct {
		name string
		get  func() ([]byte, error)
		dst  *string
	}{
		{"strippedChannel", d.StrippedChannel, &e.Descriptor.StrippedChannel},
		{"originalChannel", d.OriginalChannel, &e.Descriptor.OriginalChannel},
		{"sourceIdentity", d.SourceIdentity, &e.Descriptor.SourceIdentity},
	}
	for _, s := range strs {
		at := d.EncodedLength()
		v, err := s.get()
		if err != nil {
			return e, fmt.Errorf("recording %d: %s string at body offset %d runs past the entry length %d",
				e.Descriptor.RecordingID, s.name, at, e.Length)
		}
		*s.dst = string(v)
	}
	return e, nil
}

// Version is the catalog header's version field.
func (c *Catalog) Version() int32 { return c.version }

// Alignment is the entry alignment (1024 for a legacy catalog).
func (c *Catalog) Alignment() int { return c.alignment }

// Legacy reports whether the header's alignment field is 0.
func (c *Catalog) Legacy() bool { return c.legacy }

// Capacity is the current file length.
func (c *Catalog) Capacity() int64 { return int64(len(c.buf)) }

// NextRecordingID is the id the next AddRecording will use.
func (c *Catalog) NextRecordingID() int64 { return c.nextRecordingID }

// EndOffset is the offset after the last entry, where the next one goes.
func (c *Catalog) EndOffset() int64 { return int64(c.nextOffset) }

// CountValid is the number of VALID entries (ArchiveTool count-entries).
func (c *Catalog) CountValid() int { return len(c.valid) }

// Entries returns every entry, of any state, in file order.
func (c *Catalog) Entries() []CatalogEntry {
	out := make([]CatalogEntry, 0, len(c.entries))
	for _, r := range c.entries {
		if e, err := decodeEntry(c.buf, r.offset); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// Recordings returns the descriptors of the VALID entries, in file order
// (which is id order).
func (c *Catalog) Recordings() []RecordingDescriptor {
	var out []RecordingDescriptor
	for _, r := range c.entries {
		if e, err := decodeEntry(c.buf, r.offset); err == nil && e.State == StateValid {
			out = append(out, e.Descriptor)
		}
	}
	return out
}

// Descriptor returns the descriptor of the VALID recording id, as Aeron's
// catalog index finds only VALID entries.
func (c *Catalog) Descriptor(id int64) (RecordingDescriptor, error) {
	i, ok := c.valid[id]
	if !ok {
		return RecordingDescriptor{}, fmt.Errorf("%w: id %d has no VALID entry", ErrRecordingNotFound, id)
	}
	e, err := decodeEntry(c.buf, c.entries[i].offset)
	if err != nil {
		return RecordingDescriptor{}, corruptf("catalog %s: offset %d: %v", c.name, c.entries[i].offset, err)
	}
	return e.Descriptor, nil
}

// Entry returns the entry of recording id in any state: the VALID one if
// there is one, else the last entry in file order with that id.
func (c *Catalog) Entry(id int64) (CatalogEntry, error) {
	i, err := c.find(id)
	if err != nil {
		return CatalogEntry{}, err
	}
	e, err := decodeEntry(c.buf, c.entries[i].offset)
	if err != nil {
		return CatalogEntry{}, corruptf("catalog %s: offset %d: %v", c.name, c.entries[i].offset, err)
	}
	return e, nil
}

func (c *Catalog) find(id int64) (int, error) {
	if i, ok := c.valid[id]; ok {
		return i, nil
	}
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].id == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: id %d", ErrRecordingNotFound, id)
}

// RecordingDescriptorFrameLength is the aligned length of an entry holding
// these strings (Aeron's recordingDescriptorFrameLength).
func RecordingDescriptorFrameLength(alignment int, strippedChannel, originalChannel, sourceIdentity string) int64 {
	n := int64(DescriptorHeaderLength+minDescriptorLength) + int64(len(strippedChannel)) + int64(len(originalChannel)) + int64(len(sourceIdentity))
	return alignInt64(n, int64(alignment))
}

// AddRecording appends a VALID entry for a new recording and returns its id,
// exactly as Aeron's Catalog.addNewRecording does: the descriptor body
// (with its zero padding) is written first, then the descriptor header
// (length, checksum 0, state VALID), then nextRecordingId = id + 1 in the
// catalog header, then the file is synced per SyncLevel. A crash before the
// header write leaves no entry. When the entry does not fit, the file grows
// by half its length (repeatedly) and the new space is zero.
func (c *Catalog) AddRecording(r NewRecording) (int64, error) {
	if err := c.writable(); err != nil {
		return 0, err
	}
	if c.legacy {
		return 0, fmt.Errorf("archive: catalog %s is a legacy catalog (alignment 0); migrate it before adding recordings", c.name)
	}
	if c.nextRecordingID < 0 || c.nextRecordingID == math.MaxInt64 {
		return 0, fmt.Errorf("archive: catalog %s: nextRecordingId %d cannot be assigned", c.name, c.nextRecordingID)
	}
	for _, s := range []string{r.StrippedChannel, r.OriginalChannel, r.SourceIdentity} {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return 0, fmt.Errorf("archive: AddRecording: %q has a non-ASCII byte at %d", s, i)
			}
		}
	}
	frame := RecordingDescriptorFrameLength(c.alignment, r.StrippedChannel, r.OriginalChannel, r.SourceIdentity)
	off := int64(c.nextOffset)
	if off+frame > int64(len(c.buf)) {
		if err := c.grow(off + frame); err != nil {
			return 0, err
		}
	}
	id := c.nextRecordingID
	entry := make([]byte, frame)
	var de sbe.RecordingDescriptorEncoder
	if err := de.WrapForEncode(entry, DescriptorHeaderLength); err != nil {
		return 0, fmt.Errorf("archive: encode descriptor: %w", err)
	}
	de.RecordingId(id).
		StartTimestamp(r.StartTimestamp).
		StopTimestamp(r.StopTimestamp).
		StartPosition(r.StartPosition).
		StopPosition(r.StopPosition).
		InitialTermId(r.InitialTermID).
		SegmentFileLength(r.SegmentFileLength).
		TermBufferLength(r.TermBufferLength).
		MtuLength(r.MTULength).
		SessionId(r.SessionID).
		StreamId(r.StreamID)
	if err := de.PutStrippedChannelString(r.StrippedChannel); err != nil {
		return 0, fmt.Errorf("archive: encode descriptor: %w", err)
	}
	if err := de.PutOriginalChannelString(r.OriginalChannel); err != nil {
		return 0, fmt.Errorf("archive: encode descriptor: %w", err)
	}
	if err := de.PutSourceIdentityString(r.SourceIdentity); err != nil {
		return 0, fmt.Errorf("archive: encode descriptor: %w", err)
	}
	var he sbe.RecordingDescriptorHeaderEncoder
	if err := he.WrapForEncode(entry, 0); err != nil {
		return 0, fmt.Errorf("archive: encode descriptor header: %w", err)
	}
	he.Length(int32(frame - DescriptorHeaderLength)).Checksum(0).State(sbe.RecordingStateVALID)

	o := int(off)
	copy(c.buf[o+DescriptorHeaderLength:o+int(frame)], entry[DescriptorHeaderLength:])
	if err := c.write(o+DescriptorHeaderLength, int(frame)-DescriptorHeaderLength); err != nil {
		return 0, err
	}
	if end := o + int(frame); c.dirtyEnd > end {
		clear(c.buf[end:c.dirtyEnd])
		if err := c.write(end, c.dirtyEnd-end); err != nil {
			return 0, err
		}
	}
	copy(c.buf[o:o+DescriptorHeaderLength], entry[:DescriptorHeaderLength])
	if err := c.write(o, DescriptorHeaderLength); err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint64(c.buf[8:], uint64(id+1))
	if err := c.write(8, 8); err != nil {
		return 0, err
	}
	if err := c.sync(); err != nil {
		return 0, err
	}
	c.nextRecordingID = id + 1
	c.valid[id] = len(c.entries)
	c.entries = append(c.entries, catalogEntryRef{offset: o, frame: int(frame), id: id})
	c.nextOffset = o + int(frame)
	c.dirtyEnd = c.nextOffset
	return id, nil
}

// grow extends the file until it holds target bytes, by half its length at a
// time, as Aeron's growCatalog.
func (c *Catalog) grow(target int64) error {
	old := int64(len(c.buf))
	if target > MaxCatalogCapacity {
		return fmt.Errorf("archive: catalog %s is full: entry needs %d bytes, max capacity is %d", c.name, target, int64(MaxCatalogCapacity))
	}
	newCap := old
	for newCap < target {
		newCap = min(newCap+newCap>>1, MaxCatalogCapacity)
	}
	if err := c.f.Truncate(newCap); err != nil {
		c.err = fmt.Errorf("archive: catalog %s: grow to %d bytes: %w", c.name, newCap, err)
		return c.err
	}
	c.buf = append(c.buf, make([]byte, newCap-old)...)
	return nil
}

// RecordingStopped records the end of a recording: stopTimestamp, then
// stopPosition (Aeron's recordingStopped).
func (c *Catalog) RecordingStopped(id, stopPosition, stopTimestamp int64) error {
	return c.update(id, func(b []byte) {
		putI64(b, offStopTimestamp, stopTimestamp)
		putI64(b, offStopPosition, stopPosition)
	})
}

// UpdateStopPosition sets stopPosition (Aeron's Catalog.stopPosition).
func (c *Catalog) UpdateStopPosition(id, stopPosition int64) error {
	return c.update(id, func(b []byte) { putI64(b, offStopPosition, stopPosition) })
}

// UpdateStopTimestamp sets stopTimestamp.
func (c *Catalog) UpdateStopTimestamp(id, stopTimestamp int64) error {
	return c.update(id, func(b []byte) { putI64(b, offStopTimestamp, stopTimestamp) })
}

// UpdateStartPosition sets startPosition (Aeron's Catalog.startPosition, used
// by detach, purge, attach and migrate).
func (c *Catalog) UpdateStartPosition(id, startPosition int64) error {
	return c.update(id, func(b []byte) { putI64(b, offStartPosition, startPosition) })
}

// ExtendRecording prepares a stopped recording for extension, as Aeron's
// Catalog.extendRecording: it sets controlSessionId, correlationId and
// sessionId, and resets stopTimestamp and stopPosition to null.
func (c *Catalog) ExtendRecording(id, controlSessionID, correlationID int64, sessionID int32) error {
	return c.update(id, func(b []byte) {
		putI64(b, offControlSessionID, controlSessionID)
		putI64(b, offCorrelationID, correlationID)
		putI64(b, offStopTimestamp, NullTimestamp)
		binary.LittleEndian.PutUint32(b[offSessionID:], uint32(sessionID))
		putI64(b, offStopPosition, NullPosition)
	})
}

// update applies fn to the fixed block of the entry of id and writes the
// changed bytes. The checksum field stays 0 (no checksum configured).
func (c *Catalog) update(id int64, fn func(block []byte)) error {
	if err := c.writable(); err != nil {
		return err
	}
	i, err := c.find(id)
	if err != nil {
		return err
	}
	return c.updateAt(i, fn)
}

// updateAt is update for the i-th entry in file order.
func (c *Catalog) updateAt(i int, fn func(block []byte)) error {
	if err := c.writable(); err != nil {
		return err
	}
	if i < 0 || i >= len(c.entries) {
		return fmt.Errorf("%w: entry index %d", ErrRecordingNotFound, i)
	}
	start := c.entries[i].offset + DescriptorHeaderLength
	block := c.buf[start : start+DescriptorBlockLength]
	before := [DescriptorBlockLength]byte(block)
	fn(block)
	lo, hi := -1, -1
	for j := range block {
		if block[j] != before[j] {
			if lo < 0 {
				lo = j
			}
			hi = j + 1
		}
	}
	if lo < 0 {
		return nil
	}
	if err := c.write(start+lo, hi-lo); err != nil {
		return err
	}
	return c.sync()
}

// ChangeState rewrites the state of the entry of id (purge: DELETED; the
// tools' mark-valid and mark-invalid). Only the state field is written.
// Making an entry VALID fails if its id would break the strictly increasing
// order of VALID ids.
func (c *Catalog) ChangeState(id int64, state RecordingState) error {
	if err := c.writable(); err != nil {
		return err
	}
	i, err := c.find(id)
	if err != nil {
		return err
	}
	return c.changeStateAt(i, state)
}

// changeStateAt changes the state of the i-th entry in file order.
func (c *Catalog) changeStateAt(i int, state RecordingState) error {
	if err := c.writable(); err != nil {
		return err
	}
	if i < 0 || i >= len(c.entries) {
		return fmt.Errorf("%w: entry index %d", ErrRecordingNotFound, i)
	}
	id := c.entries[i].id
	off := c.entries[i].offset
	cur := RecordingState(int32(binary.LittleEndian.Uint32(c.buf[off+4:])))
	if cur == state {
		return nil
	}
	if state == StateValid {
		if id < 0 {
			return fmt.Errorf("archive: recording id %d is negative and cannot be VALID", id)
		}
		for j, r := range c.entries {
			vi, ok := c.valid[r.id]
			if !ok || vi != j {
				continue
			}
			if (j < i && r.id >= id) || (j > i && r.id <= id) {
				return fmt.Errorf("archive: making recording %d VALID would break the increasing order of VALID ids (entry %d has id %d)", id, j, r.id)
			}
		}
	}
	binary.LittleEndian.PutUint32(c.buf[off+4:], uint32(state))
	if err := c.write(off+4, 4); err != nil {
		return err
	}
	if err := c.sync(); err != nil {
		return err
	}
	if state == StateValid {
		c.valid[id] = i
	} else if c.valid[id] == i {
		delete(c.valid, id)
	}
	return nil
}

// Sync makes all writes durable regardless of SyncLevel.
func (c *Catalog) Sync() error {
	if c.readOnly {
		return nil
	}
	if err := c.writable(); err != nil {
		return err
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("archive: catalog %s: sync: %w", c.name, err)
	}
	return nil
}

// Close closes the file. It does not sync; see SyncLevel and Sync.
func (c *Catalog) Close() error {
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	if c.err == nil {
		c.err = errors.New("archive: catalog closed")
	}
	return err
}

func (c *Catalog) writable() error {
	if c.readOnly {
		return ErrReadOnly
	}
	return c.err
}

// write writes buf[off:off+n] to the file at off. A failure is sticky.
func (c *Catalog) write(off, n int) error {
	if _, err := c.f.WriteAt(c.buf[off:off+n], int64(off)); err != nil {
		c.err = fmt.Errorf("archive: catalog %s: write %d bytes at offset %d: %w", c.name, n, off, err)
		return c.err
	}
	return nil
}

func (c *Catalog) sync() error {
	if err := c.syncLevel.Sync(c.f); err != nil {
		c.err = fmt.Errorf("archive: catalog %s: sync: %w", c.name, err)
		return c.err
	}
	return nil
}

func putI64(b []byte, off int, v int64) { binary.LittleEndian.PutUint64(b[off:], uint64(v)) }

func alignInt64(v, a int64) int64 { return (v + a - 1) &^ (a - 1) }

func versionString(v int32) string {
	return fmt.Sprintf("%d.%d.%d", (v>>16)&0xFF, (v>>8)&0xFF, v&0xFF)
}
