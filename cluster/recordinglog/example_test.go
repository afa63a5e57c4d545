package recordinglog_test

import (
	"fmt"

	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// A node appends a TERM when its leadership term starts and a SNAPSHOT per
// service, then the consensus module's, for every snapshot.
func ExampleLog() {
	fs := vfs.NewMem()
	_ = fs.MkdirAll("/cluster")
	l, err := recordinglog.Create(fs, "/cluster", recordinglog.Options{SyncLevel: 1})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	_ = l.AppendTerm(0, 0, 0, 1000)
	_ = l.AppendSnapshot(1, 0, 0, 115744, 2000, 0)  // service 0
	_ = l.AppendSnapshot(2, 0, 0, 115744, 2000, -1) // consensus module, last
	fmt.Println(recordinglog.Format(l.Entries()))
	fmt.Println(l.Size(), "bytes")
	// Output:
	// [TERM rec0 term0 base0 logPos -1][SNAPSHOT rec1 svc0 logPos 115744][SNAPSHOT rec2 svc-1 logPos 115744]
	// 192 bytes
}
