package wiresbe

import (
	"bytes"
	"testing"
)

// FuzzFrameReader: any stream gives frames within the limits or an error,
// never a panic; every decoder survives every frame.
func FuzzFrameReader(f *testing.F) {
	f.Add(AppendFrame(nil, AppendConnect(nil, 1)))
	f.Add(AppendFrame(nil, AppendSessionClosed(nil, 1, CloseCodeTimeout, "x")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewFrameReader(bytes.NewReader(b))
		for {
			msg, err := fr.Next()
			if err != nil {
				return
			}
			if len(msg) < MinFrameLength || len(msg) > MaxFrameLength {
				t.Fatalf("frame of %d bytes", len(msg))
			}
			_ = CheckFixed(msg, ConnectBlockLength)
			var sc SessionClosedDecoder
			if sc.WrapWithHeader(msg, 0) == nil {
				_, _ = sc.Reason()
			}
			var c ConnectDecoder
			if c.WrapWithHeader(msg, 0) == nil {
				_ = c.ClientId()
			}
		}
	})
}
