package archive_test

import (
	"fmt"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// Record a log publication into an archive, stop, reopen the archive and
// replay the recording: every frame comes back at its position, byte for
// byte as published.
func Example() {
	fsys := vfs.NewMem() // vfs.Default and a real directory in production
	if err := fsys.MkdirAll("arch"); err != nil {
		panic(err)
	}
	clock := int64(1_700_000_000_000)
	opts := archive.Options{SegmentLength: 128 * 1024, FileSyncLevel: 1, CatalogSyncLevel: 1,
		Clock: func() int64 { return clock }}
	a, err := archive.Open(fsys, "arch", opts)
	if err != nil {
		panic(err)
	}

	log, err := logbuf.New(64*1024, 1408, 0, 1, 100)
	if err != nil {
		panic(err)
	}
	pub, img := log.Publication(), log.Image()
	pub.SetPositionLimit(int64(log.TermWindowLength())) // the recorder releases space as it writes
	r, err := a.StartRecording(archive.Source{Log: log, Image: img})
	if err != nil {
		panic(err)
	}
	for _, msg := range []string{"new order", "cancel", "new order"} {
		if pos, err := pub.Offer([]byte(msg)); err != nil || pos < 0 {
			panic(fmt.Sprint("offer: ", pos, err))
		}
	}
	if _, err := r.Poll(); err != nil { // one block: written and synced
		panic(err)
	}
	id, stop := r.ID(), r.Position()
	if err := r.Stop(); err != nil {
		panic(err)
	}
	if err := a.Close(); err != nil {
		panic(err)
	}

	// Later, or in another process: replay the whole recording.
	clock += 60_000
	a, err = archive.Open(fsys, "arch", opts)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	d, _ := a.Descriptor(id)
	fmt.Println("recording", id, "from", d.StartPosition, "to", d.StopPosition, "stopped at", stop)
	_, err = a.Replay(id, d.StartPosition, archive.NullPosition, func(pos int64, frame []byte) error {
		fmt.Printf("%4d %q\n", pos, frame[logbuf.HeaderLength:])
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// recording 0 from 0 to 192 stopped at 192
	//    0 "new order"
	//   64 "cancel"
	//  128 "new order"
}
