package metrics_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/server"
	"github.com/matchlog/matchlog/server/metrics"
)

// memVolume is a memory FS of bounded size that tells its free space.
func memVolume() (*vfs.MemFS, vfs.FS) {
	mem := vfs.NewMem()
	return mem, vfs.NewInjector(mem, 0, -1).WithFreeBytes(func(string) (uint64, error) {
		if f := mem.Free(); f >= 0 {
			return uint64(f), nil
		}
		return 1 << 40, nil
	})
}

func memUsed(mem *vfs.MemFS) int64 {
	mem.SetCapacity(1 << 40)
	u := 1<<40 - mem.Free()
	mem.SetCapacity(0)
	return u
}

// TestStorageFullSeenByClientAndMetrics: a node whose archive volume is
// below its reserve answers a client's command over TCP with Rejected
// reason storage_full, and the metrics show the free space, the state
// and the refusals; once space returns the next command is applied. With
// the gate off the next write fails with ENOSPC, which
// matchlog_archive_disk_full_errors_total counts although the node has
// stopped.
func TestStorageFullSeenByClientAndMetrics(t *testing.T) {
	for _, gate := range []bool{true, false} {
		mem, fsys := memVolume()
		m := metrics.New(metrics.Options{})
		node := cluster.Options{FS: fsys, Dir: "node", TermLength: 64 * 1024, SegmentLength: 64 * 1024,
			FileSyncLevel: 1, StorageCheckInterval: time.Nanosecond}
		if !gate {
			node.StorageReserve = -1
		}
		opts := server.Options{Addr: "127.0.0.1:0", Node: node}
		m.Instrument(&opts)
		srv, err := server.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		m.Attach(srv)
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx) }()
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		reasons := make(chan engine.Reason, 16)
		cl, err := client.Dial(cctx, client.Options{Addr: srv.Addr().String(), ClientID: 7, OnEvent: func(ev *engine.Event) {
			if ev.Kind == engine.EvRejected {
				reasons <- ev.Reason
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		send := func(c engine.Command) error {
			if _, err := cl.Send(&c); err != nil {
				return err
			}
			return cl.Wait(cctx)
		}
		if err := send(engine.Command{Kind: engine.CmdDefineInstrument, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000}); err != nil {
			t.Fatal(err)
		}
		// Less free than one segment: the gate closes; without it the
		// next segment's preparation fails.
		mem.SetCapacity(memUsed(mem) + 1000)
		order := engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5}
		const C, G = dto.MetricType_COUNTER, dto.MetricType_GAUGE
		gather := func() map[string]*dto.MetricFamily {
			list, err := m.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			mfs := map[string]*dto.MetricFamily{}
			for _, mf := range list {
				mfs[mf.GetName()] = mf
			}
			return mfs
		}
		if gate {
			// The gate closes at the duty cycle's next check.
			deadline := time.Now().Add(10 * time.Second)
			for value(t, gather(), "matchlog_archive_storage_full", G) != 1 {
				if time.Now().After(deadline) {
					t.Fatal("matchlog_archive_storage_full never 1")
				}
				time.Sleep(time.Millisecond)
			}
			if err := send(order); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-reasons:
				if r != engine.RejStorageFull {
					t.Fatalf("rejected with %v, want storage_full", r)
				}
			default:
				t.Fatal("the client saw no Rejected event")
			}
			mfs := gather()
			if v := value(t, mfs, "matchlog_archive_free_bytes", G); v <= 0 || v > 1000 {
				t.Errorf("matchlog_archive_free_bytes %v", v)
			}
			if v := value(t, mfs, "matchlog_commands_rejected_total", C, "reason", "storage_full"); v != 1 {
				t.Errorf("rejected{storage_full} %v", v)
			}
			if v := value(t, mfs, "matchlog_archive_storage_full_events_total", C); v != 1 {
				t.Errorf("storage-full events %v", v)
			}
			mem.SetCapacity(0)
			deadline = time.Now().Add(10 * time.Second)
			for value(t, gather(), "matchlog_archive_storage_full", G) != 0 {
				if time.Now().After(deadline) {
					t.Fatal("matchlog_archive_storage_full never back to 0")
				}
				time.Sleep(time.Millisecond)
			}
			if err := send(order); err != nil {
				t.Fatal(err)
			}
			if len(reasons) != 0 {
				t.Fatalf("rejected (%v) with space back", <-reasons)
			}
		} else {
			// Enough orders to take the log past half its segment, where
			// the recorder prepares the next one.
			for i := uint64(1); i < 2000 && cl.Err() == nil; i++ {
				o := order
				o.OrderID = i
				if _, err := cl.Send(&o); err != nil {
					break
				}
			}
			select {
			case err := <-served:
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Serve: %v, want ENOSPC", err)
				}
				served <- err
			case <-time.After(20 * time.Second):
				t.Fatal("the node did not stop on a full disk")
			}
			if v := value(t, gather(), "matchlog_archive_disk_full_errors_total", C); v < 1 {
				t.Errorf("matchlog_archive_disk_full_errors_total %v after ENOSPC", v)
			}
		}
		cl.Close()
		ccancel()
		cancel()
		<-served
	}
}
