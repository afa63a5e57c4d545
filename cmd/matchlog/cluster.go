package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

const clusterUsage = `usage: matchlog cluster <command> --dir D [flags]

Commands, over a node directory laid out like Aeron's (D/cluster/recording.log,
D/archive/archive.catalog):
  recording-log               print the recording log's entries, sorted as Aeron sorts them
  recovery-plan               print the recovery plan (--services N, default 1); exit 1 if the
                              latest snapshot set is incomplete
  invalidate-latest-snapshot  mark every entry of the latest snapshot set invalid, so that
                              recovery falls back to the previous set; exit 1 if there is none
  describe                    print the recording log and the archive recordings it references

Run 'matchlog cluster <command> -h' for its flags.
`

// clusterCommands are the commands of `matchlog cluster`.
var clusterCommands = map[string]func(d string, jsonOut bool, services int, stdout io.Writer) error{
	"recording-log":              clusterRecordingLog,
	"recovery-plan":              clusterRecoveryPlan,
	"invalidate-latest-snapshot": clusterInvalidateLatestSnapshot,
	"describe":                   clusterDescribe,
}

// runCluster dispatches `matchlog cluster <command>`.
func runCluster(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, clusterUsage)
		return errUsage
	}
	name := args[0]
	cmd, ok := clusterCommands[name]
	if !ok {
		fmt.Fprint(stderr, clusterUsage)
		if name == "-h" || name == "-help" || name == "--help" {
			return flag.ErrHelp
		}
		fmt.Fprintf(stderr, "\ncluster: unknown command %q\n", name)
		return errUsage
	}
	fs := flag.NewFlagSet("cluster "+name, flag.ContinueOnError)
	dir := fs.String("dir", "", "node directory holding cluster/ and archive/ (required)")
	jsonOut := fs.Bool("json", false, "print JSON instead of text")
	services := 1
	if name == "recovery-plan" {
		fs.IntVar(&services, "services", 1, "number of clustered services (Aeron's serviceCount)")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: matchlog cluster %s --dir D [flags]\n\n", name)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	if *dir == "" {
		fmt.Fprintf(stderr, "cluster %s: --dir is required\n", name)
		fs.Usage()
		return errUsage
	}
	if services < 0 {
		fmt.Fprintf(stderr, "cluster %s: --services must not be negative\n", name)
		return errUsage
	}
	return cmd(*dir, *jsonOut, services, stdout)
}

func clusterDir(d string) string { return filepath.Join(d, "cluster") }
func archiveDir(d string) string { return filepath.Join(d, "archive") }

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

func clusterRecordingLog(d string, jsonOut bool, _ int, stdout io.Writer) error {
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	if jsonOut {
		return writeJSON(stdout, recordinglog.ToJSON(l.Entries()))
	}
	_, err = fmt.Fprintln(stdout, recordinglog.Format(l.Entries()))
	return err
}

func clusterRecoveryPlan(d string, jsonOut bool, services int, stdout io.Writer) error {
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	cat, err := archive.OpenCatalogFile(vfs.Default, archiveDir(d), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer cat.Close()
	p, err := l.CreateRecoveryPlan(cat, services)
	if err != nil {
		return err
	}
	if jsonOut {
		err = writeJSON(stdout, struct {
			*recordinglog.RecoveryPlan
			Complete bool `json:"complete"`
		}{p, p.Err() == nil})
	} else {
		_, err = fmt.Fprintln(stdout, p.String())
	}
	if err != nil {
		return err
	}
	return p.Err()
}

func clusterInvalidateLatestSnapshot(d string, jsonOut bool, _ int, stdout io.Writer) error {
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
		err = writeJSON(stdout, struct {
			Invalidated bool                     `json:"invalidated"`
			Entries     []recordinglog.JSONEntry `json:"entries"`
		}{found, recordinglog.ToJSON(l.Entries()).Entries})
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
	RecordingID       int64    `json:"recordingId"`
	ReferencedBy      []string `json:"referencedBy"`
	InCatalog         bool     `json:"inCatalog"`
	State             string   `json:"state,omitempty"`
	StartPosition     int64    `json:"startPosition"`
	StopPosition      int64    `json:"stopPosition"`
	InitialTermID     int32    `json:"initialTermId"`
	TermBufferLength  int32    `json:"termBufferLength"`
	SegmentFileLength int32    `json:"segmentFileLength"`
	MTULength         int32    `json:"mtuLength"`
	SessionID         int32    `json:"sessionId"`
	StreamID          int32    `json:"streamId"`
	StrippedChannel   string   `json:"strippedChannel"`
	Segments          []string `json:"segments"`
}

func clusterDescribe(d string, jsonOut bool, _ int, stdout io.Writer) error {
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	defer l.Close()
	desc, err := archive.Describe(vfs.Default, archiveDir(d))
	if err != nil {
		return err
	}
	entries := l.Entries()
	var recs []*describedRecording
	byID := map[int64]*describedRecording{}
	for _, e := range entries {
		r := byID[e.RecordingID]
		if r == nil {
			r = &describedRecording{RecordingID: e.RecordingID, Segments: []string{}}
			byID[e.RecordingID] = r
			recs = append(recs, r)
			describeRecording(r, desc)
		}
		ref := fmt.Sprintf("%s term %d", e.Type, e.LeadershipTermID)
		if e.Type != recordinglog.TypeTerm {
			ref += fmt.Sprintf(" service %d logPosition %d", e.ServiceID, e.LogPosition)
		}
		if !e.Valid {
			ref += " (invalid)"
		}
		r.ReferencedBy = append(r.ReferencedBy, ref)
	}
	var missing []string
	for _, r := range recs {
		if !r.InCatalog {
			missing = append(missing, fmt.Sprint(r.RecordingID))
		}
	}
	if jsonOut {
		err = writeJSON(stdout, struct {
			RecordingLog recordinglog.EntriesJSON `json:"recordingLog"`
			Recordings   []*describedRecording    `json:"recordings"`
		}{recordinglog.ToJSON(entries), recs})
	} else {
		err = describeText(stdout, l, entries, recs)
	}
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("recording(s) %s referenced by the recording log are not in the archive catalog", strings.Join(missing, ", "))
	}
	return nil
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
	for _, s := range found.Segments {
		r.Segments = append(r.Segments, fmt.Sprintf("%s (%d bytes)", s.Name, s.Size))
	}
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
			fmt.Fprintf(&b, "  recording %d: NOT IN CATALOG (%s)\n", r.RecordingID, strings.Join(r.ReferencedBy, "; "))
			continue
		}
		fmt.Fprintf(&b, "  recording %d: %s startPosition=%d stopPosition=%d initialTermId=%d termBufferLength=%d "+
			"segmentFileLength=%d mtuLength=%d sessionId=%d streamId=%d channel=%s\n",
			r.RecordingID, r.State, r.StartPosition, r.StopPosition, r.InitialTermID, r.TermBufferLength,
			r.SegmentFileLength, r.MTULength, r.SessionID, r.StreamID, r.StrippedChannel)
		fmt.Fprintf(&b, "    referenced by: %s\n", strings.Join(r.ReferencedBy, "; "))
		fmt.Fprintf(&b, "    segments: %s\n", strings.Join(r.Segments, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
