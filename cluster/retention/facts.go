package retention

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/backup"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Member names one member's directories: Dir holds cluster/ (recording.log)
// and archive/ (archive.catalog), as both a matchlog node and real Aeron
// lay them out.
type Member struct {
	ID  int32
	Dir string
}

// SplitDirs returns the member directory holding clusterDir and archiveDir,
// which must be its cluster/ and archive/ sub-directories.
func SplitDirs(clusterDir, archiveDir string) (string, error) {
	c, a := filepath.Clean(clusterDir), filepath.Clean(archiveDir)
	if filepath.Dir(c) != filepath.Dir(a) || filepath.Base(c) != cluster.ClusterDirName || filepath.Base(a) != cluster.ArchiveDirName {
		return "", fmt.Errorf("retention: cluster directory %s and archive directory %s must be the %s/ and %s/ of one member directory",
			clusterDir, archiveDir, cluster.ClusterDirName, cluster.ArchiveDirName)
	}
	return filepath.Dir(c), nil
}

// Options configure Gather.
type Options struct {
	// Services is the number of configured services (default 1).
	Services int
	// Live is the archive directory of the live source (L, H); "" for none.
	Live string
	// Commit is H when >= 0; otherwise H is the live source's log stop.
	Commit int64
	// NowMs is the time for the liveness check (epoch ms; 0: now).
	NowMs int64
	// Backup is the backup directory (cluster/backup): B is its verified
	// image's position, and its drill log gives the last restore drill.
	// "" for none.
	Backup string
}

// SegmentFile is a segment file of a recording.
type SegmentFile struct {
	Name string `json:"name"`
	Base int64  `json:"base_position"`
	Size int64  `json:"size_bytes"`
}

// Recording is one snapshot recording of a set.
type Recording struct {
	RecordingID int64 `json:"recording_id"`
	ServiceID   int32 `json:"service_id"`
	// Exists: in the catalog, VALID, with its segment files.
	Exists bool `json:"exists"`
	// Loadable: read back and proven (see the package doc).
	Loadable bool `json:"loadable"`
	// Engine: a matchlog engine snapshot, strictly loaded; StateHash is
	// its hash.
	Engine    bool          `json:"engine_snapshot"`
	StateHash string        `json:"state_hash,omitempty"`
	Files     []SegmentFile `json:"files"`
	Bytes     int64         `json:"bytes"`
	// Active: the catalog has no stop position for it (being recorded,
	// or left open by a crash).
	Active  bool   `json:"active"`
	Problem string `json:"problem,omitempty"`
}

// Set is the snapshots recording.log holds at one leadership term and log
// position (valid entries only).
type Set struct {
	LeadershipTermID int64 `json:"leadership_term_id"`
	LogPosition      int64 `json:"log_position"`
	// Complete: the consensus module's and every configured service's.
	Complete bool `json:"complete"`
	// Loadable: complete and every recording proven loadable.
	Loadable bool `json:"loadable"`
	// Usable: the member's log holds [position, P] (A ≤ position ≤ P),
	// so a restart could replay from this set.
	Usable          bool        `json:"locally_usable"`
	MissingServices []int32     `json:"missing_services"`
	Recordings      []Recording `json:"recordings"`
}

