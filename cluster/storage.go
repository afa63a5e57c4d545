package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/matchlog/matchlog/archive"
)

// Storage: a full disk and failing I/O
//
// A node whose archive volume fills must stop taking commands before a
// write fails, not after: once a segment write, a catalog update or a
// recording.log append has failed, what the files hold is no longer what
// the node holds in memory. So the duty cycle watches the volume's free
// space (archive.FreeBytes, every Options.StorageCheckInterval) against a
// reserve (Options.StorageReserve: by default one log segment, which the
// recorder preallocates before it enters it, plus twice the last snapshot
// set, which the next snapshot writes). While the free space is below the
// reserve the node is storage-full:
//
//   - session messages are not sequenced; each is handed, in arrival
//     order and after everything sequenced before it, to the service's
//     OnRefused (Refuser; enginesvc answers a command with a Rejected
//     event of reason engine.RejStorageFull and its Release), whose
//     answers are released in order with the rest of the egress. A
//     service that is no Refuser leaves them queued until space returns.
//     Session opens and closes, timers and snapshots are still
//     sequenced: they are small, the reserve has room for them, and a
//     snapshot is what lets retention free the log;
//   - nothing already sequenced is dropped: it is recorded into the
//     reserve and released once durable, as always;
//   - automatic retention goes on under its positional rules, which
//     refuse to free space by deleting what recovery needs (the
//     "retention refused" record says which rule);
//   - one "storage full" record is logged (path, free_bytes,
//     reserve_bytes, needed_bytes) and Stats.StorageFull is set.
//
// When the free space is back at or above the reserve the node resumes by
// itself ("storage available") and sequences commands again; a restart is
// not needed. The gate is off on a file system that cannot tell its free
// space (Stats.ArchiveFreeBytes -1) and with a negative reserve.
//
// Errors that still reach a write (the gate missed: another program filled
// the volume between two checks, or the reserve was too small; or the
// disk fails with EIO) are not retried: the node fails, every later
// DoWork returns the error (which names the file and the operation), and a
// restart recovers from what the files hold (the durable log; everything
// released was durable). An error satisfying errors.Is(err,
// syscall.ENOSPC) is counted in Stats.StorageErrors and logged as "storage
// full" too, with the path of the failed operation. A failed sync is never
// retried in the process (archive: a failed sync is sticky; after it the
// page cache's state is unknown).

// Refuser is implemented by a Service that answers the session messages a
// storage-full node does not sequence. OnRefused runs on the node's
// goroutine with the message (valid during the call) and why; answers go
// through c.Offer and are released after the egress of everything
// sequenced before the message.
type Refuser interface {
	OnRefused(c Cluster, sessionID int64, msg []byte, why error)
}

// ErrStorageFull is the cause of the error a storage-full node hands to
// Refuser.OnRefused (a *StorageFullError).
var ErrStorageFull = errors.New("cluster: archive volume short of space")

// StorageFullError says why a node refuses commands: the archive volume's
// free space below the reserve.
type StorageFullError struct {
	Dir     string // the archive directory
	Free    int64  // free bytes at the last check
	Reserve int64  // the reserve (Options.StorageReserve)
}

func (e *StorageFullError) Error() string {
	return fmt.Sprintf("cluster: archive volume of %s has %d bytes free, below the %d bytes the node keeps in reserve: commands are refused until %d more bytes are free (delete other files on the volume, grow it, or let retention free the log after a snapshot)",
		e.Dir, e.Free, e.Reserve, e.Reserve-e.Free)
}

func (e *StorageFullError) Unwrap() error { return ErrStorageFull }

// DefaultStorageCheckInterval is Options.StorageCheckInterval's default.
const DefaultStorageCheckInterval = 100 * time.Millisecond

// storageGate is the node's free-space watch.
type storageGate struct {
	off     bool  // the FS cannot tell its free space, or the reserve is negative
	lastMs  int64 // epoch ms of the last check
	checked bool
	full    *StorageFullError // non-nil while storage-full
	free    int64             // free bytes at the last check; -1 unknown
}

