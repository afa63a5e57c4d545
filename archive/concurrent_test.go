package archive

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentRecordings drives a long recording on one goroutine while
// another starts, records and stops short recordings and a third reads the
// catalog, the recorded positions and the segment times (run with -race):
// every recording replays byte for byte and the archive verifies.
func TestConcurrentRecordings(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fs, dir := fc.make(t)
			a := openTest(t, fs, dir, Options{SegmentLength: 128 << 10, FileIoMaxLength: 64 << 10,
				FileSyncLevel: 1, CatalogSyncLevel: 1, MarkErrorBufferLength: 4096})
			long := newHarness(t, 64<<10, 1408, 0, 1, 0)
			lr, err := a.StartRecording(Source{Log: long.log, Image: long.img})
			if err != nil {
				t.Fatal(err)
			}
			const shorts = 6
			shortH := make([]*harness, shorts)
			for i := range shortH {
				shortH[i] = newHarness(t, 64<<10, 1408, 0, int32(10+i), 0)
			}
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				errs     []error
				shortIDs []int64
				done     = make(chan struct{})
			)
			fail := func(err error) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			// record publishes total bytes into h and records them
			// with r, on the calling goroutine.
			record := func(h *harness, r *Recording, rng *rand.Rand, total int64) error {
				end := h.pub.Position() + total
				for h.pub.Position() < end {
					if !h.offer(rng, 1+rng.IntN(h.pub.MaxPayloadLength())) {
						h.catchUp()
						if _, err := r.Record(h.pub.Position()); err != nil {
							return err
						}
						h.limit()
					}
				}
				h.catchUp()
				if pos, err := r.Record(h.pub.Position()); err != nil {
					return err
				} else if pos != h.pub.Position() {
					return fmt.Errorf("recording %d: recorded %d, published %d", r.ID(), pos, h.pub.Position())
				}
				h.limit()
				return nil
			}
			wg.Add(3)
			go func() { // the long recording
				defer wg.Done()
				rng := rand.New(rand.NewPCG(1, 1))
				for i := 0; i < 40; i++ {
					if err := record(long, lr, rng, 16<<10); err != nil {
						fail(err)
						return
					}
				}
			}()
			go func() { // short recordings, started and stopped
				defer wg.Done()
				defer close(done)
				rng := rand.New(rand.NewPCG(2, 2))
				for _, h := range shortH {
					r, err := a.StartRecording(Source{Log: h.log, Image: h.img, Channel: "aeron:ipc?alias=snapshot"})
					if err != nil {
						fail(err)
						return
					}
					if err := record(h, r, rng, 150<<10); err != nil {
						fail(err)
						return
					}
					if err := r.Stop(); err != nil {
						fail(err)
						return
					}
					mu.Lock()
					shortIDs = append(shortIDs, r.ID())
					mu.Unlock()
				}
			}()
			go func() { // readers
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					for _, d := range a.ListRecordings() {
						if _, err := a.RecordedPosition(d.RecordingID); err != nil {
							fail(err)
							return
						}
						if _, err := a.SegmentTimes(d.RecordingID); err != nil {
							fail(err)
							return
						}
						if _, err := a.Descriptor(d.RecordingID); err != nil {
							fail(err)
							return
						}
					}
					for _, id := range a.ActiveRecordings() {
						if r := a.Recording(id); r != nil && r.Position() < r.StartPosition() {
							fail(errors.New("position before start"))
							return
						}
					}
				}
			}()
			wg.Wait()
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if err := lr.Stop(); err != nil {
				t.Fatal(err)
			}
			sameFrames(t, replayAll(t, a, lr.ID(), 0, long.pub.Position()), long.frames)
			if len(shortIDs) != shorts {
				t.Fatalf("%d short recordings, want %d", len(shortIDs), shorts)
			}
			for i, id := range shortIDs {
				sameFrames(t, replayAll(t, a, id, 0, shortH[i].pub.Position()), shortH[i].frames)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			verifyOK(t, fs, dir)
		})
	}
}
