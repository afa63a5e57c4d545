package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/cluster/retention"
	"github.com/matchlog/matchlog/internal/vfs"
)

// `matchlog cluster seed-recording-log-from-snapshot`: Aeron's ClusterTool
// command of that name (a new recording.log holding only the latest valid
// snapshot set, rebased to log position 0), as an explicit migration verb.
// It is not a retention command: rebasing deletes the full-log-from-zero
// path of every future blank node.

// seedFlag is the flag without which the verb refuses.
const seedFlag = "i-understand-this-rebases-to-zero"

// seedJSON is `cluster seed-recording-log-from-snapshot --json`.
type seedJSON struct {
	Seeded             bool        `json:"seeded" doc:"false: refused without --i-understand-this-rebases-to-zero (exit 1); the rest says what it would do"`
	RecordingLog       string      `json:"recording_log"`
	Backup             string      `json:"backup" doc:"recording.log.bak: the old file, byte for byte (written first)"`
	LeadershipTermID   int64       `json:"leadership_term_id" doc:"of the snapshot set seeded from"`
	SnapshotPosition   int64       `json:"snapshot_position" doc:"its log position before the rebase; 0 after"`
	Kept               []entryJSON `json:"kept" doc:"the entries of the new recording.log, in file order (positions 0)"`
	Removed            []entryJSON `json:"removed" doc:"every entry of the old recording.log that is not kept"`
	LogRecordingID     int64       `json:"log_recording_id" doc:"the log recording no entry names any more; -1 none"`
	LogStart           int64       `json:"log_start" doc:"its start (A) in the catalog; -1 unknown"`
	LogStop            int64       `json:"log_stop" doc:"its stop (P); -1 unknown"`
	LogAfterSnapshot   int64       `json:"log_after_snapshot_bytes" doc:"P - S: log after the snapshot that no recovery path replays any more"`
	FutureBlankNodes   []string    `json:"removed_from_future_blank_nodes" doc:"what the rebase takes from every future blank node's path, in words"`
	DroppedSnapshotSet []int64     `json:"dropped_snapshot_sets" doc:"log positions of the older snapshot sets no longer reachable"`
}

func clusterSeedRecordingLog(f *clusterFlags, stdout io.Writer) error {
	d := f.dir
	if err := refuseLiveNode(d, "seed-recording-log-from-snapshot"); err != nil {
		return err
	}
	// A backup is never overwritten: refused before anything else.
	bak := vfs.Default.Join(clusterDir(d), recordinglog.BackupFileName)
	if _, err := vfs.Default.Stat(bak); err == nil {
		return fmt.Errorf("%w: %s is there; it is never overwritten: move it aside (it may be the backup of an earlier seed) and run again", recordinglog.ErrBackupExists, bak)
	}
	l, err := openRecordingLog(d, true)
	if err != nil {
		return err
	}
	old := l.Entries()
	path := l.Path()
	l.Close()
	seeded, ok := recordinglog.SeedEntries(old)
	if !ok {
		return fmt.Errorf("%w in %s: nothing to seed from (ClusterTool would delete recording.log); nothing was changed", recordinglog.ErrNoSnapshotToSeed, path)
	}
	cm := seeded[len(seeded)-1]
	var cmOld recordinglog.Entry
	for _, e := range old {
		if e.RecordingID == cm.RecordingID && e.Type == recordinglog.TypeSnapshot && e.Valid && e.ServiceID == cm.ServiceID {
			cmOld = e
		}
	}
	if len(seeded) != f.services+1 {
		return fmt.Errorf("the latest valid consensus-module snapshot in %s (term %d, log position %d) is followed by the snapshots of %d service(s), not %d (--services): "+
			"ClusterTool would seed an incomplete set, which no node can start from; nothing was changed", path, cmOld.LeadershipTermID, cmOld.LogPosition, len(seeded)-1, f.services)
	}
	// The set must be proven loadable: after the rebase it is the only
	// state any node can start from.
	facts, err := retention.Gather(vfs.Default, retention.Member{ID: 0, Dir: d}, retention.Options{Services: f.services, Commit: -1})
	if err != nil {
		return err
	}
	var set *retention.Set
	for i := range facts.Sets {
		s := &facts.Sets[i]
		if s.LeadershipTermID == cmOld.LeadershipTermID && s.LogPosition == cmOld.LogPosition {
			set = s
		}
	}
	if set == nil || !set.Complete || !set.Loadable {
		var why []string
		if set != nil {
			for _, r := range set.Recordings {
				if r.Problem != "" {
					why = append(why, r.Problem)
				}
			}
		}
		return fmt.Errorf("the snapshot set at log position %d (term %d) in %s does not load (%s): after the rebase it would be the only state a node can start from; "+
			"nothing was changed (`matchlog retention verdict --member 0=%s` shows every check)", cmOld.LogPosition, cmOld.LeadershipTermID, path, strings.Join(why, "; "), d)
	}

	unit := clusterTimeUnit(d)
	out := seedJSON{RecordingLog: path, Backup: path + ".bak", LeadershipTermID: cmOld.LeadershipTermID, SnapshotPosition: cmOld.LogPosition,
		Kept: toEntriesJSON(seeded, unit), LogRecordingID: facts.LogRecordingID, LogStart: facts.A, LogStop: facts.P, LogAfterSnapshot: -1,
		DroppedSnapshotSet: []int64{}}
	keptIDs := map[int64]bool{}
	for _, e := range seeded {
		keptIDs[e.RecordingID] = true
	}
	var removed []recordinglog.Entry
	for _, e := range old {
		if !(e.Type == recordinglog.TypeSnapshot && e.Valid && keptIDs[e.RecordingID] && e.LeadershipTermID == cmOld.LeadershipTermID && e.LogPosition == cmOld.LogPosition) {
			removed = append(removed, e)
		}
	}
	out.Removed = toEntriesJSON(removed, unit)
	for _, s := range facts.Sets {
		if s.LogPosition != cmOld.LogPosition || s.LeadershipTermID != cmOld.LeadershipTermID {
			out.DroppedSnapshotSet = append(out.DroppedSnapshotSet, s.LogPosition)
		}
	}
	if facts.P >= 0 {
		out.LogAfterSnapshot = facts.P - cmOld.LogPosition
	}
	out.FutureBlankNodes = seedConsequences(out)
	if m, err := readClusterMark(d); err == nil && m.IsMatchlog() {
		out.FutureBlankNodes = append(out.FutureBlankNodes, fmt.Sprintf("this is a matchlog node's directory: no matchlog node starts from the rebased log "+
			"(the engine snapshot records log position %d, and the strict loader holds it to recording.log's); moving recording.log.bak back over recording.log undoes the seed", cmOld.LogPosition))
	}
	if f.seedConfirmed {
		if _, err := recordinglog.SeedFromSnapshot(vfs.Default, clusterDir(d)); err != nil {
			return err
		}
		out.Seeded = true
	}
	if f.jsonOut {
		err = writeJSON(stdout, out)
	} else {
		err = seedText(stdout, out)
	}
	if err != nil {
		return err
	}
	if !out.Seeded {
		return fmt.Errorf("refused: nothing was changed; this rebases the cluster's log to position 0 and removes what is listed above from every future blank node's path: "+
			"run again with --%s to do it (a migration step, never a retention job)", seedFlag)
	}
	return nil
}