// storageReserve is the reserve in bytes (see above).
func (n *Node) storageReserve() int64 {
	if r := n.opts.StorageReserve; r != 0 {
		return r
	}
	seg := int64(archive.DefaultSegmentLength)
	if n.rec != nil && n.rec.desc.SegmentFileLength > 0 {
		seg = int64(n.rec.desc.SegmentFileLength)
	}
	return seg + 2*n.stats.LastSnapshotBytes
}

// checkStorage runs the gate's check when one is due (on the duty cycle).
func (n *Node) checkStorage(nowMs int64) {
	g := &n.storage
	if g.off {
		return
	}
	iv := n.opts.StorageCheckInterval
	if iv <= 0 {
		iv = DefaultStorageCheckInterval
	}
	if g.checked && nowMs-g.lastMs < iv.Milliseconds() && nowMs >= g.lastMs {
		return
	}
	g.checked, g.lastMs = true, nowMs
	reserve := n.storageReserve()
	if reserve < 0 {
		g.off, g.free = true, -1
		return
	}
	free, err := archive.FreeBytes(n.fs, n.adir)
	if errors.Is(err, archive.ErrFreeSpaceUnsupported) {
		g.off, g.free = true, -1
		return
	}
	if err != nil {
		// A failed statfs says nothing about the volume: keep the state.
		return
	}
	g.free = int64(min(free, 1<<62))
	switch {
	case g.free < reserve && g.full == nil:
		g.full = &StorageFullError{Dir: n.adir, Free: g.free, Reserve: reserve}
		n.stats.StorageFullEvents++
		n.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "storage full",
			slog.String("path", n.adir), slog.Int64("free_bytes", g.free), slog.Int64("reserve_bytes", reserve),
			slog.Int64("needed_bytes", reserve-g.free), slog.String("effect", "commands refused until space returns"))
	case g.free < reserve:
		g.full.Free, g.full.Reserve = g.free, reserve
	case g.full != nil:
		n.opts.Logger.LogAttrs(context.Background(), slog.LevelInfo, "storage available",
			slog.String("path", n.adir), slog.Int64("free_bytes", g.free), slog.Int64("reserve_bytes", reserve),
			slog.Int64("refused", n.stats.StorageRefused))
		g.full = nil
	}
}

// refuseQueued hands the session messages at the head of the work queue
// to the service's Refuser while the node is storage-full. It runs after
// the cycle's step, so that everything sequenced before them has its
// egress queued first.
func (n *Node) refuseQueued() int {
	g := &n.storage
	r, ok := n.svc.(Refuser)
	if g.full == nil || !ok {
		return 0
	}
	done := 0
	n.refusing = true
	for n.workHead < len(n.work.items) && done < n.opts.MaxBatch {
		it := &n.work.items[n.workHead]
		if it.kind != inMessage {
			break
		}
		if n.cm.sessions[it.session] != nil {
			r.OnRefused(n.handle(), it.session, n.work.arena[it.off:it.off+it.n], g.full)
			n.stats.StorageRefused++
		}
		n.workHead++
		done++
	}
	n.refusing = false
	if done > 0 {
		n.release()
	}
	return done
}

// noteStorageError counts and logs a write that failed for want of space.
func (n *Node) noteStorageError(err error) {
	if !errors.Is(err, syscall.ENOSPC) {
		return
	}
	n.stats.StorageErrors++
	path := n.adir
	var pe *os.PathError
	if errors.As(err, &pe) {
		path = pe.Path
	}
	attrs := []slog.Attr{slog.String("path", path)}
	reserve := n.storageReserve()
	if free, ferr := archive.FreeBytes(n.fs, n.adir); ferr == nil {
		attrs = append(attrs, slog.Int64("free_bytes", int64(min(free, 1<<62))), slog.Int64("reserve_bytes", reserve),
			slog.Int64("needed_bytes", max(reserve-int64(min(free, 1<<62)), 0)))
	}
	attrs = append(attrs, slog.String("effect", "node stopped; restart once space is free"), slog.String("error", err.Error()))
	n.opts.Logger.LogAttrs(context.Background(), slog.LevelError, "storage full", attrs...)
}

// StorageFull returns why the node refuses commands, or nil while it
// takes them. Call it from the goroutine that runs DoWork.
func (n *Node) StorageFull() error {
	if n.storage.full == nil {
		return nil
	}
	e := *n.storage.full
	return &e
}
