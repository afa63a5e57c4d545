package recordinglog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors a caller may test with errors.Is.
var (
	// ErrCorrupt marks every error about a damaged recording.log: an
	// unknown entry type, a zeroed entry followed by data, TERM entries of
	// different recordings, and torn tails (which also satisfy
	// ErrTornTail).
	ErrCorrupt = errors.New("recordinglog: corrupt file")
	// ErrTornTail marks a file that ends in a partial entry, or in zeros
	// where an entry should be: what a crash during an unsynced append
	// leaves. Options.Repair truncates it away.
	ErrTornTail = errors.New("recordinglog: torn tail")
	// ErrReadOnly is returned by updates on a log opened read-only.
	ErrReadOnly = errors.New("recordinglog: opened read-only")
	// ErrClosed is returned by operations on a closed log.
	ErrClosed = errors.New("recordinglog: closed")
)

// CorruptError is the error for damaged file contents: it names the file
// offset of the entry at fault. It satisfies errors.Is(err, ErrCorrupt), and
// errors.Is(err, ErrTornTail) when Torn.
type CorruptError struct {
	Offset int64
	Reason string
	// Torn is set when only the end of the file is damaged, as an
	// interrupted append leaves it: dropping the bytes from Offset on
	// repairs the file without losing any whole entry.
	Torn bool
}

func (e *CorruptError) Error() string {
	kind := "corrupt entry"
	if e.Torn {
		kind = "torn tail"
	}
	return fmt.Sprintf("recordinglog: %s at offset %d: %s", kind, e.Offset, e.Reason)
}

// Is makes a CorruptError match ErrCorrupt, and ErrTornTail when Torn.
func (e *CorruptError) Is(target error) bool {
	return target == ErrCorrupt || (e.Torn && target == ErrTornTail)
}

// Decode parses a whole recording.log and returns its entries in file order
// (removed entries, of type -1, are skipped but counted in Entry.Index). It
// is stricter than Aeron's loader, which stops quietly at a short tail:
//
//   - a partial entry at the end, or zeros from some entry boundary to
//     the end (an append lost in a crash after the file grew), is a
//     *CorruptError with Torn set;
//   - an entry type other than TERM, SNAPSHOT, STANDBY_SNAPSHOT (with or
//     without the invalid flag) or -1, an entry whose 48 bytes of fields
//     are all zero (which Aeron never writes) followed by more data, a
//     TERM entry whose serviceId is not -1 (Aeron's appendTerm always
//     writes -1; with it no update this package makes can leave an entry
//     all zero), a standby endpoint length out of range, or TERM entries
//     of different recordings (Aeron's validateTermRecordingId) is a
//     *CorruptError without Torn.
//
// On error the entries before the bad one are returned with it.
func Decode(b []byte) ([]Entry, error) {
	entries, _, err := decode(b)
	return entries, err
}

// decode is Decode that also returns how many entries it read, removed ones
// included: the next entry index.
func decode(b []byte) (entries []Entry, count int, err error) {
	le := binary.LittleEndian
	termRecordingID := int64(NullValue)
	index := 0
	for off := 0; off < len(b); {
		rest := b[off:]
		if allZero(rest) {
			return entries, index, &CorruptError{Offset: int64(off), Torn: true,
				Reason: fmt.Sprintf("%d zero bytes up to the end of the file (an append that did not reach the disk)", len(rest))}
		}
		if len(rest) < EndpointOffset {
			return entries, index, &CorruptError{Offset: int64(off), Torn: true,
				Reason: fmt.Sprintf("partial entry: %d of at least %d bytes", len(rest), EntryLength)}
		}
		n := EntryLength
		if allZero(rest[:EndpointOffset]) {
			// Aeron never writes an entry whose fields are all zero: a TERM
			// has serviceId -1, a snapshot a non-zero type.
			return entries, index, &CorruptError{Offset: int64(off),
				Reason: "zeroed entry followed by more data (a lost unsynced write, or damage)"}
		}
		raw := int32(le.Uint32(rest[EntryTypeOffset:]))
		typ := EntryType(uint32(raw) &^ InvalidFlag)
		if raw != removedType && !typ.known() {
			return entries, index, &CorruptError{Offset: int64(off),
				Reason: fmt.Sprintf("unknown entry type %d (field 0x%08x)", typ, uint32(raw))}
		}
		e := Entry{
			RecordingID:         int64(le.Uint64(rest[RecordingIDOffset:])),
			LeadershipTermID:    int64(le.Uint64(rest[LeadershipTermIDOffset:])),
			TermBaseLogPosition: int64(le.Uint64(rest[TermBaseLogPositionOffset:])),
			LogPosition:         int64(le.Uint64(rest[LogPositionOffset:])),
			Timestamp:           int64(le.Uint64(rest[TimestampOffset:])),
			ServiceID:           int32(le.Uint32(rest[ServiceIDOffset:])),
			Type:                typ,
			Valid:               uint32(raw)&InvalidFlag == 0,
			Index:               index,
			Offset:              int64(off),
		}
		if raw != removedType && typ == TypeStandbySnapshot {
			if len(rest) < EndpointOffset+4 {
				return entries, index, &CorruptError{Offset: int64(off), Torn: true,
					Reason: fmt.Sprintf("partial STANDBY_SNAPSHOT entry: %d bytes", len(rest))}
			}
			l := int64(int32(le.Uint32(rest[EndpointOffset:])))
			if l <= 0 || l > MaxEndpointLength {
				return entries, index, &CorruptError{Offset: int64(off),
					Reason: fmt.Sprintf("STANDBY_SNAPSHOT endpoint length %d outside [1, %d]", l, MaxEndpointLength)}
			}
			n = align(EndpointOffset+4+int(l), Alignment)
			if len(rest) >= EndpointOffset+4+int(l) {
				e.ArchiveEndpoint = string(rest[EndpointOffset+4 : EndpointOffset+4+int(l)])
			}
		}
		if len(rest) < n {
			return entries, index, &CorruptError{Offset: int64(off), Torn: true,
				Reason: fmt.Sprintf("partial entry: %d of %d bytes", len(rest), n)}
		}
		if raw != removedType {
			if typ == TypeTerm {
				switch {
				case e.RecordingID == NullValue:
					return entries, index, &CorruptError{Offset: int64(off), Reason: "TERM entry with recordingId -1"}
				case e.ServiceID != NullValue:
					return entries, index, &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(
						"TERM entry with serviceId %d (a TERM entry's serviceId is always -1)", e.ServiceID)}
				case termRecordingID == NullValue:
					termRecordingID = e.RecordingID
				case e.RecordingID != termRecordingID:
					return entries, index, &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(
						"TERM entry of recording %d, earlier TERM entries are of recording %d", e.RecordingID, termRecordingID)}
				}
			}
			entries = append(entries, e)
		}
		off += n
		index++
	}
	return entries, index, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
