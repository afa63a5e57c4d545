package aerontest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Entry is one entry of ClusterTool recording-log (Aeron's
// RecordingLog.Entry.toString).
type Entry struct {
	RecordingID         int64
	LeadershipTermID    int64
	TermBaseLogPosition int64
	LogPosition         int64
	Timestamp           int64
	ServiceID           int32
	Type                string // TERM, SNAPSHOT, STANDBY_SNAPSHOT
	Valid               bool
	EntryIndex          int
}

// Snapshot is one snapshot of ClusterTool recovery-plan.
type Snapshot struct {
	RecordingID         int64
	LeadershipTermID    int64
	TermBaseLogPosition int64
	LogPosition         int64
	Timestamp           int64
	ServiceID           int32
}

// Log is the log of ClusterTool recovery-plan.
type Log struct {
	RecordingID         int64
	LeadershipTermID    int64
	TermBaseLogPosition int64
	LogPosition         int64
	StartPosition       int64
	StopPosition        int64
	InitialTermID       int32
	TermBufferLength    int32
	MTULength           int32
	SessionID           int32
}

// RecoveryPlan is ClusterTool recovery-plan's output (Aeron's
// RecordingLog.RecoveryPlan.toString).
type RecoveryPlan struct {
	LastLeadershipTermID    int64
	LastTermBaseLogPosition int64
	AppendedLogPosition     int64
	CommittedLogPosition    int64
	Snapshots               []Snapshot
	Log                     *Log // nil for log=null
}

var (
	recordingLogRE = regexp.MustCompile(`(?s)^RecordingLog\{entries=\[(.*)\], cacheIndex=\{[^{}]*\}\}$`)
	entryRE        = regexp.MustCompile(`Entry\{([^{}]*)\}`)
	planRE         = regexp.MustCompile(`(?s)^RecoveryPlan\{(lastLeadershipTermId=[^{}\[\]]*), snapshots=\[(.*)\], log=(null|Log\{[^{}]*\})\}$`)
	snapshotRE     = regexp.MustCompile(`Snapshot\{([^{}]*)\}`)
)

// fields reads "k=v, k=v" into a map, requiring exactly the keys want.
func fields(s string, want ...string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("field %q is not key=value in %q", kv, s)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("field %s twice in %q", k, s)
		}
		m[k] = v
	}
	if len(m) != len(want) {
		return nil, fmt.Errorf("%d fields in %q, want %d (%s)", len(m), s, len(want), strings.Join(want, ", "))
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("no field %s in %q", k, s)
		}
	}
	return m, nil
}

// numbers parses the named fields of m as integers of the given bit size.
type numbers struct {
	m   map[string]string
	err error
}

func (n *numbers) i64(k string) int64 {
	v, err := strconv.ParseInt(n.m[k], 10, 64)
	if err != nil && n.err == nil {
		n.err = fmt.Errorf("field %s: %w", k, err)
	}
	return v
}

func (n *numbers) i32(k string) int32 {
	v, err := strconv.ParseInt(n.m[k], 10, 32)
	if err != nil && n.err == nil {
		n.err = fmt.Errorf("field %s: %w", k, err)
	}
	return int32(v)
}

// onlyItems reports whether list is n items of re joined by ", " and
// nothing else.
func onlyItems(re *regexp.Regexp, list string, n int) bool {
	return re.ReplaceAllString(list, "\x00") == strings.Join(slices.Repeat([]string{"\x00"}, n), ", ")
}

