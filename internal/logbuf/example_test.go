package logbuf_test

import (
	"fmt"

	"github.com/matchlog/matchlog/internal/logbuf"
)

func Example() {
	log, err := logbuf.New(64*1024, logbuf.DefaultMTU, 0, 7, 1001)
	if err != nil {
		panic(err)
	}
	pub := log.Publication()
	img := log.Image()

	// Claim, encode in place, commit.
	for _, msg := range []string{"hello", "log", "buffer"} {
		pub.SetPositionLimit(img.Position() + int64(log.TermWindowLength()))
		claim, pos, err := pub.TryClaim(len(msg))
		if err != nil {
			panic(err)
		}
		if pos == logbuf.BackPressured {
			continue // poll the reader, then retry
		}
		copy(claim.Buffer(), msg)
		claim.Commit()
	}

	img.Poll(func(buf []byte, offset, length int, hdr logbuf.Header) {
		fmt.Printf("%s at %d (term %d, offset %d)\n", buf[offset:offset+length], hdr.Position(), hdr.TermID(), hdr.Offset())
	}, 10)
	// Output:
	// hello at 64 (term 0, offset 0)
	// log at 128 (term 0, offset 64)
	// buffer at 192 (term 0, offset 128)
}
