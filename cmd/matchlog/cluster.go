package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

const clusterUsage = `usage: matchlog cluster <command> --dir D [flags]

Commands, over a node directory D laid out like Aeron's (D/cluster/recording.log,
D/archive/archive.catalog); --dir may also name D/cluster itself, as Aeron's
ClusterTool takes the cluster directory:
  recording-log               print the recording log's entries, sorted as Aeron sorts them
  recovery-plan               print the recovery plan (--services N, default 1); exit 1 if the
                              latest snapshot set is incomplete
  snapshot                    take a snapshot of a STOPPED matchlog node (--snapshot-mode
                              pauseless|stw, --workers K): start it from its recovery plan
                              (snapshot load + log replay, a new leadership term), take a
                              snapshot at the end of the log, wait until it is complete and
                              durable, stop, and print the new SNAPSHOT entries
  invalidate-latest-snapshot  mark every entry of the latest snapshot set invalid, so that
                              recovery falls back to the previous set; exit 1 if there is none
  revalidate-snapshot         undo the last invalidate-latest-snapshot: restore the entries of
                              the set it invalidated; exit 1 if there is none
  describe                    print the recording log and the archive recordings it references;
                              for a matchlog node also its mark file, log recording, and the
                              latest snapshot set (engine state hash, consensus-module sessions
                              and timers)
  seed-recording-log-from-snapshot
                              a migration step, never a retention job: replace recording.log by
                              the latest complete, loadable snapshot set alone, rebased to log
                              position 0 (as Aeron's ClusterTool command of that name), after
                              copying the old file to recording.log.bak (refused if that exists);
                              prints what it removes from every future blank node's path, and
                              without --i-understand-this-rebases-to-zero only prints it (exit 1)

Every command works on Aeron's directories and on matchlog's alike, except
snapshot. Aeron's ClusterTool snapshot asks a RUNNING consensus module (through
its control counter) to take one; there is no such module to ask here. A running
matchlog node takes snapshots on its own schedule (Options.SnapshotEvery,
SnapshotEveryBytes) or on request (Node.RequestSnapshot), so this command works
only on a stopped matchlog node directory: it refuses one whose mark files show
a live node (activity within 10 s and the recorded process still running; --force
skips the check) and it refuses an Aeron directory, whose service state it
cannot load. A snapshot that fails leaves the directory as it was.

invalidate-latest-snapshot, revalidate-snapshot, snapshot and
seed-recording-log-from-snapshot refuse a live node.
recovery-plan and describe exit 1, naming each problem and the fix that
applies, when the plan cannot be carried out.

Every command takes --json: one JSON object instead of text; its fields are
listed by 'matchlog help cluster <command>'.
`

// clusterFlags are the parsed flags of a `matchlog cluster` command.
type clusterFlags struct {
	dir      string // the node directory (resolved from --dir)
	jsonOut  bool
	services int    // recovery-plan
	mode     string // snapshot
	workers  int    // snapshot
	force    bool   // snapshot
	// seedConfirmed: --i-understand-this-rebases-to-zero
	// (seed-recording-log-from-snapshot).
	seedConfirmed bool
}

// clusterCommands are the commands of `matchlog cluster`.
var clusterCommands = map[string]func(f *clusterFlags, stdout io.Writer) error{
	"recording-log":                    clusterRecordingLog,
	"recovery-plan":                    clusterRecoveryPlan,
	"snapshot":                         clusterSnapshot,
	"invalidate-latest-snapshot":       clusterInvalidateLatestSnapshot,
	"revalidate-snapshot":              clusterRevalidateSnapshot,
	"describe":                         clusterDescribe,
	"seed-recording-log-from-snapshot": clusterSeedRecordingLog,
}

// clusterJSONDocs are the JSON documents of the commands, for their help.
var clusterJSONDocs = map[string]any{
	"recording-log":                    entriesJSON{},
	"recovery-plan":                    planJSON{},
	"snapshot":                         snapshotResult{},
	"invalidate-latest-snapshot":       invalidateJSON{},
	"describe":                         describeDoc{},
	"seed-recording-log-from-snapshot": seedJSON{},
}

