package enginesvc_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/wire"
)

// volume is a memory file system of bounded size whose free space the
// archive reads (archive.FreeBytes through the injector).
func volume() (*vfs.MemFS, vfs.FS) {
	mem := vfs.NewMem()
	fsys := vfs.NewInjector(mem, 0, -1).WithFreeBytes(func(string) (uint64, error) {
		if f := mem.Free(); f >= 0 {
			return uint64(f), nil
		}
		return 1 << 40, nil
	})
	return mem, fsys
}

// answer is what the node released for one command.
type answer struct {
	rejected engine.Reason // ReasonNone unless a Rejected event came
	released bool
}

// answers records the egress of a harness by command.
type answers struct {
	t     *testing.T
	by    map[key]*answer
	order []key // commands in the order their Release came
}

func (a *answers) egress(_ int64, msg []byte) {
	var ev engine.Event
	switch wire.EventKind(msg) {
	case engine.EvRejected, engine.EvRelease:
		if err := wire.DecodeEvent(msg, &ev); err != nil {
			a.t.Errorf("bad event: %v", err)
			return
		}
	default:
		return
	}
	k := key{ev.Source, ev.Seq}
	ans := a.by[k]
	if ans == nil {
		ans = &answer{}
		a.by[k] = ans
	}
	if ans.released {
		a.t.Errorf("command %+v: event %v after its Release", k, ev.Kind)
	}
	if ev.Kind == engine.EvRejected {
		ans.rejected = ev.Reason
		return
	}
	ans.released = true
	a.order = append(a.order, k)
}

