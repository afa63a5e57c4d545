package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

const retSeg = 64 << 10 // the smallest segment the archive allows

// dirBytes is the archive directory's size: every file at its length.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	adir := filepath.Join(dir, cluster.ArchiveDirName)
	names, err := vfs.Default.List(adir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, name := range names {
		if size, err := vfs.Default.Stat(filepath.Join(adir, name)); err == nil {
			total += size
		}
	}
	return total
}

// retNode is an engine node for the retention tests, driven in-process.
type retNode struct {
	t    testing.TB
	n    *cluster.Node
	svc  *enginesvc.Service
	sess int64
	buf  []byte
	rng  *rand.Rand
	id   uint64
	seq  uint64
}

func openRetNode(t testing.TB, dir string, opts cluster.Options) *retNode {
	t.Helper()
	return openRetNodeFS(t, dir, opts, vfs.Default)
}

func openRetNodeFS(t testing.TB, dir string, opts cluster.Options, fsys vfs.FS) *retNode {
	t.Helper()
	svc := enginesvc.New(enginesvc.Options{})
	opts.FS, opts.Dir, opts.Service = fsys, dir, svc
	opts.TermLength, opts.SegmentLength = retSeg, retSeg
	n, err := cluster.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := n.Connect("aeron:ipc", 102)
	if err != nil {
		t.Fatal(err)
	}
	r := &retNode{t: t, n: n, svc: svc, sess: s, rng: rand.New(rand.NewPCG(14, 1))}
	r.send(&engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1 << 20})
	return r
}

func (r *retNode) send(c *engine.Command) {
	r.seq++
	c.Source, c.Seq = 1, r.seq
	var err error
	if r.buf, err = wire.AppendCommand(r.buf[:0], c); err != nil {
		r.t.Fatal(err)
	}
	if err := r.n.Offer(r.sess, r.buf); err != nil {
		r.t.Fatal(err)
	}
}

// batch offers k commands (resting and crossing orders, cancels) and runs
// the duty cycle until they are applied and no snapshot is in progress.
func (r *retNode) batch(k int) {
	for range k {
		side := engine.Side(r.rng.IntN(2))
		switch x := r.rng.IntN(10); {
		case x < 6:
			r.id++
			price := int64(1000 - 1 - r.rng.IntN(100))
			if side == engine.Sell {
				price = int64(1000 + 1 + r.rng.IntN(100))
			}
			r.send(&engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: r.id, Account: uint64(r.rng.IntN(20)) + 1,
				Side: side, Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: int64(r.rng.IntN(20)) + 1})
		case x < 8:
			r.id++
			r.send(&engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: r.id, Account: uint64(r.rng.IntN(20)) + 1,
				Side: side, Type: engine.Market, TIF: engine.IOC, Qty: int64(r.rng.IntN(40)) + 1})
		default:
			r.send(&engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: uint64(r.rng.Int64N(int64(r.id)+1)) + 1})
		}
	}
	r.drain()
}

func (r *retNode) drain() {
	for idle := 0; idle < 3; {
		w, err := r.n.DoWork()
		if err != nil {
			r.t.Fatal(err)
		}
		switch {
		case w > 0 || r.n.Pending() > 0:
			idle = 0
		case r.n.SnapshotInProgress():
			time.Sleep(100 * time.Microsecond)
		default:
			idle++
		}
	}
}

