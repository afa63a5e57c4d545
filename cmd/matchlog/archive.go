package main

import (
	"cmp"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/internal/vfs"
)

const archiveUsage = `usage: matchlog archive <command> --dir D [flags]

Commands, over the archive of a node directory D (D/archive/archive.catalog), or
over an archive directory itself (holding archive.catalog), as Aeron's
ArchiveTool takes it:
  describe  every recording (or --id N): state, positions, segment files and
            their sizes, files pending deletion (*.deleted) and unknown segment files
  verify    ArchiveTool verify: [--all] scan every segment, [--truncate] cut a
            torn tail and fix the stop position, [--mark-invalid], [--id N];
            an active recording (stop -1, as a crash leaves it) that ends in a
            whole frame is OK, its stop settled as Aeron's archive settles it
            (not written without --truncate); exit 1 when a recording is not OK
  detach    --id N --position P: move the recording's start to the segment
            boundary P (Aeron's detachSegments); the files stay
  delete    --id N: rename the segment files below the start to *.deleted and,
            with --now or --delay 0, unlink them (otherwise the next archive
            Open schedules them)
  purge     --id N --position P: detach, then delete as above
  replay    --id N [--from P] [--to P]: print each frame (position, length,
            type, session, stream, term id and offset, SBE header); with
            --json, counts
  compact   rewrite the catalog without its DELETED entries, as ArchiveTool
            compact (crash-safe: a new file synced and renamed over it); the
            VALID entries keep every byte and nextRecordingId is kept, so no
            id is reused; --invalid also drops INVALID entries and unlinks
            their segment files, as ArchiveTool does. Of a node's archive
            (cluster/recording.log beside it), recording.log is compacted
            first: SNAPSHOT entries of recordings gone from the archive,
            below every snapshot set that still loads, and TERM entries of
            terms that ended before the log's start; the recovery plan and
            the retention verdict are the same after. Nothing is written
            when nothing can go

detach and purge of a node's archive (cluster/recording.log beside it, ours or
Aeron's) refuse to move the log recording's start past C, the greatest segment
boundary at or below the latest complete snapshot set's position S (with no
such set, any detach of the log), and any detach of a snapshot recording: the
error names S, C and the position asked for. --unsafe-past-snapshot overrides
and says so in the output. 'matchlog retention plan' computes a safe cutoff.

detach, delete, purge, compact and verify --truncate|--mark-invalid refuse a
directory whose archive-mark.dat shows a live archive (activity within 10 s and
its process still running; compact of a node's archive also a live node).
detach, delete and purge check the request first, so a
refused one changes nothing; then they open the archive as a restart would (a
fresh mark file, recordings left active by a crash settled).

Ids (--id) are recording ids of the catalog: a negative id, or one the catalog
does not hold, is an error. Every command takes --json: one JSON object instead
of text; its fields are listed by 'matchlog help archive <command>'.
`

// archiveFlags are the flags of every archive command; each command
// registers those it uses.
type archiveFlags struct {
	dir         string
	jsonOut     bool
	id          int64
	position    int64
	from, to    int64
	all         bool
	truncate    bool
	markInvalid bool
	now         bool
	delay       time.Duration
	unsafe      bool
	invalid     bool
}

// archiveCommands are the commands of `matchlog archive`, with the flags
// each takes beyond --dir and --json.
var archiveCommands = map[string]struct {
	flags []string
	run   func(f *archiveFlags, stdout io.Writer) error
}{
	"describe": {[]string{"id"}, archiveDescribe},
	"verify":   {[]string{"all", "truncate", "mark-invalid", "id"}, archiveVerify},
	"detach":   {[]string{"id", "position", "unsafe-past-snapshot"}, archiveDetach},
	"delete":   {[]string{"id", "now", "delay"}, archiveDelete},
	"purge":    {[]string{"id", "position", "now", "delay", "unsafe-past-snapshot"}, archivePurge},
	"replay":   {[]string{"id", "from", "to"}, archiveReplay},
	"compact":  {[]string{"invalid"}, archiveCompact},
}