// runCluster dispatches `matchlog cluster <command>`.
func runCluster(args []string, stdout, stderr io.Writer) error {
	name, ok, err := subcommand("cluster", args, func(n string) bool { return clusterCommands[n] != nil }, clusterUsage, stderr)
	if !ok {
		return err
	}
	cmd := clusterCommands[name]
	fs := flag.NewFlagSet("cluster "+name, flag.ContinueOnError)
	f := &clusterFlags{services: 1}
	modes := modeList{"pauseless"}
	fs.StringVar(&f.dir, "dir", "", "node directory holding cluster/ and archive/, or its cluster/ directory (required)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object instead of text")
	switch name {
	case "recovery-plan":
		fs.IntVar(&f.services, "services", 1, "number of clustered services (Aeron's serviceCount)")
	case "snapshot":
		fs.Var(&modes, "snapshot-mode", snapshotModeFlagHelp)
		fs.IntVar(&f.workers, "workers", 0, workersFlagHelp)
		fs.BoolVar(&f.force, "force", false, "skip the live-node check (only when sure no node runs in D)")
	case "seed-recording-log-from-snapshot":
		fs.IntVar(&f.services, "services", 1, "number of clustered services: the set seeded from must hold all of them")
		fs.BoolVar(&f.seedConfirmed, seedFlag, false, "do it: without it the command only prints what it would remove, and exits 1")
	}
	fs.Usage = usageWithJSON(fs, fmt.Sprintf("usage: matchlog cluster %s --dir D [flags]\n\n", name), clusterJSONDocs[name])
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "cluster "+name)
	if f.dir == "" {
		return bad("--dir is required")
	}
	if f.services < 0 {
		return bad("--services must not be negative")
	}
	if f.mode, err = modes.one(); err != nil {
		return bad("%v", err)
	}
	if err := checkWorkers(f.workers); err != nil {
		return bad("%v", err)
	}
	if f.dir, err = resolveNodeDir(f.dir); err != nil {
		return err
	}
	return cmd(f, stdout)
}

func clusterDir(d string) string { return filepath.Join(d, cluster.ClusterDirName) }
func archiveDir(d string) string { return filepath.Join(d, cluster.ArchiveDirName) }

func openRecordingLog(d string, readOnly bool) (*recordinglog.Log, error) {
	return recordinglog.Open(vfs.Default, clusterDir(d), recordinglog.Options{ReadOnly: readOnly, SyncLevel: 1})
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func clusterRecordingLog(f *clusterFlags, stdout io.Writer) error {
	d, jsonOut := f.dir, f.jsonOut
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	if jsonOut {
		return writeJSON(stdout, entriesJSON{toEntriesJSON(l.Entries(), clusterTimeUnit(d))})
	}
	_, err = fmt.Fprintln(stdout, recordinglog.Format(l.Entries()))
	return err
}

func clusterRecoveryPlan(f *clusterFlags, stdout io.Writer) error {
	d, jsonOut, services := f.dir, f.jsonOut, f.services
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return catalogRemedy(d, err)
	}
	defer cat.Close()
	// As Aeron's archive sees the catalog once it is open: a recording a
	// crash left active settled to its last whole frame (read-only).
	p, err := l.CreateRecoveryPlan(archive.SettledCatalog{FS: vfs.Default, Dir: archiveDir(d), Catalog: cat}, services)
	if err != nil {
		return cluster.ExplainPlanError(d, cat, err)
	}
	if jsonOut {
		err = writeJSON(stdout, toPlanJSON(p, clusterTimeUnit(d)))
	} else {
		_, err = fmt.Fprintln(stdout, p.String())
	}
	if err != nil {
		return err
	}
	return planFeasible(d, cat, l, p)
}

func clusterInvalidateLatestSnapshot(f *clusterFlags, stdout io.Writer) error {
	d, jsonOut := f.dir, f.jsonOut
	if err := refuseLiveNode(d, "invalidate-latest-snapshot"); err != nil {
		return err
	}
	l, err := openRecordingLog(d, false)
	if err != nil {
		return err
	}
	found, err := l.InvalidateLatestSnapshot()
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if jsonOut {
		err = writeJSON(stdout, invalidateJSON{found, toEntriesJSON(l.Entries(), clusterTimeUnit(d))})
	} else {
		_, err = fmt.Fprintf(stdout, "invalidate latest snapshot: %v\n%s\n", found, recordinglog.Format(l.Entries()))
	}
	if err != nil {
		return err
	}
	if !found {
		return errors.New("no valid snapshot to invalidate")
	}
	return nil
}

