package recordinglog

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Format renders entries on one line, one bracketed group per entry, in the
// form the fixture README gives for ClusterTool recording-log:
//
//	[TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744][SNAPSHOT rec2 svc-1 logPos 115744]
//
// A STANDBY_SNAPSHOT adds "endpoint <endpoint>", and an invalid entry ends
// with " INVALID". Pass Log.Entries for ClusterTool's (sorted) order.
func Format(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		switch e.Type {
		case TypeTerm:
			fmt.Fprintf(&b, "[TERM rec%d term%d base%d logPos %d", e.RecordingID, e.LeadershipTermID, e.TermBaseLogPosition, e.LogPosition)
		default:
			fmt.Fprintf(&b, "[%s rec%d svc%d logPos %d", e.Type, e.RecordingID, e.ServiceID, e.LogPosition)
			if e.Type == TypeStandbySnapshot {
				fmt.Fprintf(&b, " endpoint %s", e.ArchiveEndpoint)
			}
		}
		if !e.Valid {
			b.WriteString(" INVALID")
		}
		b.WriteByte(']')
	}
	return b.String()
}

// JSONEntry is an entry as JSON, with Aeron's field names.
type JSONEntry struct {
	RecordingID         int64  `json:"recordingId"`
	LeadershipTermID    int64  `json:"leadershipTermId"`
	TermBaseLogPosition int64  `json:"termBaseLogPosition"`
	LogPosition         int64  `json:"logPosition"`
	Timestamp           int64  `json:"timestamp"`
	ServiceID           int32  `json:"serviceId"`
	Type                string `json:"type"`
	Valid               bool   `json:"valid"`
	EntryIndex          int    `json:"entryIndex"`
	Offset              int64  `json:"offset"`
	ArchiveEndpoint     string `json:"archiveEndpoint,omitempty"`
}

// EntriesJSON is the JSON document {"entries": [...]} for entries, each with
// the fields recordingId, leadershipTermId, termBaseLogPosition,
// logPosition, timestamp, serviceId, type (TERM, SNAPSHOT,
// STANDBY_SNAPSHOT), valid, entryIndex, offset and, for a standby snapshot,
// archiveEndpoint.
type EntriesJSON struct {
	Entries []JSONEntry `json:"entries"`
}

// ToJSON converts entries for encoding/json.
func ToJSON(entries []Entry) EntriesJSON {
	out := EntriesJSON{Entries: make([]JSONEntry, 0, len(entries))}
	for _, e := range entries {
		out.Entries = append(out.Entries, JSONEntry{
			RecordingID: e.RecordingID, LeadershipTermID: e.LeadershipTermID,
			TermBaseLogPosition: e.TermBaseLogPosition, LogPosition: e.LogPosition,
			Timestamp: e.Timestamp, ServiceID: e.ServiceID, Type: e.Type.String(),
			Valid: e.Valid, EntryIndex: e.Index, Offset: e.Offset, ArchiveEndpoint: e.ArchiveEndpoint,
		})
	}
	return out
}

// MarshalJSON encodes entries as {"entries": [...]} (see EntriesJSON).
func MarshalJSON(entries []Entry) ([]byte, error) {
	return json.Marshal(ToJSON(entries))
}