// archiveJSONDocs are the JSON documents of the commands, for their help.
var archiveJSONDocs = map[string]any{
	"describe": archiveDescribeJSON{},
	"verify":   verifyReportJSON{},
	"detach":   removalJSON{},
	"delete":   removalJSON{},
	"purge":    removalJSON{},
	"replay":   replayCounts{},
	"compact":  compactJSON{},
}

// runArchive dispatches `matchlog archive <command>`.
func runArchive(args []string, stdout, stderr io.Writer) error {
	name, ok, err := subcommand("archive", args, func(n string) bool { _, ok := archiveCommands[n]; return ok }, archiveUsage, stderr)
	if !ok {
		return err
	}
	cmd := archiveCommands[name]
	f := &archiveFlags{id: -1, position: -1, from: -1, to: -1}
	fs := flag.NewFlagSet("archive "+name, flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", "", "node directory holding archive/, or the archive directory itself (required)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object instead of text")
	for _, fl := range cmd.flags {
		switch fl {
		case "id":
			help := "recording id (required)"
			if name == "verify" || name == "describe" {
				help = "recording id (default: every recording)"
			}
			fs.Int64Var(&f.id, "id", -1, help)
		case "position":
			fs.Int64Var(&f.position, "position", -1, "new start position: a segment boundary (required)")
		case "from":
			fs.Int64Var(&f.from, "from", -1, "first position (default: the start)")
		case "to":
			fs.Int64Var(&f.to, "to", -1, "end position, exclusive (default: the stop)")
		case "all":
			fs.BoolVar(&f.all, "all", false, "scan every segment, not only the last")
		case "truncate":
			fs.BoolVar(&f.truncate, "truncate", false, "cut a torn tail and write the computed stop position")
		case "mark-invalid":
			fs.BoolVar(&f.markInvalid, "mark-invalid", false, "mark recordings with a real mismatch INVALID")
		case "now":
			fs.BoolVar(&f.now, "now", false, "unlink the renamed files at once")
		case "delay":
			fs.DurationVar(&f.delay, "delay", archive.DefaultDeleteDelay, "delay before unlinking; 0 unlinks at once")
		case "invalid":
			fs.BoolVar(&f.invalid, "invalid", false, "drop INVALID entries too, and unlink their segment files (as ArchiveTool compact)")
		case "unsafe-past-snapshot":
			fs.BoolVar(&f.unsafe, "unsafe-past-snapshot", false, "detach even past the latest snapshot's boundary (a restart of this member then needs a rebuild)")
		}
	}
	fs.Usage = usageWithJSON(fs, fmt.Sprintf("usage: matchlog archive %s --dir D [flags]\n\n", name), archiveJSONDocs[name])
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	idGiven := flagGiven(fs, "id")
	idRequired := name != "describe" && name != "verify" && name != "compact"
	bad := func(msg string) error {
		fmt.Fprintf(stderr, "archive %s: %s\n", name, msg)
		fs.Usage()
		return errUsage
	}
	switch {
	case f.dir == "":
		return bad("--dir is required")
	case badID(f.id, idGiven, idRequired) != "":
		return bad(badID(f.id, idGiven, idRequired))
	case (name == "detach" || name == "purge") && f.position < 0:
		return bad("--position is required (a segment boundary, not negative)")
	case flagGiven(fs, "from") && f.from < 0, flagGiven(fs, "to") && f.to < 0:
		return bad("--from and --to must not be negative")
	case f.delay < 0:
		return bad("--delay must not be negative")
	}
	if f.dir, err = resolveDir(f.dir, cluster.ArchiveDirName, archive.CatalogFileName); err != nil {
		return err
	}
	if idGiven {
		if err := checkRecordingID(f.dir, f.id); err != nil {
			return err
		}
	}
	return cmd.run(f, stdout)
}

// checkRecordingID fails when the catalog in dir has no recording id,
// naming the ids it has.
func checkRecordingID(dir string, id int64) error {
	cat, err := archive.OpenCatalogFile(vfs.Default, dir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer cat.Close()
	if _, err := cat.Descriptor(id); err == nil {
		return nil
	}
	desc, err := archive.Describe(vfs.Default, dir)
	if err != nil {
		return err
	}
	var ids []string
	for _, r := range desc.Recordings {
		ids = append(ids, fmt.Sprint(r.Descriptor.RecordingID))
	}
	have := "none"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return fmt.Errorf("recording %d is not in the catalog of %s (recordings: %s)", id, dir, have)
}

// describeJSON is one recording of `archive describe --json`.
type describeJSON struct {
	RecordingID       int64             `json:"recording_id"`
	State             string            `json:"state" doc:"VALID, INVALID or DELETED"`
	CatalogOffset     int64             `json:"catalog_offset" doc:"byte offset of the descriptor in archive.catalog"`
	StartPosition     int64             `json:"start_position"`
	StopPosition      int64             `json:"stop_position" doc:"-1 while recording"`
	StartTimestamp    int64             `json:"start_timestamp_ms" doc:"epoch ms"`
	StopTimestamp     int64             `json:"stop_timestamp_ms" doc:"epoch ms, -1 while recording"`
	InitialTermID     int32             `json:"initial_term_id"`
	SegmentFileLength int32             `json:"segment_file_length"`
	TermBufferLength  int32             `json:"term_buffer_length"`
	MTULength         int32             `json:"mtu_length"`
	SessionID         int32             `json:"session_id"`
	StreamID          int32             `json:"stream_id"`
	StrippedChannel   string            `json:"stripped_channel"`
	OriginalChannel   string            `json:"original_channel"`
	SourceIdentity    string            `json:"source_identity"`
	Segments          []segmentFileJSON `json:"segments" doc:"segment files, by base position"`
	SegmentBytes      int64             `json:"segment_bytes" doc:"their total size"`
	Deleted           []segmentFileJSON `json:"deleted" doc:"files renamed to *.deleted, waiting to be unlinked"`
}

// segmentFileJSON is a segment file, everywhere a JSON output lists one.
type segmentFileJSON struct {
	Name string `json:"name" doc:"<recordingId>-<basePosition>.rec"`
	Base int64  `json:"base_position" doc:"the log position of the segment's first byte"`
	Size int64  `json:"size_bytes"`
}

// segmentRefJSON is a segment named by a report (it may not exist).
type segmentRefJSON struct {
	Name string `json:"name"`
	Base int64  `json:"base_position" doc:"-1 if the name does not parse"`
}

func segmentsJSON(files []archive.SegmentFile) ([]segmentFileJSON, int64) {
	out := []segmentFileJSON{}
	var total int64
	for _, s := range files {
		out = append(out, segmentFileJSON{s.Name, s.Base, s.Size})
		total += s.Size
	}
	return out, total
}

func segmentRefs(names []string) []segmentRefJSON {
	out := []segmentRefJSON{}
	for _, n := range names {
		_, base, err := archive.ParseSegmentFileName(strings.TrimSuffix(n, archive.DeletedSuffix))
		if err != nil {
			base = -1
		}
		out = append(out, segmentRefJSON{n, base})
	}
	return out
}

// archiveDescribeJSON is `archive describe --json`.
type archiveDescribeJSON struct {
	Dir             string         `json:"dir" doc:"the archive directory"`
	CatalogVersion  string         `json:"catalog_version"`
	Alignment       int            `json:"alignment"`
	Capacity        int64          `json:"capacity_bytes"`
	NextRecordingID int64          `json:"next_recording_id"`
	Mark            *markJSON      `json:"mark" doc:"archive-mark.dat; null if missing or unreadable"`
	MarkError       string         `json:"mark_error,omitempty"`
	Recordings      []describeJSON `json:"recordings"`
	UnknownSegments []string       `json:"unknown_files" doc:"*.rec files that belong to no recording"`
}

func archiveDescribe(f *archiveFlags, stdout io.Writer) error {
	desc, err := archive.Describe(vfs.Default, f.dir)
	if err != nil {
		return err
	}
	deleted, err := archive.DeletedSegments(vfs.Default, f.dir)
	if err != nil {
		return err
	}
	deletedOf := map[int64][]archive.SegmentFile{}
	for _, s := range deleted {
		id, _, _ := archive.ParseSegmentFileName(strings.TrimSuffix(s.Name, archive.DeletedSuffix))
		deletedOf[id] = append(deletedOf[id], s)
	}
	recs := []describeJSON{}
	for _, r := range desc.Recordings {
		d := r.Descriptor
		if f.id >= 0 && d.RecordingID != f.id {
			continue
		}
		j := describeJSON{
			RecordingID: d.RecordingID, State: r.State.String(), CatalogOffset: r.Offset,
			StartPosition: d.StartPosition, StopPosition: d.StopPosition,
			StartTimestamp: d.StartTimestamp, StopTimestamp: d.StopTimestamp,
			InitialTermID: d.InitialTermID, SegmentFileLength: d.SegmentFileLength, TermBufferLength: d.TermBufferLength,
			MTULength: d.MTULength, SessionID: d.SessionID, StreamID: d.StreamID,
			StrippedChannel: d.StrippedChannel, OriginalChannel: d.OriginalChannel, SourceIdentity: d.SourceIdentity,
		}
		j.Segments, j.SegmentBytes = segmentsJSON(r.Segments)
		j.Deleted, _ = segmentsJSON(deletedOf[d.RecordingID])
		recs = append(recs, j)
	}
	if f.jsonOut {
		out := archiveDescribeJSON{f.dir, versionText(desc.CatalogVersion), desc.CatalogAlignment, desc.CatalogCapacity, desc.NextRecordingID,
			markInfo(desc.Mark), errText(desc.MarkErr), recs, append([]string{}, desc.UnknownSegments...)}
		return writeJSON(stdout, out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "archive %s: catalog version %s, alignment %d, capacity %d, nextRecordingId %d\n",
		f.dir, versionText(desc.CatalogVersion), desc.CatalogAlignment, desc.CatalogCapacity, desc.NextRecordingID)
	switch m := desc.Mark; {
	case m != nil:
		fmt.Fprintf(&b, "mark file: version %s, pid %d, activity %d, start %d, error buffer %d\n",
			versionText(m.Version), m.PID, m.ActivityTimestamp, m.StartTimestamp, m.ErrorBufferLength)
	case desc.MarkErr != nil:
		fmt.Fprintf(&b, "mark file: unreadable: %v\n", desc.MarkErr)
	default:
		b.WriteString("mark file: none\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tstate\tstart\tstop\tsegment\tterm\tinitTerm\tsession\tstream\tfiles\tbytes\tdeleted\tchannel")
	for _, r := range recs {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.RecordingID, r.State, r.StartPosition, r.StopPosition,
			r.SegmentFileLength, r.TermBufferLength, r.InitialTermID, r.SessionID, r.StreamID, len(r.Segments), r.SegmentBytes,
			len(r.Deleted), r.StrippedChannel)
	}
	tw.Flush()
	for _, r := range recs {
		var parts []string
		for _, s := range r.Segments {
			parts = append(parts, fmt.Sprintf("%s (%d)", s.Name, s.Size))
		}
		for _, s := range r.Deleted {
			parts = append(parts, fmt.Sprintf("%s (%d, pending deletion)", s.Name, s.Size))
		}
		fmt.Fprintf(&b, "recording %d files: %s\n", r.RecordingID, strings.Join(parts, ", "))
	}
	if len(desc.UnknownSegments) > 0 {
		fmt.Fprintf(&b, "unknown segment files: %s\n", strings.Join(desc.UnknownSegments, ", "))
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

type markJSON struct {
	Version           string `json:"version"`
	ActivityTimestamp int64  `json:"activity_timestamp_ms" doc:"epoch ms; -1: stopped cleanly"`
	StartTimestamp    int64  `json:"start_timestamp_ms" doc:"epoch ms"`
	PID               int64  `json:"pid"`
	ErrorBufferLength int32  `json:"error_buffer_length"`
	ArchiveID         int64  `json:"archive_id"`
	AeronDirectory    string `json:"aeron_directory"`
}

func markInfo(m *archive.MarkFile) *markJSON {
	if m == nil {
		return nil
	}
	return &markJSON{versionText(m.Version), m.ActivityTimestamp, m.StartTimestamp, m.PID, m.ErrorBufferLength, m.ArchiveID, m.AeronDirectory}
}

func versionText(v int32) string { return fmt.Sprintf("%d.%d.%d", v>>16&0xff, v>>8&0xff, v&0xff) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// verifyJSON is one recording of `archive verify --json`.
type verifyJSON struct {
	RecordingID     int64            `json:"recording_id"`
	State           string           `json:"state" doc:"the catalog state (after the verify)"`
	Status          string           `json:"status" doc:"OK or what is wrong"`
	Problems        []string         `json:"problems" doc:"every finding in words"`
	StoredStop      int64            `json:"stored_stop_position" doc:"the catalog's stop position"`
	ComputedStop    int64            `json:"computed_stop_position" doc:"the stop position the segment files show"`
	LastSegment     string           `json:"last_segment" doc:"the file scanned last"`
	Truncated       bool             `json:"truncated" doc:"--truncate cut a torn tail"`
	TruncatedAt     int64            `json:"truncated_at,omitempty" doc:"file offset in last_segment"`
	StopUpdated     bool             `json:"stop_updated"`
	MarkedInvalid   bool             `json:"marked_invalid"`
	Settled         bool             `json:"settled" doc:"active (stored stop -1, as a crash leaves it): computed_stop_position is the stop Aeron's archive settles it to on opening; OK, nothing written"`
	OrphanSegments  []segmentRefJSON `json:"orphan_segments" doc:"files outside the recording's range"`
	MissingSegments []segmentRefJSON `json:"missing_segments" doc:"segments inside the range with no file"`
}

// verifyReportJSON is `archive verify --json`.
type verifyReportJSON struct {
	OK              bool         `json:"ok" doc:"false: exit 1"`
	Recordings      []verifyJSON `json:"recordings"`
	UnknownSegments []string     `json:"unknown_files" doc:"*.rec files that belong to no recording"`
}

func archiveVerify(f *archiveFlags, stdout io.Writer) error {
	opts := archive.VerifyOptions{AllSegments: f.all, Truncate: f.truncate, MarkInvalid: f.markInvalid}
	if f.id >= 0 {
		opts.RecordingID = &f.id
	}
	if f.truncate || f.markInvalid {
		if err := refuseLive(f.dir); err != nil {
			return err
		}
	}
	rep, err := archive.Verify(vfs.Default, f.dir, opts)
	if err != nil {
		return err
	}
	if f.jsonOut {
		recs := []verifyJSON{}
		for _, r := range rep.Recordings {
			recs = append(recs, verifyJSON{r.RecordingID, r.State.String(), r.Status.String(), append([]string{}, r.Problems...),
				r.StoredStop, r.ComputedStop, r.LastSegment, r.Truncated, r.TruncatedAt, r.StopUpdated, r.MarkedInvalid, r.Settled,
				segmentRefs(r.OrphanSegments), segmentRefs(r.MissingSegments)})
		}
		err = writeJSON(stdout, verifyReportJSON{rep.OK(), recs, append([]string{}, rep.UnknownSegments...)})
	} else {
		var b strings.Builder
		for _, r := range rep.Recordings {
			fmt.Fprintf(&b, "recording %d (%s): %s", r.RecordingID, r.State, r.Status)
			if r.Truncated {
				fmt.Fprintf(&b, ", truncated %s at %d", r.LastSegment, r.TruncatedAt)
			}
			if r.StopUpdated {
				fmt.Fprintf(&b, ", stop %d -> %d", r.StoredStop, r.ComputedStop)
			}
			if r.MarkedInvalid {
				b.WriteString(", marked INVALID")
			}
			if r.Settled {
				fmt.Fprintf(&b, ", active: stop -1 settles to %d (as Aeron's archive on opening; not written)", r.ComputedStop)
			}
			b.WriteByte('\n')
			for _, p := range r.Problems {
				fmt.Fprintf(&b, "  %s\n", p)
			}
			if len(r.OrphanSegments) > 0 {
				fmt.Fprintf(&b, "  orphan segments: %s\n", strings.Join(r.OrphanSegments, ", "))
			}
			if len(r.MissingSegments) > 0 {
				fmt.Fprintf(&b, "  missing segments: %s\n", strings.Join(r.MissingSegments, ", "))
			}
		}
		if len(rep.UnknownSegments) > 0 {
			fmt.Fprintf(&b, "unknown segment files: %s\n", strings.Join(rep.UnknownSegments, ", "))
		}
		_, err = io.WriteString(stdout, b.String())
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errors.New("verify found problems")
	}
	return nil
}

// openArchive opens the existing archive in dir for a change, as a restart
// of the archive would; a missing catalog is an error, not a new archive.
func openArchive(f *archiveFlags) (*archive.Archive, error) {
	if err := refuseLive(f.dir); err != nil {
		return nil, err
	}
	st, err := os.Stat(filepath.Join(f.dir, archive.CatalogFileName))
	if err != nil {
		return nil, fmt.Errorf("no archive in %s: %w", f.dir, err)
	}
	// The archive's mark file is left as found: it may be real Aeron's.
	opts := archive.Options{FileSyncLevel: 1, CatalogSyncLevel: 1, CatalogCapacity: max(st.Size(), archive.MinCatalogCapacity),
		LeaveMarkFile: true}
	if f.delay == 0 {
		opts.DeleteDelay = -1
	} else {
		opts.DeleteDelay = f.delay
	}
	return archive.Open(vfs.Default, f.dir, opts)
}

// removalJSON is the output of detach, delete and purge.
type removalJSON struct {
	RecordingID int64            `json:"recording_id"`
	OldStart    int64            `json:"old_start_position"`
	NewStart    int64            `json:"start_position"`
	Renamed     int              `json:"renamed" doc:"segment files renamed to *.deleted"`
	Unlinked    int              `json:"unlinked" doc:"files unlinked"`
	Pending     []segmentRefJSON `json:"pending_deletion" doc:"renamed files the archive unlinks after the delay"`
	Unsafe      string           `json:"unsafe_past_snapshot,omitempty" doc:"set when --unsafe-past-snapshot overrode the snapshot check: what it overrode"`
}

func archiveDetach(f *archiveFlags, stdout io.Writer) error {
	return archiveRemove(f, stdout, true, false)
}

func archiveDelete(f *archiveFlags, stdout io.Writer) error {
	return archiveRemove(f, stdout, false, true)
}

func archivePurge(f *archiveFlags, stdout io.Writer) error {
	return archiveRemove(f, stdout, true, true)
}

func archiveRemove(f *archiveFlags, stdout io.Writer, detach, del bool) (err error) {
	if err := checkRemoval(f, detach, del); err != nil {
		return err
	}
	var overridden string
	if detach {
		if err := checkPastSnapshot(f.dir, f.id, f.position); err != nil {
			if !f.unsafe {
				return fmt.Errorf("%w (--unsafe-past-snapshot overrides)", err)
			}
			overridden = err.Error()
		}
	}
	a, err := openArchive(f)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, a.Close()) }()
	d, err := a.Catalog().Descriptor(f.id)
	if err != nil {
		return err
	}
	out := removalJSON{RecordingID: f.id, OldStart: d.StartPosition, NewStart: d.StartPosition, Pending: []segmentRefJSON{}, Unsafe: overridden}
	unlinkNow := del && (f.now || f.delay == 0)
	if unlinkNow {
		// Files an earlier run renamed (scheduled again by Open) go first,
		// or the delete would wait for them.
		if out.Unlinked, err = a.DrainDeletes(true); err != nil {
			return err
		}
	}
	switch {
	case detach && del:
		out.Renamed, err = a.Purge(f.id, f.position)
	case detach:
		err = a.Detach(f.id, f.position)
	default:
		out.Renamed, err = a.DeleteDetached(f.id)
	}
	if err != nil {
		return err
	}
	if unlinkNow {
		n, err := a.DrainDeletes(true)
		out.Unlinked += n
		if err != nil {
			return err
		}
	}
	if d, err = a.Catalog().Descriptor(f.id); err != nil {
		return err
	}
	out.NewStart = d.StartPosition
	var pending []string
	for _, p := range a.PendingDeletes() {
		pending = append(pending, p.Name)
	}
	out.Pending = segmentRefs(pending)
	if f.jsonOut {
		return writeJSON(stdout, out)
	}
	var b strings.Builder
	if out.Unsafe != "" {
		fmt.Fprintf(&b, "WARNING: --unsafe-past-snapshot overrode the snapshot check: %s\n", out.Unsafe)
	}
	fmt.Fprintf(&b, "recording %d: start %d -> %d\n", out.RecordingID, out.OldStart, out.NewStart)
	if del {
		fmt.Fprintf(&b, "renamed %d segment files to *%s, unlinked %d\n", out.Renamed, archive.DeletedSuffix, out.Unlinked)
		if len(out.Pending) > 0 {
			fmt.Fprintf(&b, "pending deletion (unlinked by the archive after %v): %s\n", f.delay, strings.Join(pending, ", "))
		}
	} else {
		b.WriteString("segment files below the start are kept until `matchlog archive delete`\n")
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// checkPastSnapshot refuses a detach of recording id in the archive
// directory adir to newStart that removes log a restart of the node whose
// archive it is needs (retention.CheckDetach). An archive with no
// cluster/recording.log beside it belongs to no node: nothing to check.
func checkPastSnapshot(adir string, id, newStart int64) error {
	node := filepath.Dir(adir)
	if _, err := os.Stat(filepath.Join(node, cluster.ClusterDirName, recordinglog.FileName)); err != nil {
		return nil
	}
	if filepath.Base(adir) != cluster.ArchiveDirName {
		return fmt.Errorf("%s has cluster/recording.log beside it, but is not named archive/: the snapshot check cannot read the node; "+
			"copy the node into a directory with cluster/ and archive/, or pass --unsafe-past-snapshot", adir)
	}
	return retention.CheckDetach(vfs.Default, node, id, newStart)
}

// replayCounts is the output of `archive replay --json`.
type replayCounts struct {
	RecordingID int64          `json:"recording_id"`
	From        int64          `json:"from_position"`
	To          int64          `json:"to_position" doc:"exclusive"`
	Frames      int            `json:"frames"`
	DataFrames  int            `json:"data_frames"`
	PadFrames   int            `json:"pad_frames"`
	Bytes       int64          `json:"data_bytes" doc:"frame lengths of the data frames, headers included"`
	Templates   []templateJSON `json:"templates" doc:"data frames by SBE schema and template, ascending"`

	templates map[[2]uint16]int
}

// templateJSON counts the data frames of one SBE message type.
type templateJSON struct {
	SchemaID   uint16 `json:"schema_id"`
	TemplateID uint16 `json:"template_id"`
	Frames     int    `json:"frames"`
}

// archiveReplay reads the frames of a recording, padding included, with
// archive.RecordingReader, without opening the archive (so it works beside
// a running one).
func archiveReplay(f *archiveFlags, stdout io.Writer) error {
	cat, err := archive.OpenCatalogFile(vfs.Default, f.dir, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	d, err := cat.Descriptor(f.id)
	cat.Close()
	if err != nil {
		return err
	}
	if err := archive.CheckSegmentLength(d.SegmentFileLength, d.TermBufferLength); err != nil {
		return err
	}
	stop := d.StopPosition
	if stop == archive.NullPosition {
		if stop, _, err = archive.ComputeStopPosition(vfs.Default, f.dir, d); err != nil {
			return err
		}
	}
	from, to := f.from, f.to
	if from < 0 {
		from = d.StartPosition
	}
	if to < 0 {
		to = stop
	}
	if from < d.StartPosition || from > to || to > stop || from%archive.FrameAlignment != 0 {
		return fmt.Errorf("recording %d: replay [%d, %d) is not inside [%d, %d] or --from is not %d-aligned",
			f.id, from, to, d.StartPosition, stop, archive.FrameAlignment)
	}
	counts := replayCounts{RecordingID: f.id, From: from, To: to, Templates: []templateJSON{}, templates: map[[2]uint16]int{}}
	var b strings.Builder
	w := io.Writer(&b)
	if f.jsonOut {
		w = io.Discard
	}
	r, err := archive.OpenRecordingReader(vfs.Default, f.dir, d, from, to)
	if errors.Is(err, archive.ErrInvalidPosition) {
		return fmt.Errorf("recording %d: --from %d is not a frame boundary: %w", f.id, from, err)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	r.IncludePadding()
	for {
		h, payload, end, ok := r.Next()
		if !ok {
			break
		}
		pos := end - archive.AlignedFrameLength(h.FrameLength)
		base := archive.SegmentFileBasePosition(d.StartPosition, pos, d.TermBufferLength, d.SegmentFileLength)
		counts.Frames++
		typ := "DATA"
		if h.Type == archive.FrameTypePad {
			typ = "PAD"
			counts.PadFrames++
		} else {
			counts.DataFrames++
			counts.Bytes += int64(h.FrameLength)
		}
		fmt.Fprintf(w, "position=%d offset=%d length=%d type=%s flags=0x%02x session=%d stream=%d termId=%d termOffset=%d",
			pos, pos-base, h.FrameLength, typ, h.Flags, h.SessionID, h.StreamID, h.TermID, h.TermOffset)
		if h.Type != archive.FrameTypePad && len(payload) >= 8 {
			blockLength := binary.LittleEndian.Uint16(payload[0:])
			template := binary.LittleEndian.Uint16(payload[2:])
			schema := binary.LittleEndian.Uint16(payload[4:])
			version := binary.LittleEndian.Uint16(payload[6:])
			fmt.Fprintf(w, " sbe(blockLength=%d template=%d schema=%d version=%d)", blockLength, template, schema, version)
			counts.templates[[2]uint16{schema, template}]++
		}
		fmt.Fprintln(w)
	}
	if err := r.Err(); err != nil {
		return err
	}
	if r.Position() != to {
		return fmt.Errorf("recording %d: --to %d is not a frame boundary (frames end at %d)", f.id, to, r.Position())
	}
	if f.jsonOut {
		for k, n := range counts.templates {
			counts.Templates = append(counts.Templates, templateJSON{k[0], k[1], n})
		}
		slices.SortFunc(counts.Templates, func(a, b templateJSON) int {
			return cmp.Or(cmp.Compare(a.SchemaID, b.SchemaID), cmp.Compare(a.TemplateID, b.TemplateID))
		})
		return writeJSON(stdout, counts)
	}
	fmt.Fprintf(&b, "recording %d [%d, %d): %d frames (%d data, %d padding), %d data bytes\n",
		f.id, from, to, counts.Frames, counts.DataFrames, counts.PadFrames, counts.Bytes)
	_, err = io.WriteString(stdout, b.String())
	return err
}