// budgetRun drives orders through a node with 64 KiB segments and
// pauseless snapshots every 256 KiB of log, sampling the archive
// directory's size after every batch; it returns the largest sample.
func budgetRun(t *testing.T, ro cluster.RetentionOptions, orders int) (int64, cluster.Stats, string) {
	dir := t.TempDir()
	var logBuf bytes.Buffer
	cycles := &durations{}
	r := openRetNode(t, dir, cluster.Options{SnapshotEveryBytes: 256 << 10, Retention: ro, DutyCycle: cycles,
		Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
	defer func() { t.Logf("duty cycles that did work (retention %v): %s", ro.Enabled(), cycles) }()
	var maxBytes int64
	for sent := 0; sent < orders; sent += 200 {
		r.batch(200)
		maxBytes = max(maxBytes, dirBytes(t, dir))
	}
	st := r.n.Stats()
	hash := r.svc.Engine().StateHash()
	if err := r.n.Close(); err != nil {
		t.Fatal(err)
	}
	// The purged directory restarts to the same state.
	svc := enginesvc.New(enginesvc.Options{})
	n, err := cluster.Open(cluster.Options{FS: vfs.Default, Dir: dir, Service: svc})
	if err != nil {
		t.Fatalf("restart after retention: %v", err)
	}
	if got := svc.Engine().StateHash(); got != hash {
		t.Fatalf("restart: state hash %x, want %x", got, hash)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return maxBytes, st, logBuf.String()
}

// TestRetentionBudgetUnderLoad: a node under load (a fixed number of
// orders) with 64 KiB segments, pauseless snapshots every 256 KiB of log
// and a 2 MiB budget for its archive directory keeps the directory under
// the budget plus one segment after every batch of its run, deletes old
// snapshot generations whole, and restarts to the same state hash.
// Without retention the same run exceeds the budget several times over
// (the baseline sub-test logs it; it is what this test fails with when
// retention is off). The longest retention step of one DoWork and the
// longest DoWork, with and without retention, are logged.
func TestRetentionBudgetUnderLoad(t *testing.T) {
	const orders = 30000
	const budget = 2 << 20
	ro := cluster.RetentionOptions{MaxBytes: budget, CheckInterval: 10 * time.Millisecond, DeleteDelay: -1}
	if retentionOff() {
		ro = cluster.RetentionOptions{}
	}
	maxBytes, st, log := budgetRun(t, ro, orders)
	t.Logf("retention on: archive directory at most %d bytes (budget %d + one segment %d = %d); checks %d, approved %d (limited %d), refused %v, "+
		"segments detached %d, generations deleted %d, recordings deleted %d, files unlinked %d; longest DoWork %v, longest retention step %v",
		maxBytes, int64(budget), retSeg, budget+retSeg, st.RetentionChecks, st.RetentionApproved, st.RetentionLimited, st.RetentionRefused,
		st.RetentionDetachedSegments, st.RetentionSnapshotsDeleted, st.RetentionRecordingsDeleted, st.RetentionUnlinked, st.MaxDoWork, st.MaxRetentionWork)
	if maxBytes > budget+retSeg {
		t.Fatalf("the archive directory reached %d bytes, over the budget %d plus one segment", maxBytes, int64(budget))
	}
	if st.RetentionApproved == 0 || st.RetentionSnapshotsDeleted == 0 || st.RetentionUnlinked == 0 {
		t.Fatalf("retention did nothing: %+v", st)
	}
	for _, msg := range []string{`"msg":"retention proposed"`, `"msg":"retention approved"`, `"msg":"retention deleted snapshot"`} {
		if !strings.Contains(log, msg) {
			t.Fatalf("no %s record in the log", msg)
		}
	}
	t.Run("baseline", func(t *testing.T) {
		if testing.Short() {
			t.Skip("the baseline only measures")
		}
		maxBytes, st, _ := budgetRun(t, cluster.RetentionOptions{}, orders)
		t.Logf("retention off: archive directory at most %d bytes; longest DoWork %v", maxBytes, st.MaxDoWork)
	})
}

// retentionOff is set by MATCHLOG_TEST_RETENTION_OFF=1: the tests then run
// with automatic retention off, to see them fail.
func retentionOff() bool { return os.Getenv("MATCHLOG_TEST_RETENTION_OFF") == "1" }

// TestRetentionRefusedPastSnapshot: a budget that could only be met by
// cutting past the only snapshot's segment boundary is refused, logged
// with the reason and counted, and nothing is deleted; with no snapshot at
// all the refusal is no-complete-snapshot.
func TestRetentionRefusedPastSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapshot bool
		want     cluster.RetentionRefusal
	}{{"past-snapshot", true, cluster.RefusedPastSnapshot}, {"no-snapshot", false, cluster.RefusedNoSnapshot}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var logBuf bytes.Buffer
			ro := cluster.RetentionOptions{MaxBytes: retSeg, CheckInterval: time.Millisecond, DeleteDelay: -1}
			if retentionOff() {
				ro = cluster.RetentionOptions{}
			}
			r := openRetNode(t, dir, cluster.Options{Retention: ro, Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
			r.batch(50)
			if tc.snapshot {
				r.n.RequestSnapshot()
				r.drain()
				if st := r.n.Stats(); st.SnapshotPosition < 0 || st.SnapshotPosition >= retSeg {
					t.Fatalf("snapshot at %d, want one in the first segment", st.SnapshotPosition)
				}
			}
			for range 20 {
				r.batch(200)
			}
			st := r.n.Stats()
			if st.LogPosition < 4*retSeg {
				t.Fatalf("log %d bytes: too short for the test", st.LogPosition)
			}
			if st.RetentionRefused[tc.want] == 0 || st.RetentionApproved != 0 || st.RetentionDetachedSegments != 0 {
				t.Fatalf("refused %v approved %d detached %d, want refusals for %s and nothing approved",
					st.RetentionRefused, st.RetentionApproved, st.RetentionDetachedSegments, tc.want)
			}
			if st.ArchiveStart != 0 {
				t.Fatalf("log start moved to %d", st.ArchiveStart)
			}
			names, err := vfs.Default.List(filepath.Join(dir, cluster.ArchiveDirName))
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if strings.HasSuffix(name, archive.DeletedSuffix) {
					t.Fatalf("%s was deleted", name)
				}
			}
			for base := int64(0); base+retSeg <= st.LogPosition; base += retSeg {
				if _, err := vfs.Default.Stat(filepath.Join(dir, cluster.ArchiveDirName, archive.SegmentFileName(r.n.LogRecordingID(), base))); err != nil {
					t.Fatalf("segment at %d: %v", base, err)
				}
			}
			found := false
			for _, line := range strings.Split(logBuf.String(), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "retention refused" {
					continue
				}
				if rec["detail"] == "" || rec["level"] != "WARN" {
					t.Fatalf("refusal record %v", rec)
				}
				found = found || rec["reason"] == tc.want.String()
			}
			if !found {
				t.Fatalf("no \"retention refused\" record with reason %s", tc.want)
			}
			if err := r.n.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestApproveCutoff: the positional rules on a table, and on random inputs
// the invariants: an approved cutoff is a segment boundary after the start
// segment, ≤ C ≤ S, and not past the active segment's base.
func TestApproveCutoff(t *testing.T) {
	const sl, tl = 1 << 16, 1 << 16
	in := func(proposed, start, recorded, snap int64) cluster.CutoffInput {
		return cluster.CutoffInput{Proposed: proposed, Start: start, Recorded: recorded, Snapshot: snap, TermLength: tl, SegmentLength: sl}
	}
	for _, tc := range []struct {
		in      cluster.CutoffInput
		cut     int64
		refusal cluster.RetentionRefusal
		limited string
	}{
		{in(5*sl+7, 0, 10*sl, 8*sl+100), 5 * sl, cluster.RefusedNone, ""},             // rounded down
		{in(9*sl, 0, 10*sl, 8*sl+100), 8 * sl, cluster.RefusedNone, "snapshot"},       // never past C
		{in(9*sl, 0, 3*sl+5, 8*sl), 3 * sl, cluster.RefusedNone, "active-segment"},    // never the active segment
		{in(9*sl, 0, 10*sl, -1), -1, cluster.RefusedNoSnapshot, ""},                   // no snapshot
		{in(9*sl, 2*sl, 10*sl, 2*sl+64), -1, cluster.RefusedPastSnapshot, "snapshot"}, // C is the start
		{in(9*sl, 2*sl, 2*sl+64, 8*sl), -1, cluster.RefusedActiveSegment, "active-segment"},
	} {
		d := cluster.ApproveCutoff(tc.in)
		if d.Cutoff != tc.cut || d.Refusal != tc.refusal || d.LimitedBy != tc.limited {
			t.Errorf("%+v: got %+v, want cut %d refusal %v limited %q", tc.in, d, tc.cut, tc.refusal, tc.limited)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		seg := int32(1) << (16 + rng.IntN(4))
		term := seg >> rng.IntN(3)
		start := rng.Int64N(64 * int64(seg))
		rec := start + rng.Int64N(64*int64(seg))
		snap := int64(-1)
		if rng.IntN(8) > 0 {
			snap = start + rng.Int64N(rec-start+1)
		}
		x := cluster.CutoffInput{Proposed: rng.Int64N(rec + 4*int64(seg)), Start: start, Recorded: rec, Snapshot: snap, TermLength: term, SegmentLength: seg}
		d := cluster.ApproveCutoff(x)
		if d.Cutoff < 0 {
			continue
		}
		b := archive.SegmentFileBasePosition(start, d.Cutoff, term, seg)
		if d.Cutoff != b || d.Cutoff > snap || d.Cutoff > d.C || d.C > snap || d.Cutoff > d.ActiveBase ||
			d.Cutoff <= archive.SegmentFileBasePosition(start, start, term, seg) || d.Cutoff > x.Proposed {
			t.Fatalf("%+v approved %+v", x, d)
		}
	}
}

// TestRetentionRules: the age rule (segments whose newest entry is older
// than MaxAge in cluster time) and the free-disk rule (the archive's file
// system reports less free than MinFreeBytes) each propose cutoffs that
// are approved and executed, and the node restarts to the same state.
func TestRetentionRules(t *testing.T) {
	for _, rule := range []cluster.RetentionRule{cluster.RuleAge, cluster.RuleFreeDisk} {
		t.Run(rule.String(), func(t *testing.T) {
			dir := t.TempDir()
			var now int64 = 1_700_000_000_000_000_000
			ro := cluster.RetentionOptions{CheckInterval: 10 * time.Millisecond, DeleteDelay: -1}
			opts := cluster.Options{SnapshotEveryBytes: 128 << 10, Clock: func() int64 { return now }}
			if rule == cluster.RuleAge {
				ro.MaxAge = 30 * time.Second
			} else {
				ro.MinFreeBytes = 1 << 40 // never met: every segment C allows is proposed
			}
			if retentionOff() {
				ro = cluster.RetentionOptions{}
			}
			opts.Retention = ro
			fsys := vfs.NewInjector(vfs.Default, 0, -1).WithFreeBytes(func(string) (uint64, error) { return 1 << 30, nil })
			r := openRetNodeFS(t, dir, opts, fsys)
			for range 40 {
				r.batch(200)
				now += int64(10 * time.Second)
			}
			st := r.n.Stats()
			if st.RetentionProposed[rule] == 0 || st.RetentionApproved == 0 || st.ArchiveStart == 0 {
				t.Fatalf("proposed %v approved %d archive start %d", st.RetentionProposed, st.RetentionApproved, st.ArchiveStart)
			}
			hash := r.svc.Engine().StateHash()
			if err := r.n.Close(); err != nil {
				t.Fatal(err)
			}
			svc := enginesvc.New(enginesvc.Options{})
			n, err := cluster.Open(cluster.Options{FS: vfs.Default, Dir: dir, Service: svc})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if got := svc.Engine().StateHash(); got != hash {
				t.Fatalf("restart: state hash %x, want %x", got, hash)
			}
		})
	}
}

// durations collects the duty cycle's durations (cluster.Observer).
type durations struct{ d []float64 }

func (c *durations) Observe(v float64) { c.d = append(c.d, v) }

func (c *durations) String() string {
	if len(c.d) == 0 {
		return "none"
	}
	s := slices.Clone(c.d)
	slices.Sort(s)
	q := func(p float64) time.Duration { return time.Duration(s[min(len(s)-1, int(p*float64(len(s))))] * 1e9) }
	return fmt.Sprintf("%d, median %v, p99 %v, p99.9 %v, max %v", len(s), q(0.5), q(0.99), q(0.999), q(1))
}