// ParseRecordingLog reads ClusterTool recording-log's output.
func ParseRecordingLog(out string) ([]Entry, error) {
	m := recordingLogRE.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return nil, fmt.Errorf("not a RecordingLog{entries=[...], cacheIndex={...}}: %q", out)
	}
	var entries []Entry
	rest := m[1]
	for _, em := range entryRE.FindAllStringSubmatchIndex(rest, -1) {
		f, err := fields(rest[em[2]:em[3]], "recordingId", "leadershipTermId", "termBaseLogPosition", "logPosition",
			"timestamp", "serviceId", "type", "isValid", "entryIndex")
		if err != nil {
			return nil, err
		}
		n := &numbers{m: f}
		e := Entry{RecordingID: n.i64("recordingId"), LeadershipTermID: n.i64("leadershipTermId"),
			TermBaseLogPosition: n.i64("termBaseLogPosition"), LogPosition: n.i64("logPosition"),
			Timestamp: n.i64("timestamp"), ServiceID: n.i32("serviceId"), Type: f["type"], EntryIndex: int(n.i32("entryIndex"))}
		switch f["isValid"] {
		case "true":
			e.Valid = true
		case "false":
		default:
			return nil, fmt.Errorf("isValid=%q", f["isValid"])
		}
		if n.err != nil {
			return nil, n.err
		}
		entries = append(entries, e)
	}
	if !onlyItems(entryRE, rest, len(entries)) {
		return nil, fmt.Errorf("text other than Entry{...} between the entries of %q", rest)
	}
	return entries, nil
}

// ParseRecoveryPlan reads ClusterTool recovery-plan's output.
func ParseRecoveryPlan(out string) (RecoveryPlan, error) {
	var p RecoveryPlan
	m := planRE.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return p, fmt.Errorf("not a RecoveryPlan{...}: %q", out)
	}
	f, err := fields(m[1], "lastLeadershipTermId", "lastTermBaseLogPosition", "appendedLogPosition", "committedLogPosition")
	if err != nil {
		return p, err
	}
	n := &numbers{m: f}
	p.LastLeadershipTermID = n.i64("lastLeadershipTermId")
	p.LastTermBaseLogPosition = n.i64("lastTermBaseLogPosition")
	p.AppendedLogPosition = n.i64("appendedLogPosition")
	p.CommittedLogPosition = n.i64("committedLogPosition")
	if n.err != nil {
		return p, n.err
	}
	for _, sm := range snapshotRE.FindAllStringSubmatch(m[2], -1) {
		f, err := fields(sm[1], "recordingId", "leadershipTermId", "termBaseLogPosition", "logPosition", "timestamp", "serviceId")
		if err != nil {
			return p, err
		}
		n := &numbers{m: f}
		s := Snapshot{RecordingID: n.i64("recordingId"), LeadershipTermID: n.i64("leadershipTermId"),
			TermBaseLogPosition: n.i64("termBaseLogPosition"), LogPosition: n.i64("logPosition"),
			Timestamp: n.i64("timestamp"), ServiceID: n.i32("serviceId")}
		if n.err != nil {
			return p, n.err
		}
		p.Snapshots = append(p.Snapshots, s)
	}
	if !onlyItems(snapshotRE, m[2], len(p.Snapshots)) {
		return p, fmt.Errorf("text other than Snapshot{...} between the snapshots of %q", m[2])
	}
	if m[3] == "null" {
		return p, nil
	}
	f, err = fields(strings.TrimSuffix(strings.TrimPrefix(m[3], "Log{"), "}"), "recordingId", "leadershipTermId",
		"termBaseLogPosition", "logPosition", "startPosition", "stopPosition", "initialTermId", "termBufferLength",
		"mtuLength", "sessionId")
	if err != nil {
		return p, err
	}
	n = &numbers{m: f}
	p.Log = &Log{RecordingID: n.i64("recordingId"), LeadershipTermID: n.i64("leadershipTermId"),
		TermBaseLogPosition: n.i64("termBaseLogPosition"), LogPosition: n.i64("logPosition"),
		StartPosition: n.i64("startPosition"), StopPosition: n.i64("stopPosition"), InitialTermID: n.i32("initialTermId"),
		TermBufferLength: n.i32("termBufferLength"), MTULength: n.i32("mtuLength"), SessionID: n.i32("sessionId")}
	return p, n.err
}
