package recordinglog

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Layout of recording.log (RecordingLog.java). These constants are part of
// the file format that Aeron's consensus module and ClusterTool read: never
// change them.
const (
	// FileName is the name of the file in the cluster directory
	// (RECORDING_LOG_FILE_NAME).
	FileName = "recording.log"

	// Field offsets inside an entry.
	RecordingIDOffset         = 0
	LeadershipTermIDOffset    = 8
	TermBaseLogPositionOffset = 16
	LogPositionOffset         = 24
	TimestampOffset           = 32
	ServiceIDOffset           = 40
	EntryTypeOffset           = 44
	// EndpointOffset is where a STANDBY_SNAPSHOT's archive endpoint (int32
	// length, then ASCII) starts, and the length of the fixed part of every
	// entry.
	EndpointOffset = 48

	// Alignment is the alignment of every entry (RECORD_ALIGNMENT): a TERM
	// or SNAPSHOT entry takes align(48, 64) = 64 bytes.
	Alignment = 64
	// EntryLength is the length of a TERM or SNAPSHOT entry.
	EntryLength = 64
	// MaxEntryLength is the longest entry (MAX_ENTRY_LENGTH).
	MaxEntryLength = 4096
	// MaxEndpointLength is the longest archive endpoint of a standby
	// snapshot (MAX_ENDPOINT_LENGTH).
	MaxEndpointLength = MaxEntryLength - EndpointOffset - 4

	// InvalidFlag is bit 31 of the entry type (ENTRY_TYPE_INVALID_FLAG): the
	// entry is invalid and must be ignored.
	InvalidFlag uint32 = 1 << 31
	// removedType is an entry type of exactly -1 (NULL_VALUE): an entry
	// removed by RecordingLog.removeEntry, skipped on load but counted in
	// entry indices.
	removedType int32 = -1

	// NullValue is Aeron's NULL_VALUE (-1): a TERM's logPosition before it
	// is committed, the serviceId of a TERM entry.
	NullValue = -1
	// ConsensusModuleServiceID is the serviceId of the consensus module's
	// snapshot entry (ConsensusModule.Configuration.SERVICE_ID).
	ConsensusModuleServiceID = -1
)

// EntryType is the type of an entry, without the invalid flag.
type EntryType int32

// Entry types (ENTRY_TYPE_*). Never change them.
const (
	TypeTerm            EntryType = 0
	TypeSnapshot        EntryType = 1
	TypeStandbySnapshot EntryType = 2
)

// String returns Aeron's name of the type (RecordingLog.typeAsString).
func (t EntryType) String() string {
	switch t {
	case TypeTerm:
		return "TERM"
	case TypeSnapshot:
		return "SNAPSHOT"
	case TypeStandbySnapshot:
		return "STANDBY_SNAPSHOT"
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

func (t EntryType) known() bool { return t >= TypeTerm && t <= TypeStandbySnapshot }

// Entry is one entry of the recording log (RecordingLog.Entry).
type Entry struct {
	RecordingID         int64
	LeadershipTermID    int64
	TermBaseLogPosition int64
	// LogPosition is -1 (NullValue) for a TERM not yet committed.
	LogPosition int64
	// Timestamp is in the cluster's time unit.
	Timestamp int64
	// ServiceID is -1 for a TERM and for the consensus module's snapshot.
	ServiceID int32
	Type      EntryType
	// Valid is false when the type's invalid flag is set.
	Valid bool
	// ArchiveEndpoint is set for a STANDBY_SNAPSHOT only.
	ArchiveEndpoint string

	// Index is the entry's ordinal in the file (Aeron's entryIndex),
	// counting removed entries. Offset is its file offset. Both are set by
	// decoding and by the Log; encoding ignores them.
	Index  int
	Offset int64
}

// Length is the entry's length in the file, alignment included
// (Entry.length()).
func (e *Entry) Length() int {
	if e.Type == TypeStandbySnapshot {
		return align(EndpointOffset+4+len(e.ArchiveEndpoint), Alignment)
	}
	return EntryLength
}

// rawType is the entry type field as stored: the type, with bit 31 set for
// an invalid entry.
func (e *Entry) rawType() int32 {
	t := uint32(e.Type)
	if !e.Valid {
		t |= InvalidFlag
	}
	return int32(t)
}

// String is a short form for messages: type, file index and offset.
func (e Entry) String() string {
	s := fmt.Sprintf("%s entry #%d at offset %d (recording %d, term %d, logPosition %d, service %d",
		e.Type, e.Index, e.Offset, e.RecordingID, e.LeadershipTermID, e.LogPosition, e.ServiceID)
	if !e.Valid {
		s += ", invalid"
	}
	return s + ")"
}

// AppendEntry appends the encoding of e (e.Length() bytes, zero padded) to
// dst and returns the extended slice, as RecordingLog.writeEntryToBuffer fills
// the buffer Aeron writes.
func AppendEntry(dst []byte, e Entry) []byte {
	n := e.Length()
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	b := dst[start:]
	le := binary.LittleEndian
	le.PutUint64(b[RecordingIDOffset:], uint64(e.RecordingID))
	le.PutUint64(b[LeadershipTermIDOffset:], uint64(e.LeadershipTermID))
	le.PutUint64(b[TermBaseLogPositionOffset:], uint64(e.TermBaseLogPosition))
	le.PutUint64(b[LogPositionOffset:], uint64(e.LogPosition))
	le.PutUint64(b[TimestampOffset:], uint64(e.Timestamp))
	le.PutUint32(b[ServiceIDOffset:], uint32(e.ServiceID))
	le.PutUint32(b[EntryTypeOffset:], uint32(e.rawType()))
	if e.Type == TypeStandbySnapshot {
		le.PutUint32(b[EndpointOffset:], uint32(len(e.ArchiveEndpoint)))
		copy(b[EndpointOffset+4:], e.ArchiveEndpoint)
	}
	return dst
}

func align(n, a int) int { return (n + a - 1) &^ (a - 1) }

// compareEntries is Aeron's ENTRY_COMPARATOR: by leadershipTermId, then
// termBaseLogPosition, then type with SNAPSHOT after every other type; TERMs
// of equal keys by entry index, other entries by logPosition and then by
// descending serviceId. It returns <0, 0 or >0.
func compareEntries(a, b *Entry) int {
	if c := cmp64(a.LeadershipTermID, b.LeadershipTermID); c != 0 {
		return c
	}
	if c := cmp64(a.TermBaseLogPosition, b.TermBaseLogPosition); c != 0 {
		return c
	}
	if a.Type != b.Type {
		switch {
		case a.Type == TypeSnapshot:
			return 1
		case b.Type == TypeSnapshot:
			return -1
		}
		return cmp64(int64(a.Type), int64(b.Type))
	}
	if a.Type == TypeTerm {
		return cmp64(int64(a.Index), int64(b.Index))
	}
	if c := cmp64(a.LogPosition, b.LogPosition); c != 0 {
		return c
	}
	return cmp64(int64(b.ServiceID), int64(a.ServiceID))
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