// Facts are what Gather found for one member: the input of Decide and
// MakePlan.
type Facts struct {
	ID       int32  `json:"id"`
	Dir      string `json:"dir"`
	Services int    `json:"services"`
	// LocalState: recording.log holds a valid TERM entry.
	LocalState bool `json:"local_state"`
	// LogRecordingID is the last TERM's recording, -1 if none.
	LogRecordingID int64 `json:"log_recording_id"`
	LogInCatalog   bool  `json:"log_in_catalog"`
	// LogActive: the catalog has no stop position for it (recording, or
	// left open by a crash).
	LogActive     bool  `json:"log_active"`
	SegmentLength int64 `json:"segment_length"`
	// A, P: the log recording's start and end (-1: none).
	A int64 `json:"A"`
	P int64 `json:"P"`
	// LogFiles are the log recording's segment files; MissingSegments
	// the segment files of [A, P) that are not there (or are short).
	LogFiles        []SegmentFile `json:"log_files"`
	MissingSegments []string      `json:"missing_segments"`
	// Sets are every snapshot set of recording.log, newest first.
	Sets []Set `json:"sets"`
	// Orphans are VALID catalog recordings no recording.log entry names
	// (their ServiceID is -2: unknown).
	Orphans []Recording `json:"orphans"`
	// SetServiceCount is recording.log's count for its latest set (-1:
	// none).
	SetServiceCount int `json:"set_service_count"`
	// Running is why the member is live ("" when stopped).
	Running string `json:"running,omitempty"`
	// PlanIssues are cluster.CheckPlan's findings on the current
	// recovery plan.
	PlanIssues []string `json:"plan_issues"`
	// L, H, B: see the package doc (-1: none).
	L int64 `json:"L"`
	H int64 `json:"H"`
	B int64 `json:"B"`
	// MarkMemberID and ClusterID are cluster-mark.dat's (-1: no mark
	// file; MarkMemberID also for a matchlog node's, which always says 0).
	MarkMemberID int32 `json:"mark_member_id"`
	ClusterID    int32 `json:"cluster_id"`
	// LiveGiven: a live source was given.
	LiveGiven bool `json:"live_given"`
	// BackupDir is the backup directory given ("" none); BackupProblem
	// why it gives no B (no manifest, not verified, unreadable);
	// BackupBytes the image's size (what a restore copies) and
	// BackupCreated when it was made (RFC 3339).
	BackupDir     string `json:"backup_dir,omitempty"`
	BackupProblem string `json:"backup_problem,omitempty"`
	BackupBytes   int64  `json:"backup_bytes"`
	BackupCreated string `json:"backup_created,omitempty"`
	// LastDrill is the newest record of the backup's drill log and
	// LastGoodDrill the newest that passed (nil: none); DrillProblem why
	// the drill log cannot be read.
	LastDrill     *backup.DrillRecord `json:"last_drill,omitempty"`
	LastGoodDrill *backup.DrillRecord `json:"last_good_drill,omitempty"`
	DrillProblem  string              `json:"drill_problem,omitempty"`
}

// liveTimeout is how recent a mark file's activity must be for a live
// member (as the archive tools).
const liveTimeout = 10 * time.Second

// Gather reads the facts of member m. It only reads. A member directory
// with neither recording.log nor a catalog is an empty disk (no local
// state), not an error.
func Gather(fsys vfs.FS, m Member, opts Options) (*Facts, error) {
	if opts.Services <= 0 {
		opts.Services = 1
	}
	f := &Facts{ID: m.ID, Dir: m.Dir, Services: opts.Services, LogRecordingID: -1, A: -1, P: -1, L: -1, H: -1, B: -1,
		SetServiceCount: -1, MarkMemberID: -1, ClusterID: -1, Sets: []Set{}, Orphans: []Recording{}, LogFiles: []SegmentFile{}, MissingSegments: []string{}, PlanIssues: []string{}}
	now := opts.NowMs
	if now == 0 {
		now = time.Now().UnixMilli()
	}
	if err := cluster.CheckLive(fsys, m.Dir, now, liveTimeout); err != nil {
		if !errors.Is(err, cluster.ErrNodeRunning) && !errors.Is(err, archive.ErrArchiveActive) {
			return nil, err
		}
		f.Running = err.Error()
	}
	if mf, err := cluster.ReadMarkFile(fsys, fsys.Join(m.Dir, cluster.ClusterDirName)); err == nil {
		f.MarkMemberID, f.ClusterID = mf.MemberID, mf.ClusterID
		if mf.IsMatchlog() {
			f.MarkMemberID = -1 // a native node is one member: it writes 0 whatever its role
		}
	}
	if err := gatherLive(fsys, f, opts); err != nil {
		return nil, err
	}
	gatherBackup(fsys, f, opts.Backup)
	cdir, adir := fsys.Join(m.Dir, cluster.ClusterDirName), fsys.Join(m.Dir, cluster.ArchiveDirName)
	rl, err := recordinglog.Open(fsys, cdir, recordinglog.Options{ReadOnly: true, Repair: true})
	if errors.Is(err, vfs.ErrNotExist) {
		return f, nil // an empty disk
	}
	if err != nil {
		return nil, fmt.Errorf("retention: member %d: %w", m.ID, err)
	}
	defer rl.Close()
	desc, err := archive.Describe(fsys, adir)
	if errors.Is(err, vfs.ErrNotExist) {
		desc = &archive.Description{}
	} else if err != nil {
		return nil, fmt.Errorf("retention: member %d: %w", m.ID, err)
	}
	byID := map[int64]*archive.RecordingInfo{}
	for i := range desc.Recordings {
		r := &desc.Recordings[i]
		if prev := byID[r.Descriptor.RecordingID]; prev == nil || r.State == archive.StateValid {
			byID[r.Descriptor.RecordingID] = r
		}
	}
	f.SetServiceCount = rl.SetServiceCount()
	entries := rl.Entries()
	named := map[int64]bool{}
	for _, e := range entries {
		named[e.RecordingID] = true
	}
	if term, ok := rl.FindLastTerm(); ok {
		f.LocalState = true
		f.LogRecordingID = term.RecordingID
		if r := byID[term.RecordingID]; r != nil && r.State == archive.StateValid {
			f.LogInCatalog = true
			gatherLog(fsys, adir, f, r)
		}
	}
	f.Sets = gatherSets(fsys, m.Dir, adir, entries, byID, opts.Services)
	for i := range f.Sets {
		s := &f.Sets[i]
		s.Usable = f.LogInCatalog && f.A >= 0 && f.A <= s.LogPosition && s.LogPosition <= f.P
	}
	for _, r := range desc.Recordings {
		if r.State == archive.StateValid && !named[r.Descriptor.RecordingID] && r.Descriptor.RecordingID != f.LogRecordingID {
			rec := Recording{RecordingID: r.Descriptor.RecordingID, ServiceID: -2, Exists: true, Active: r.Descriptor.StopPosition == archive.NullPosition}
			rec.Files, rec.Bytes = files(r.Segments)
			f.Orphans = append(f.Orphans, rec)
		}
	}
	if f.LocalState && desc.Recordings != nil {
		if cat, err := archive.OpenCatalogFile(fsys, adir, archive.CatalogOptions{ReadOnly: true}); err == nil {
			if plan, err := rl.CreateRecoveryPlan(cat, opts.Services); err != nil {
				f.PlanIssues = append(f.PlanIssues, cluster.ExplainPlanError(m.Dir, cat, err).Error())
			} else if issues, err := cluster.CheckPlan(fsys, m.Dir, cat, rl, plan); err != nil {
				f.PlanIssues = append(f.PlanIssues, err.Error())
			} else {
				for _, is := range issues {
					f.PlanIssues = append(f.PlanIssues, is.String())
				}
			}
			cat.Close()
		}
	}
	return f, nil
}

