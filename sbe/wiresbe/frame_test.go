package wiresbe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameReader(t *testing.T) {
	var stream []byte
	stream = AppendFrame(stream, AppendConnect(nil, 42))
	stream = AppendFrame(stream, AppendSessionClosed(nil, 7, CloseCodeMalformed, "bad\x01 \xffthing"))
	stream = AppendFrame(stream, AppendKeepalive(nil, 7))
	fr := NewFrameReader(bytes.NewReader(stream))
	msg, err := fr.Next()
	if err != nil {
		t.Fatal(err)
	}
	var c ConnectDecoder
	if err := c.WrapWithHeader(msg, 0); err != nil || c.ClientId() != 42 || c.ProtocolVersion() != ProtocolVersion {
		t.Fatalf("Connect: %v %d", err, c.ClientId())
	}
	if err := CheckFixed(msg, ConnectBlockLength); err != nil {
		t.Fatal(err)
	}
	msg, err = fr.Next()
	if err != nil {
		t.Fatal(err)
	}
	var sc SessionClosedDecoder
	if err := sc.WrapWithHeader(msg, 0); err != nil || sc.SessionId() != 7 || sc.Code() != CloseCodeMalformed {
		t.Fatalf("SessionClosed: %v", err)
	}
	if why, err := sc.Reason(); err != nil || string(why) != "bad? ?thing" {
		t.Fatalf("reason %q %v", why, err)
	}
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}

func TestFrameReaderErrors(t *testing.T) {
	ka := AppendFrame(nil, AppendKeepalive(nil, 1))
	for name, c := range map[string]struct {
		in   []byte
		want error
	}{
		"zero length":     {[]byte{0, 0, 0, 0}, ErrFrameLength},
		"below a header":  {[]byte{7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7}, ErrFrameLength},
		"over max":        {[]byte{1, 4, 0, 0}, ErrFrameLength},
		"huge":            {[]byte{0xff, 0xff, 0xff, 0xff}, ErrFrameLength},
		"partial length":  {[]byte{1, 2}, ErrTruncated},
		"truncated frame": {ka[:len(ka)-1], ErrTruncated},
	} {
		_, err := NewFrameReader(bytes.NewReader(c.in)).Next()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// MaxFrameLength itself is fine.
	big := make([]byte, MaxFrameLength)
	if _, err := NewFrameReader(bytes.NewReader(AppendFrame(nil, big))).Next(); err != nil {
		t.Fatalf("max frame: %v", err)
	}
}

func TestAppendAndCheck(t *testing.T) {
	msg := AppendConnected([]byte{9}, -1, 2, 3, 4, 5)[1:]
	var d ConnectedDecoder
	if err := d.WrapWithHeader(msg, 0); err != nil || d.SessionId() != -1 || d.ClientId() != 2 ||
		d.KeepaliveIntervalMs() != 3 || d.SessionTimeoutMs() != 4 {
		t.Fatalf("Connected: %v", err)
	}
	sd := AppendSubscribeDepth(nil, 5, 6)
	var s SubscribeDepthDecoder
	if err := s.WrapWithHeader(sd, 0); err != nil || s.Instrument() != 5 || s.Levels() != 6 {
		t.Fatal("SubscribeDepth")
	}
	cs := AppendCloseSession(nil, 8)
	if err := CheckFixed(cs, CloseSessionBlockLength); err != nil {
		t.Fatal(err)
	}
	if err := CheckFixed(cs[:len(cs)-1], CloseSessionBlockLength); err == nil || !strings.Contains(err.Error(), "header says") {
		t.Fatalf("truncated: %v", err)
	}
	if err := CheckFixed(cs, CloseSessionBlockLength+1); err == nil {
		t.Fatal("short block accepted")
	}
	if err := CheckFixed(cs[:3], 0); err == nil {
		t.Fatal("no header accepted")
	}
	long := AppendSessionClosed(nil, 1, CloseCodeTimeout, strings.Repeat("x", 1000))
	if len(long) > MaxFrameLength {
		t.Fatalf("SessionClosed of %d bytes exceeds a frame", len(long))
	}
}