// TestDiskFullRefusesAndResumes fills a node's archive volume (a memory
// FS with a capacity) while commands arrive: once the free space is below
// the reserve the node refuses every new command with RejStorageFull (in
// order, after the answers of everything sequenced before), no write
// fails, nothing acknowledged is lost, and when space returns the node
// takes commands again by itself; the refused commands sent again are
// applied once, and a restart finds the state of the whole stream.
func TestDiskFullRefusesAndResumes(t *testing.T) {
	mem, fsys := volume()
	cmds := fresh(stream(11, 1500, false))
	want := modelHash(cmds)
	h := newHarness(t, fsys, cluster.StopTheWorld, 1)
	h.opts.StorageCheckInterval = time.Nanosecond // every DoWork
	var logBuf bytes.Buffer
	h.opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	ans := &answers{t: t, by: map[key]*answer{}}
	h.opts.Egress = ans.egress
	h.mustOpen()
	defer h.close()
	if err := h.submit(cmds[:200]); err != nil {
		t.Fatal(err)
	}
	h.node.RequestSnapshot()
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	st := h.node.Stats()
	reserve := int64(h.opts.SegmentLength) + 2*st.LastSnapshotBytes
	// Room for the reserve and a little more: the next log segment the
	// recorder prepares takes the volume below the reserve.
	mem.SetCapacity(used(mem) + reserve + 4096)
	sent := 200
	for sent < len(cmds) && h.node.StorageFull() == nil {
		k := min(25, len(cmds)-sent)
		if err := h.submit(cmds[sent : sent+k]); err != nil {
			t.Fatalf("after %d commands: %v", sent, err)
		}
		sent += k
	}
	if h.node.StorageFull() == nil {
		t.Fatalf("the volume never filled (%d bytes free)", mem.Free())
	}
	if !errors.Is(h.node.StorageFull(), cluster.ErrStorageFull) {
		t.Fatalf("StorageFull() = %v", h.node.StorageFull())
	}
	full := sent
	// The next ones are refused, with the reason, and answered in order.
	more := min(full+300, len(cmds))
	for i := full; i < more; i += 25 {
		if err := h.submit(cmds[i:min(i+25, more)]); err != nil {
			t.Fatalf("storage-full node: %v", err)
		}
	}
	st = h.node.Stats()
	if !st.StorageFull || st.StorageErrors != 0 || st.StorageRefused < int64(more-full) {
		t.Fatalf("stats: full %v, errors %d, refused %d (want >= %d)", st.StorageFull, st.StorageErrors, st.StorageRefused, more-full)
	}
	if st.ArchiveFreeBytes < 0 || st.ArchiveFreeBytes >= reserve {
		t.Fatalf("ArchiveFreeBytes %d, reserve %d", st.ArchiveFreeBytes, reserve)
	}
	firstRefused := -1
	for i := 0; i < more; i++ {
		a := ans.by[key{cmds[i].Source, cmds[i].Seq}]
		if a == nil || !a.released {
			t.Fatalf("command %d (%+v) not answered", i, key{cmds[i].Source, cmds[i].Seq})
		}
		switch {
		case a.rejected == engine.RejStorageFull && firstRefused < 0:
			firstRefused = i
		case a.rejected != engine.RejStorageFull && firstRefused >= 0:
			t.Fatalf("command %d applied after command %d was refused for want of space", i, firstRefused)
		}
	}
	if firstRefused < 0 || firstRefused > full {
		t.Fatalf("first refusal at command %d, the node was full from command %d", firstRefused, full)
	}
	// Releases came in submission order.
	for i := 1; i < len(ans.order); i++ {
		if pos(cmds, ans.order[i]) < pos(cmds, ans.order[i-1]) {
			t.Fatalf("release of %+v after that of %+v", ans.order[i], ans.order[i-1])
		}
	}
	if !strings.Contains(logBuf.String(), `msg="storage full" path=node/archive`) || !strings.Contains(logBuf.String(), "needed_bytes=") {
		t.Fatalf("no storage-full log line with the path and the bytes needed:\n%s", logBuf.String())
	}
	// Space returns: the node resumes by itself; the refused commands
	// sent again, then the rest, are applied.
	mem.SetCapacity(0)
	for k := range ans.by {
		if ans.by[k].rejected == engine.RejStorageFull {
			delete(ans.by, k)
		}
	}
	ans.order = ans.order[:0]
	for i := firstRefused; i < len(cmds); i += 25 {
		if err := h.submit(cmds[i:min(i+25, len(cmds))]); err != nil {
			t.Fatal(err)
		}
	}
	if h.node.StorageFull() != nil {
		t.Fatalf("still storage-full with space back: %v", h.node.StorageFull())
	}
	for i := firstRefused; i < len(cmds); i++ {
		if a := ans.by[key{cmds[i].Source, cmds[i].Seq}]; a == nil || !a.released || a.rejected == engine.RejStorageFull {
			t.Fatalf("command %d sent again after space returned: answer %+v", i, a)
		}
	}
	if got := h.svc.Engine().StateHash(); got != want {
		t.Fatalf("hash %x after every command once, reference %x", got, want)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	logged, err := logCommands(t, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(cmds) {
		t.Fatalf("%d commands in the log, %d sent once each", len(logged), len(cmds))
	}
	h.mustOpen()
	if got := h.svc.Engine().StateHash(); got != want {
		t.Fatalf("restarted hash %x, reference %x", got, want)
	}
}

// fresh drops the stream's resends (a sequence at or below its source's
// high-water mark, answered Duplicate), so that every command has one
// answer and a key of its own.
func fresh(cmds []engine.Command, _ []uint64) []engine.Command {
	hw := map[uint64]uint64{}
	var out []engine.Command
	for _, c := range cmds {
		if c.Seq > hw[c.Source] {
			hw[c.Source] = c.Seq
			out = append(out, c)
		}
	}
	return out
}

func used(mem *vfs.MemFS) int64 {
	mem.SetCapacity(1 << 40)
	u := 1<<40 - mem.Free()
	mem.SetCapacity(0)
	return u
}

func pos(cmds []engine.Command, k key) int {
	for i := range cmds {
		if cmds[i].Source == k.src && cmds[i].Seq == k.seq {
			return i
		}
	}
	return -1
}

// TestDiskFullWriteFails: with the gate off a write meets the full
// volume: the node stops with the error (ENOSPC, naming the file),
// counts and logs it, and a restart once space is back recovers every
// acknowledged command, from the files as the process left them and from
// what a crash would leave.
func TestDiskFullWriteFails(t *testing.T) {
	mem, fsys := volume()
	cmds, _ := stream(12, 3000, false)
	h := newHarness(t, fsys, cluster.StopTheWorld, 1)
	h.opts.StorageReserve = -1
	var logBuf bytes.Buffer
	h.opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	h.mustOpen()
	if err := h.submit(cmds[:200]); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(used(mem) + 8192)
	var err error
	for i := 200; i < len(cmds) && err == nil; i += 25 {
		err = h.submit(cmds[i:min(i+25, len(cmds))])
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v, want ENOSPC", err)
	}
	if _, again := h.node.DoWork(); !errors.Is(again, syscall.ENOSPC) {
		t.Fatalf("DoWork after the failure: %v", again)
	}
	if st := h.node.Stats(); st.StorageErrors != 1 {
		t.Fatalf("StorageErrors = %d", st.StorageErrors)
	}
	if !strings.Contains(logBuf.String(), `msg="storage full" path=node/archive/`) {
		t.Fatalf("no storage-full log line naming the file:\n%s", logBuf.String())
	}
	h.close()
	released := copyReleased(h.released)
	clone := mem.CrashClone(vfs.CrashCloneConfig{})
	mem.SetCapacity(0)
	checkRecovered(t, "process restart", mem, cluster.StopTheWorld, 1, released)
	checkRecovered(t, "crash", clone, cluster.StopTheWorld, 1, released)
}

// TestDiskFullRetentionRefuses: automatic retention cannot fix a full disk
// by deleting what recovery needs. With no snapshot every byte of the log
// is needed: the free-disk rule proposes, the positional rules refuse
// (no-complete-snapshot, logged and counted), no segment is detached and
// the node stays storage-full, refusing commands. After a snapshot the
// cutoff is held at C (the segment boundary at or below S), and a restart
// recovers every command.
func TestDiskFullRetentionRefuses(t *testing.T) {
	mem, fsys := volume()
	cmds := fresh(stream(13, 3000, false))
	h := newHarness(t, fsys, cluster.StopTheWorld, 1)
	h.opts.StorageCheckInterval = time.Nanosecond
	h.opts.Retention = cluster.RetentionOptions{MinFreeBytes: 1 << 30, CheckInterval: time.Millisecond, DeleteDelay: time.Millisecond}
	var logBuf bytes.Buffer
	h.opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	h.mustOpen()
	defer h.close()
	sent := 0
	for ; sent < len(cmds) && h.node.Stats().LogPosition < 3*int64(h.opts.SegmentLength); sent += 25 {
		if err := h.submit(cmds[sent:min(sent+25, len(cmds))]); err != nil {
			t.Fatal(err)
		}
	}
	// The reserve is one segment (no snapshot yet): leave less.
	mem.SetCapacity(used(mem) + int64(h.opts.SegmentLength)/2)
	// Bounded: retention checks every millisecond of the epoch clock.
	for i := 0; i < 200; i++ {
		if _, err := h.node.DoWork(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	st := h.node.Stats()
	if !st.StorageFull {
		t.Fatal("not storage-full")
	}
	if st.RetentionProposed[cluster.RuleFreeDisk] == 0 || st.RetentionRefused[cluster.RefusedNoSnapshot] == 0 {
		t.Fatalf("free-disk proposals %d, refusals (no snapshot) %d", st.RetentionProposed[cluster.RuleFreeDisk], st.RetentionRefused[cluster.RefusedNoSnapshot])
	}
	if st.RetentionDetachedSegments != 0 || st.ArchiveStart != 0 || st.RetentionApproved != 0 {
		t.Fatalf("retention freed space recovery needs: detached %d, start %d, approved %d", st.RetentionDetachedSegments, st.ArchiveStart, st.RetentionApproved)
	}
	if !strings.Contains(logBuf.String(), `msg="retention refused"`) || !strings.Contains(logBuf.String(), "reason=no-complete-snapshot") {
		t.Fatalf("no retention refusal logged:\n%s", logBuf.String())
	}
	if err := h.submit(cmds[sent : sent+5]); err != nil {
		t.Fatal(err)
	}
	if st2 := h.node.Stats(); st2.StorageRefused < st.StorageRefused+5 {
		t.Fatalf("refused %d -> %d for 5 commands sent while full", st.StorageRefused, st2.StorageRefused)
	}
	// Space for a snapshot (the operator's fix, or a reserve that has
	// one): retention may now free the log below C, never past it.
	mem.SetCapacity(used(mem) + 4*int64(h.opts.SegmentLength))
	h.node.RequestSnapshot()
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	if err := h.node.AwaitSnapshot(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := h.node.DoWork(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	st = h.node.Stats()
	seg := int64(h.opts.SegmentLength)
	if st.ArchiveStart > st.SnapshotPosition/seg*seg {
		t.Fatalf("archive start %d past C of the snapshot at %d", st.ArchiveStart, st.SnapshotPosition)
	}
	if st.RetentionDetachedSegments == 0 {
		t.Fatalf("nothing detached below the snapshot (refusals %v)", st.RetentionRefused)
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	mem.SetCapacity(0)
	h.mustOpen()
	if got, want := h.svc.Engine().StateHash(), modelHash(cmds[:sent]); got != want {
		t.Fatalf("restarted hash %x, model of the %d commands applied %x", got, sent, want)
	}
}