// gatherBackup fills B and the drills from the backup directory dir: only
// an image whose manifest says it verified, with every file it lists there
// at its size, counts.
func gatherBackup(fsys vfs.FS, f *Facts, dir string) {
	if dir == "" {
		return
	}
	f.BackupDir = dir
	m, err := backup.ReadManifest(fsys, dir)
	if err == nil {
		err = backup.CheckFiles(fsys, dir, m)
	}
	if err != nil {
		f.BackupProblem = err.Error()
		return
	}
	f.B, f.BackupBytes, f.BackupCreated = m.B, m.Bytes, m.Created
	drills, err := backup.ReadDrills(fsys, dir)
	if err != nil {
		f.DrillProblem = err.Error()
		return
	}
	for i := range drills {
		d := drills[i]
		f.LastDrill = &d
		if d.OK {
			f.LastGoodDrill = &d
		}
	}
}

func files(segs []archive.SegmentFile) ([]SegmentFile, int64) {
	out := []SegmentFile{}
	var n int64
	for _, s := range segs {
		out = append(out, SegmentFile{s.Name, s.Base, s.Size})
		n += s.Size
	}
	return out, n
}

// gatherLog fills A, P and the log's files of f from its catalog entry r.
func gatherLog(fsys vfs.FS, adir string, f *Facts, r *archive.RecordingInfo) {
	d := r.Descriptor
	f.SegmentLength = int64(d.SegmentFileLength)
	f.A = d.StartPosition
	f.P = d.StopPosition
	if d.StopPosition == archive.NullPosition {
		f.LogActive = true
		if stop, _, err := archive.ComputeStopPosition(fsys, adir, d); err == nil {
			f.P = stop
		} else {
			f.P = -1
			f.MissingSegments = append(f.MissingSegments, fmt.Sprintf("the end of the open log recording %d cannot be computed: %v", d.RecordingID, err))
		}
	}
	f.LogFiles, _ = files(r.Segments)
	if f.P < 0 || archive.CheckSegmentLength(d.SegmentFileLength, d.TermBufferLength) != nil {
		return
	}
	have := map[int64]int64{}
	for _, s := range r.Segments {
		have[s.Base] = s.Size
	}
	sl := f.SegmentLength
	for base := archive.SegmentFileBasePosition(d.StartPosition, d.StartPosition, d.TermBufferLength, d.SegmentFileLength); base < f.P; base += sl {
		size, ok := have[base]
		need := min(sl, f.P-base)
		if !ok || size < need {
			f.MissingSegments = append(f.MissingSegments, archive.SegmentFileName(d.RecordingID, base))
		}
	}
}