// describedRecording is one archive recording the recording log refers to.
type describedRecording struct {
	RecordingID       int64             `json:"recording_id"`
	ReferencedBy      []referenceJSON   `json:"referenced_by" doc:"the recording log entries naming this recording"`
	InCatalog         bool              `json:"in_catalog" doc:"false: the catalog has no such recording (describe exits 1)"`
	State             string            `json:"state,omitempty" doc:"VALID, INVALID or DELETED (absent when not in the catalog)"`
	StartPosition     int64             `json:"start_position"`
	StopPosition      int64             `json:"stop_position" doc:"-1 while recording"`
	InitialTermID     int32             `json:"initial_term_id"`
	TermBufferLength  int32             `json:"term_buffer_length"`
	SegmentFileLength int32             `json:"segment_file_length"`
	MTULength         int32             `json:"mtu_length"`
	SessionID         int32             `json:"session_id"`
	StreamID          int32             `json:"stream_id"`
	StrippedChannel   string            `json:"stripped_channel"`
	Segments          []segmentFileJSON `json:"segments" doc:"segment files, by base position"`
}

// referenceJSON is a recording log entry that names a recording.
type referenceJSON struct {
	EntryIndex       int    `json:"entry_index"`
	Type             string `json:"type" doc:"TERM, SNAPSHOT or STANDBY_SNAPSHOT"`
	LeadershipTermID int64  `json:"leadership_term_id"`
	ServiceID        int32  `json:"service_id" doc:"-1: the consensus module"`
	LogPosition      int64  `json:"log_position"`
	Valid            bool   `json:"valid"`
}

func (r referenceJSON) String() string {
	ref := fmt.Sprintf("%s term %d", r.Type, r.LeadershipTermID)
	if r.Type != recordinglog.TypeTerm.String() {
		ref += fmt.Sprintf(" service %d logPosition %d", r.ServiceID, r.LogPosition)
	}
	if !r.Valid {
		ref += " (invalid)"
	}
	return ref
}

func refsText(refs []referenceJSON) string {
	var parts []string
	for _, r := range refs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

func segmentsText(segs []segmentFileJSON) string {
	var parts []string
	for _, s := range segs {
		parts = append(parts, fmt.Sprintf("%s (%d bytes)", s.Name, s.Size))
	}
	return strings.Join(parts, ", ")
}

func clusterDescribe(f *clusterFlags, stdout io.Writer) error {
	d, jsonOut := f.dir, f.jsonOut
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	desc, err := archive.Describe(vfs.Default, archiveDir(d))
	if err != nil {
		return catalogRemedy(d, err)
	}
	entries := l.Entries()
	var recs []*describedRecording
	byID := map[int64]*describedRecording{}
	for _, e := range entries {
		r := byID[e.RecordingID]
		if r == nil {
			r = &describedRecording{RecordingID: e.RecordingID, Segments: []segmentFileJSON{}}
			byID[e.RecordingID] = r
			recs = append(recs, r)
			describeRecording(r, desc)
		}
		r.ReferencedBy = append(r.ReferencedBy, referenceJSON{EntryIndex: e.Index, Type: e.Type.String(),
			LeadershipTermID: e.LeadershipTermID, ServiceID: e.ServiceID, LogPosition: e.LogPosition, Valid: e.Valid})
	}
	var missing []string
	for _, r := range recs {
		if !r.InCatalog {
			missing = append(missing, fmt.Sprint(r.RecordingID))
		}
	}
	// A matchlog node directory gets a section of its own; an Aeron
	// directory's output stays as it was.
	var node *nodeDescription
	if mark, merr := readClusterMark(d); merr == nil && mark.IsMatchlog() {
		node = describeNode(d, mark, l, entries, byID, desc, time.Now())
	}
	if jsonOut {
		err = writeJSON(stdout, describeDoc{
			RecordingLog: recordingLogJSON{Path: l.Path(), SizeBytes: l.Size(), Entries: toEntriesJSON(entries, clusterTimeUnit(d))},
			Recordings:   recs, Node: node})
	} else {
		err = describeText(stdout, l, entries, recs)
		if err == nil && node != nil {
			err = describeNodeText(stdout, node)
		}
	}
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("recording(s) %s referenced by the recording log are not in the archive catalog", strings.Join(missing, ", "))
	}
	return describePlanFeasible(d, l)
}