// seedConsequences says, in words, what a rebase takes from every future
// blank node's path.
func seedConsequences(s seedJSON) []string {
	var terms []int64
	for _, e := range s.Removed {
		if e.Type == recordinglog.TypeTerm.String() && !slices.Contains(terms, e.LeadershipTermID) {
			terms = append(terms, e.LeadershipTermID)
		}
	}
	out := []string{
		fmt.Sprintf("the TERM entries of term(s) %v: no entry names log recording %d any more, so no recovery plan replays any of its log [%d, %d)",
			terms, s.LogRecordingID, s.LogStart, s.LogStop),
		fmt.Sprintf("a new member can no longer catch up from position 0 by replay: the history before the snapshot (log position %d) is in no recovery path, "+
			"and positions restart at 0 from the snapshot set; every future blank node must be provisioned with that set (recordings %s) before it can join",
			s.SnapshotPosition, keptList(s.Kept)),
	}
	if s.LogAfterSnapshot > 0 {
		out = append(out, fmt.Sprintf("the log after the snapshot, [%d, %d) = %d bytes, is replayed by no node any more: what it holds is not in the rebased state "+
			"(take a snapshot at the end of the log before seeding to keep it)", s.SnapshotPosition, s.LogStop, s.LogAfterSnapshot))
	}
	if len(s.DroppedSnapshotSet) > 0 {
		out = append(out, fmt.Sprintf("the older snapshot sets at log position(s) %v: no node can fall back to them", s.DroppedSnapshotSet))
	}
	return out
}

func keptList(es []entryJSON) string {
	var ids []string
	for _, e := range es {
		ids = append(ids, fmt.Sprint(e.RecordingID))
	}
	return strings.Join(ids, ", ")
}

func seedText(w io.Writer, s seedJSON) error {
	var b strings.Builder
	state := "would rebase (nothing changed)"
	if s.Seeded {
		state = "rebased"
	}
	fmt.Fprintf(&b, "seed-recording-log-from-snapshot: %s %s on the snapshot set of term %d at log position %d, now at position 0\n",
		state, s.RecordingLog, s.LeadershipTermID, s.SnapshotPosition)
	if s.Seeded {
		fmt.Fprintf(&b, "backup: %s (the old file, byte for byte, written first)\n", s.Backup)
	}
	b.WriteString("kept:\n")
	for _, e := range s.Kept {
		fmt.Fprintf(&b, "  SNAPSHOT recording %d term %d service %d (log position %d -> 0)\n", e.RecordingID, e.LeadershipTermID, e.ServiceID, s.SnapshotPosition)
	}
	b.WriteString("removed entries:\n")
	for _, e := range s.Removed {
		valid := ""
		if !e.Valid {
			valid = " (invalid)"
		}
		fmt.Fprintf(&b, "  #%d %s recording %d term %d termBase %d logPosition %d service %d%s\n",
			e.Index, e.Type, e.RecordingID, e.LeadershipTermID, e.TermBaseLogPosition, e.LogPosition, e.ServiceID, valid)
	}
	b.WriteString("removed from every future blank node's path:\n")
	for _, c := range s.FutureBlankNodes {
		fmt.Fprintf(&b, "  - %s\n", c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