// gatherLive fills L and H from the live source's archive: its log
// recording is the last TERM's of the recording.log beside it (in its
// member directory), else the catalog's recording with the largest stop.
func gatherLive(fsys vfs.FS, f *Facts, opts Options) error {
	f.H = -1
	if opts.Commit >= 0 {
		f.H = opts.Commit
	}
	if opts.Live == "" {
		return nil
	}
	f.LiveGiven = true
	cat, err := archive.OpenCatalogFile(fsys, opts.Live, archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("retention: live source %s: %w", opts.Live, err)
	}
	defer cat.Close()
	id := int64(-1)
	if rl, err := recordinglog.Open(fsys, fsys.Join(filepath.Dir(filepath.Clean(opts.Live)), cluster.ClusterDirName), recordinglog.Options{ReadOnly: true, Repair: true}); err == nil {
		if term, ok := rl.FindLastTerm(); ok {
			id = term.RecordingID
		}
		rl.Close()
	}
	var d archive.RecordingDescriptor
	found := false
	if id >= 0 {
		d, err = cat.Descriptor(id)
		found = err == nil
	} else {
		for _, r := range cat.Recordings() {
			if !found || r.StopPosition > d.StopPosition {
				d, found = r, true
			}
		}
	}
	if !found {
		return fmt.Errorf("retention: live source %s: no log recording in its catalog", opts.Live)
	}
	stop := d.StopPosition
	if stop == archive.NullPosition {
		if stop, _, err = archive.ComputeStopPosition(fsys, opts.Live, d); err != nil {
			return fmt.Errorf("retention: live source %s: log recording %d: %w", opts.Live, d.RecordingID, err)
		}
	}
	f.L = d.StartPosition
	if opts.Commit < 0 {
		f.H = stop
	}
	return nil
}

// gatherSets groups the valid SNAPSHOT entries by term and position,
// newest first, and proves each recording loadable.
func gatherSets(fsys vfs.FS, dir, adir string, entries []recordinglog.Entry, byID map[int64]*archive.RecordingInfo, services int) []Set {
	type key struct{ term, pos int64 }
	idx := map[key]int{}
	var sets []Set
	for _, e := range entries {
		if e.Type != recordinglog.TypeSnapshot || !e.Valid {
			continue
		}
		k := key{e.LeadershipTermID, e.LogPosition}
		i, ok := idx[k]
		if !ok {
			i = len(sets)
			idx[k] = i
			sets = append(sets, Set{LeadershipTermID: e.LeadershipTermID, LogPosition: e.LogPosition, Recordings: []Recording{}, MissingServices: []int32{}})
		}
		s := &sets[i]
		// A later entry for the same service replaces an earlier one.
		s.Recordings = slices.DeleteFunc(s.Recordings, func(r Recording) bool { return r.ServiceID == e.ServiceID })
		s.Recordings = append(s.Recordings, Recording{RecordingID: e.RecordingID, ServiceID: e.ServiceID})
	}
	slices.SortStableFunc(sets, func(a, b Set) int {
		if a.LogPosition != b.LogPosition {
			return int(sign(b.LogPosition - a.LogPosition))
		}
		return int(sign(b.LeadershipTermID - a.LeadershipTermID))
	})
	for i := range sets {
		s := &sets[i]
		slices.SortFunc(s.Recordings, func(a, b Recording) int { return int(a.ServiceID - b.ServiceID) })
		have := map[int32]bool{}
		for _, r := range s.Recordings {
			have[r.ServiceID] = true
		}
		for sid := int32(-1); sid < int32(services); sid++ {
			if !have[sid] {
				s.MissingServices = append(s.MissingServices, sid)
			}
		}
		s.Complete = len(s.MissingServices) == 0
		loadable := s.Complete
		for j := range s.Recordings {
			r := &s.Recordings[j]
			info := byID[r.RecordingID]
			switch {
			case info == nil:
				r.Problem = fmt.Sprintf("recording %d is not in the archive catalog", r.RecordingID)
			case info.State != archive.StateValid:
				r.Problem = fmt.Sprintf("recording %d is %s in the archive catalog", r.RecordingID, info.State)
			default:
				r.Files, r.Bytes = files(info.Segments)
				r.Exists = true
				r.Active = info.Descriptor.StopPosition == archive.NullPosition
				proveLoadable(fsys, dir, adir, info.Descriptor, s.LogPosition, r)
			}
			loadable = loadable && r.Loadable
		}
		s.Loadable = loadable
	}
	return sets
}

func sign(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