// describeRecording fills r from the catalog entry of its id: the VALID one,
// else the last one in file order.
func describeRecording(r *describedRecording, desc *archive.Description) {
	var found *archive.RecordingInfo
	for i := range desc.Recordings {
		info := &desc.Recordings[i]
		if info.Descriptor.RecordingID != r.RecordingID {
			continue
		}
		if found == nil || found.State != archive.StateValid {
			found = info
		}
	}
	if found == nil {
		return
	}
	dd := found.Descriptor
	r.InCatalog = true
	r.State = found.State.String()
	r.StartPosition, r.StopPosition = dd.StartPosition, dd.StopPosition
	r.InitialTermID, r.TermBufferLength, r.SegmentFileLength = dd.InitialTermID, dd.TermBufferLength, dd.SegmentFileLength
	r.MTULength, r.SessionID, r.StreamID, r.StrippedChannel = dd.MTULength, dd.SessionID, dd.StreamID, dd.StrippedChannel
	r.Segments, _ = segmentsJSON(found.Segments)
}

func describeText(w io.Writer, l *recordinglog.Log, entries []recordinglog.Entry, recs []*describedRecording) error {
	var b strings.Builder
	fmt.Fprintf(&b, "recording log %s: %d entries, %d bytes\n", l.Path(), len(entries), l.Size())
	for _, e := range entries {
		valid := "valid"
		if !e.Valid {
			valid = "INVALID"
		}
		fmt.Fprintf(&b, "  #%d @%d %s %s recordingId=%d leadershipTermId=%d termBaseLogPosition=%d logPosition=%d timestamp=%d serviceId=%d",
			e.Index, e.Offset, e.Type, valid, e.RecordingID, e.LeadershipTermID, e.TermBaseLogPosition, e.LogPosition, e.Timestamp, e.ServiceID)
		if e.Type == recordinglog.TypeStandbySnapshot {
			fmt.Fprintf(&b, " archiveEndpoint=%s", e.ArchiveEndpoint)
		}
		b.WriteByte('\n')
	}
	b.WriteString("archive recordings referenced:\n")
	for _, r := range recs {
		if !r.InCatalog {
			fmt.Fprintf(&b, "  recording %d: NOT IN CATALOG (%s)\n", r.RecordingID, refsText(r.ReferencedBy))
			continue
		}
		fmt.Fprintf(&b, "  recording %d: %s startPosition=%d stopPosition=%d initialTermId=%d termBufferLength=%d "+
			"segmentFileLength=%d mtuLength=%d sessionId=%d streamId=%d channel=%s\n",
			r.RecordingID, r.State, r.StartPosition, r.StopPosition, r.InitialTermID, r.TermBufferLength,
			r.SegmentFileLength, r.MTULength, r.SessionID, r.StreamID, r.StrippedChannel)
		fmt.Fprintf(&b, "    referenced by: %s\n", refsText(r.ReferencedBy))
		fmt.Fprintf(&b, "    segments: %s\n", segmentsText(r.Segments))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ---- reading snapshot recordings of a stopped node ----

// scanRecording calls visit for each whole DATA frame of a recording in
// [StartPosition, StopPosition), read through archive.RecordingReader
// (read-only; every frame checked).
func scanRecording(d string, info *archive.RecordingInfo, visit func(pos int64, flags uint8, payload []byte) error) error {
	dd := info.Descriptor
	stop := dd.StopPosition
	if stop == archive.NullPosition {
		var err error
		if stop, _, err = archive.ComputeStopPosition(vfs.Default, archiveDir(d), dd); err != nil {
			return err
		}
	}
	r, err := archive.OpenRecordingReader(vfs.Default, archiveDir(d), dd, dd.StartPosition, stop)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		h, payload, end, ok := r.Next()
		if !ok {
			return r.Err()
		}
		if err := visit(end-archive.AlignedFrameLength(h.FrameLength), h.Flags, payload); err != nil {
			return err
		}
	}
}

// engineSnapshot summarises the engine snapshot in a node's service
// snapshot: the End record's counts and state hash.
type engineSnapshot struct {
	RecordingID      int64  `json:"recording_id" doc:"the service snapshot's recording"`
	LogPosition      int64  `json:"log_position"`
	LeadershipTermID int64  `json:"leadership_term_id"`
	AppVersion       int32  `json:"app_version"`
	StateHash        string `json:"state_hash" doc:"the engine's 64-bit state hash, 16 hex digits"`
	Sources          uint64 `json:"sources" doc:"ingress sources with a high-water mark"`
	Instruments      uint64 `json:"instruments"`
	Orders           uint64 `json:"orders" doc:"resting orders"`
	Triggers         uint64 `json:"triggers" doc:"armed stop orders"`
	// Verified: the snapshot was loaded strictly (snapshot.Load) and the
	// rebuilt engine's state hash equals End's.
	Verified bool `json:"verified" doc:"true: loaded strictly and the rebuilt engine's hash checked"`
}

// readEngineSnapshot reads the engine snapshot in the service snapshot of
// a stopped node directory at logPosition (the latest if < 0), verified
// with verify ([enginesvc.ReadSnapshot]).
func readEngineSnapshot(d string, logPosition int64, verify bool) (*engineSnapshot, error) {
	e, err := enginesvc.ReadSnapshot(vfs.Default, d, logPosition, verify)
	if err != nil {
		return nil, err
	}
	return toEngineSnapshot(e), nil
}

func toEngineSnapshot(e *enginesvc.EngineSnapshot) *engineSnapshot {
	return &engineSnapshot{LogPosition: e.LogPosition, LeadershipTermID: e.LeadershipTermID, AppVersion: e.AppVersion,
		StateHash: fmt.Sprintf("%016x", e.StateHash), Sources: e.Sources, Instruments: e.Instruments, Orders: e.Orders,
		Triggers: e.Triggers, Verified: e.Verified}
}

// cmSnapshot summarises a consensus-module snapshot recording.
type cmSnapshot struct {
	RecordingID     int64 `json:"recording_id"`
	NextSessionID   int64 `json:"next_session_id"`
	Sessions        int   `json:"sessions"`
	Timers          int   `json:"timers"`
	PendingMessages int   `json:"pending_service_messages"`
}

// readCMSnapshot counts the ConsensusModule, ClusterSession, Timer and
// pending-message records of a consensus-module snapshot recording
// (aeron-formats.md §3.4), reading the first fragment of each message.
func readCMSnapshot(d string, info *archive.RecordingInfo) (*cmSnapshot, error) {
	s := &cmSnapshot{RecordingID: info.Descriptor.RecordingID}
	marks := 0
	err := scanRecording(d, info, func(_ int64, flags uint8, b []byte) error {
		if flags&0x80 == 0 || len(b) < 8 { // not a message's first fragment
			return nil
		}
		le := binary.LittleEndian
		template, schema := le.Uint16(b[2:]), le.Uint16(b[4:])
		if schema != 111 {
			return fmt.Errorf("recording %d: message of schema %d in a consensus-module snapshot", s.RecordingID, schema)
		}
		switch template {
		case 100:
			marks++
		case 105:
			if len(b) >= 16 {
				s.NextSessionID = int64(le.Uint64(b[8:]))
			}
		case 103:
			s.Sessions++
		case 104:
			s.Timers++
		case 1:
			s.PendingMessages++
		}
		return nil
	})
	if err == nil && marks != 2 {
		err = fmt.Errorf("recording %d: %d snapshot markers, want BEGIN and END", s.RecordingID, marks)
	}
	return s, err
}

// ---- describe: the matchlog node section ----

// nodeDescription is what describe adds for a matchlog node directory.
type nodeDescription struct {
	Mark       *clusterMark `json:"mark_file" doc:"cluster/cluster-mark.dat"`
	Live       bool         `json:"live" doc:"a node looks live in the directory"`
	LiveReason string       `json:"live_reason,omitempty"`
	// NodeState is node-state.dat (candidateTermId, timestamp,
	// logPosition), nil if missing or unreadable (then a problem).
	NodeState *nodeStateJSON `json:"node_state,omitempty"`
	Log       *nodeLog       `json:"log,omitempty" doc:"the log recording"`
	Snapshot  *nodeSnap      `json:"latest_snapshot,omitempty" doc:"the latest snapshot set of the recovery plan"`
	// Problems are what could not be read (describe still exits 0 for
	// them; recovery-plan and a start report them as errors).
	Problems []string `json:"problems,omitempty" doc:"what could not be read"`
}

// nodeStateJSON is node-state.dat.
type nodeStateJSON struct {
	CandidateTermID int64 `json:"candidate_term_id"`
	Timestamp       int64 `json:"timestamp_ms" doc:"epoch ms"`
	LogPosition     int64 `json:"log_position"`
}

type nodeLog struct {
	RecordingID          int64             `json:"recording_id"`
	StartPosition        int64             `json:"start_position"`
	StopPosition         int64             `json:"stop_position"`
	Terms                int               `json:"terms" doc:"TERM entries"`
	LastLeadershipTermID int64             `json:"last_leadership_term_id"`
	Segments             []segmentFileJSON `json:"segments"`
}

type nodeSnap struct {
	LogPosition      int64           `json:"log_position"`
	LeadershipTermID int64           `json:"leadership_term_id"`
	Timestamp        int64           `json:"timestamp" doc:"cluster time, in timestamp_unit"`
	TimestampUnit    string          `json:"timestamp_unit" doc:"ns (matchlog) or ms (Aeron's default)"`
	RecordingIDs     []int64         `json:"recording_ids" doc:"the consensus module's, then service 0's"`
	Engine           *engineSnapshot `json:"engine,omitempty"`
	ConsensusModule  *cmSnapshot     `json:"consensus_module,omitempty"`
}

func describeNode(d string, mark *clusterMark, l *recordinglog.Log, entries []recordinglog.Entry,
	byID map[int64]*describedRecording, desc *archive.Description, now time.Time) *nodeDescription {
	n := &nodeDescription{Mark: mark}
	n.Live, n.LiveReason = nodeLiveness(d, mark, now)
	problem := func(format string, args ...any) { n.Problems = append(n.Problems, fmt.Sprintf(format, args...)) }
	if st, err := cluster.ReadNodeState(vfs.Default, clusterDir(d)); err == nil {
		n.NodeState = &nodeStateJSON{st.CandidateTermID, st.Timestamp, st.LogPosition}
	} else {
		problem("node state: %v", err)
	}
	for _, e := range entries {
		if e.Type != recordinglog.TypeTerm {
			continue
		}
		if n.Log == nil {
			n.Log = &nodeLog{RecordingID: e.RecordingID}
		}
		n.Log.Terms++
		n.Log.LastLeadershipTermID = e.LeadershipTermID
	}
	if n.Log != nil {
		if r := byID[n.Log.RecordingID]; r != nil && r.InCatalog {
			n.Log.StartPosition, n.Log.StopPosition, n.Log.Segments = r.StartPosition, r.StopPosition, r.Segments
		}
	}
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		problem("catalog: %v", err)
		return n
	}
	defer cat.Close()
	plan, err := l.CreateRecoveryPlan(archive.SettledCatalog{FS: vfs.Default, Dir: archiveDir(d), Catalog: cat}, 1)
	if err != nil {
		problem("recovery plan: %v", err)
		return n
	}
	if perr := plan.Err(); perr != nil {
		problem("latest snapshot set: %v", perr)
	}
	if len(plan.Snapshots) == 0 {
		return n
	}
	cm := plan.Snapshots[0]
	s := &nodeSnap{LogPosition: cm.LogPosition, LeadershipTermID: cm.LeadershipTermID, Timestamp: cm.Timestamp, TimestampUnit: clusterTimeUnit(d)}
	for _, sn := range plan.Snapshots {
		s.RecordingIDs = append(s.RecordingIDs, sn.RecordingID)
	}
	n.Snapshot = s
	if s.Engine, err = readEngineSnapshot(d, cm.LogPosition, false); err != nil {
		problem("engine snapshot at log position %d: %v", cm.LogPosition, err)
	} else if len(plan.Snapshots) > 1 {
		s.Engine.RecordingID = plan.Snapshots[1].RecordingID
	}
	var info *archive.RecordingInfo
	for i := range desc.Recordings {
		if r := &desc.Recordings[i]; r.Descriptor.RecordingID == cm.RecordingID && (info == nil || r.State == archive.StateValid) {
			info = r
		}
	}
	if info == nil {
		problem("consensus-module snapshot recording %d is not in the catalog", cm.RecordingID)
	} else if s.ConsensusModule, err = readCMSnapshot(d, info); err != nil {
		problem("consensus-module snapshot: %v", err)
	}
	return n
}

func describeNodeText(w io.Writer, n *nodeDescription) error {
	var b strings.Builder
	b.WriteString("matchlog node:\n")
	m := n.Mark
	state := "stopped"
	if n.Live {
		state = "LIVE (" + n.LiveReason + ")"
	} else if m.ActivityTimestamp != archive.NullTimestamp {
		state = "not stopped cleanly (crashed?), not live"
	}
	fmt.Fprintf(&b, "  mark file: pid=%d startTimestamp=%d activityTimestamp=%d: %s\n", m.PID, m.StartTimestamp, m.ActivityTimestamp, state)
	if ns := n.NodeState; ns != nil {
		fmt.Fprintf(&b, "  node state: candidateTermId=%d timestamp=%d logPosition=%d\n", ns.CandidateTermID, ns.Timestamp, ns.LogPosition)
	}
	if lg := n.Log; lg != nil {
		fmt.Fprintf(&b, "  log: recording %d startPosition=%d stopPosition=%d, %d term(s), last leadershipTermId=%d\n",
			lg.RecordingID, lg.StartPosition, lg.StopPosition, lg.Terms, lg.LastLeadershipTermID)
		fmt.Fprintf(&b, "    segments: %s\n", segmentsText(lg.Segments))
	} else {
		b.WriteString("  log: none\n")
	}
	if s := n.Snapshot; s != nil {
		fmt.Fprintf(&b, "  latest snapshot set: logPosition=%d leadershipTermId=%d timestamp=%d recordings=%s\n",
			s.LogPosition, s.LeadershipTermID, s.Timestamp, formatSetIDs(s.RecordingIDs))
		if e := s.Engine; e != nil {
			fmt.Fprintf(&b, "    engine: stateHash=%s sources=%d instruments=%d orders=%d triggers=%d appVersion=%d\n",
				e.StateHash, e.Sources, e.Instruments, e.Orders, e.Triggers, e.AppVersion)
		}
		if c := s.ConsensusModule; c != nil {
			fmt.Fprintf(&b, "    consensus module: sessions=%d timers=%d nextSessionId=%d pendingServiceMessages=%d\n",
				c.Sessions, c.Timers, c.NextSessionID, c.PendingMessages)
		}
	} else {
		b.WriteString("  latest snapshot set: none\n")
	}
	for _, p := range n.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ---- snapshot ----

// snapshotClock and snapshotEpochClock are the clocks of the node `cluster
// snapshot` starts (nil: the wall clock); the golden tests fix them.
var snapshotClock, snapshotEpochClock func() int64

// snapshotTimeout bounds the wait for the snapshot to be recorded.
const snapshotTimeout = 10 * time.Minute

// snapshotResult is what `cluster snapshot --json` prints.
type snapshotResult struct {
	Mode             string          `json:"snapshot_mode" doc:"pauseless or stw"`
	LogPosition      int64           `json:"log_position" doc:"where the snapshot was taken: the end of the log"`
	LeadershipTermID int64           `json:"leadership_term_id" doc:"the new term the node started"`
	RecordingIDs     []int64         `json:"recording_ids" doc:"the consensus module's, then service 0's"`
	StateHash        string          `json:"state_hash" doc:"the node's engine state hash"`
	Engine           *engineSnapshot `json:"engine" doc:"the new engine snapshot, read back strictly"`
	Replayed         int64           `json:"replayed_entries" doc:"log entries replayed on the start"`
	Entries          []entryJSON     `json:"entries" doc:"the SNAPSHOT entries added to recording.log"`
}

// checkSnapshotDir refuses what `cluster snapshot` must not open: a
// directory that is not a node's, an Aeron node's, a live node's. It
// returns the app version of the latest engine snapshot (0 if none).
func checkSnapshotDir(d string, force bool, entries []recordinglog.Entry) (int32, error) {
	mark, err := readClusterMark(d)
	if err != nil {
		return 0, fmt.Errorf("%s is not a matchlog node directory: %w", d, err)
	}
	if !mark.IsMatchlog() {
		return 0, fmt.Errorf("%s is not a matchlog node directory (cluster-mark.dat names service %q, not %q): "+
			"cluster snapshot only works on matchlog node directories; on an Aeron cluster use Aeron's ClusterTool snapshot, "+
			"which asks its running consensus module", d, mark.ServiceName, matchlogServiceName)
	}
	if !force {
		if live, why := nodeLiveness(d, mark, time.Now()); live {
			return 0, fmt.Errorf("the node in %s looks live: %s; a running node takes snapshots on its own schedule "+
				"or on request (Node.RequestSnapshot): stop it first (or --force if no node runs there)", d, why)
		}
	}
	for _, e := range entries {
		if e.Type == recordinglog.TypeSnapshot && e.Valid && e.ServiceID == 0 {
			es, err := readEngineSnapshot(d, -1, false)
			if errors.Is(err, enginesvc.ErrNotEngineSnapshot) {
				return 0, fmt.Errorf("%s is not a matchlog node directory: %w; cluster snapshot only works on matchlog node directories", d, err)
			}
			if err != nil {
				return 0, fmt.Errorf("latest service snapshot: %w", err)
			}
			return es.AppVersion, nil
		}
	}
	return 0, nil
}

func clusterSnapshot(f *clusterFlags, stdout io.Writer) error {
	d := f.dir
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	before := l.Entries()
	l.Close()
	appVersion, err := checkSnapshotDir(d, f.force, before)
	if err != nil {
		return err
	}
	opts := cluster.Options{Dir: d, FileSyncLevel: 1, AppVersion: appVersion, SnapshotMode: cluster.Pauseless,
		Clock: snapshotClock, EpochClock: snapshotEpochClock, IgnoreLiveMarkFile: f.force}
	if f.mode == "stw" {
		opts.SnapshotMode = cluster.StopTheWorld
	}
	// Keep the node's geometry: its log recording's term length, MTU and
	// segment length (the snapshot recordings get the same).
	if term, ok := lastTerm(before); ok {
		cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		dd, err := cat.Descriptor(term.RecordingID)
		cat.Close()
		if err != nil {
			return fmt.Errorf("log recording %d: %w", term.RecordingID, err)
		}
		opts.TermLength, opts.MTU, opts.SegmentLength = int(dd.TermBufferLength), int(dd.MTULength), dd.SegmentFileLength
	}
	st, err := enginesvc.SnapshotStopped(opts, enginesvc.Options{Workers: f.workers, AppVersion: appVersion}, snapshotTimeout)
	if err != nil {
		if !errors.Is(err, cluster.ErrNotRestored) {
			err = fmt.Errorf("%w (the directory is as it was before the command)", err)
		}
		return err
	}
	res := &snapshotResult{Mode: f.mode, LogPosition: st.LogPosition, LeadershipTermID: st.LeadershipTermID,
		RecordingIDs: st.RecordingIDs, StateHash: fmt.Sprintf("%016x", st.StateHash), Engine: toEngineSnapshot(st.Engine),
		Replayed: st.Replayed}
	res.Engine.RecordingID = res.RecordingIDs[1]
	added := st.Added
	res.Entries = toEntriesJSON(added, "ns")
	if f.jsonOut {
		return writeJSON(stdout, res)
	}
	e := res.Engine
	_, err = fmt.Fprintf(stdout, "snapshot (%s) at logPosition=%d leadershipTermId=%d recordings=%s (replayed %d log entries)\n"+
		"engine: stateHash=%s sources=%d instruments=%d orders=%d triggers=%d\nnew entries: %s\n",
		res.Mode, res.LogPosition, res.LeadershipTermID, formatSetIDs(res.RecordingIDs), res.Replayed,
		res.StateHash, e.Sources, e.Instruments, e.Orders, e.Triggers, recordinglog.Format(added))
	return err
}

// formatSetIDs names the recordings of a snapshot set: the consensus
// module's first, then each service's.
func formatSetIDs(ids []int64) string {
	var parts []string
	for i, id := range ids {
		who := "cm"
		if i > 0 {
			who = fmt.Sprintf("svc%d", i-1)
		}
		parts = append(parts, fmt.Sprintf("%s rec%d", who, id))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func lastTerm(entries []recordinglog.Entry) (recordinglog.Entry, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Type == recordinglog.TypeTerm && e.Valid {
			return e, true
		}
	}
	return recordinglog.Entry{}, false
}
