package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeLog records the offsets of a file's writes and syncs.
type writeLog struct {
	memFile
	ops []string
}

func (w *writeLog) WriteAt(p []byte, off int64) (int, error) {
	w.ops = append(w.ops, fmt.Sprintf("write@%d+%d", off, len(p)))
	return w.memFile.WriteAt(p, off)
}
func (w *writeLog) Sync() error { w.ops = append(w.ops, "sync"); return nil }

func TestMarkFileCreateAndRead(t *testing.T) {
	m := MarkFile{
		ActivityTimestamp:    1_800_000_000_000,
		StartTimestamp:       1_799_999_999_000,
		PID:                  int64(os.Getpid()), // a running process: the timestamp decides
		ControlStreamID:      10,
		LocalControlStreamID: 11,
		EventsStreamID:       30,
		ErrorBufferLength:    64 * 1024,
		ArchiveID:            -1,
		ControlChannel:       "aeron:udp?endpoint=localhost:8010",
		LocalControlChannel:  "aeron:ipc",
		EventsChannel:        "aeron:udp?control-mode=dynamic|control=localhost:8030",
		AeronDirectory:       "/dev/shm/aeron",
	}
	f := &writeLog{memFile: memFile{name: "mark"}}
	if err := CreateMarkFile(f, m); err != nil {
		t.Fatal(err)
	}
	if len(f.b) != 8192+64*1024 {
		t.Fatalf("length %d", len(f.b))
	}
	// The version is written last, then the file is synced.
	if n := len(f.ops); n < 3 || f.ops[n-2] != "write@8+4" || f.ops[n-1] != "sync" {
		t.Fatalf("ops %v", f.ops)
	}
	got, err := ReadMarkFile(f)
	if err != nil {
		t.Fatal(err)
	}
	m.Version, m.HeaderLength, m.HeaderOffset = SemanticVersion, 8192, 8
	if *got != m {
		t.Fatalf("got %+v\nwant %+v", *got, m)
	}
	if h := f.b[:8]; !bytes.Equal(h, []byte{128, 0, 200, 0, 100, 0, 2, 0}) {
		t.Fatalf("message header %x", h)
	}
	if !got.IsLive(m.ActivityTimestamp+5000, 5000) || got.IsLive(m.ActivityTimestamp+5001, 5000) {
		t.Fatal("IsLive around the timeout")
	}
	if err := UpdateMarkActivity(f, got.HeaderOffset, m.ActivityTimestamp+60_000); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadMarkFile(f)
	if got.ActivityTimestamp != m.ActivityTimestamp+60_000 || !got.IsLive(m.ActivityTimestamp+61_000, 5000) {
		t.Fatalf("%+v", got)
	}
	UpdateMarkActivity(f, got.HeaderOffset, NullTimestamp)
	got, _ = ReadMarkFile(f)
	if got.IsLive(m.ActivityTimestamp, 1<<40) {
		t.Fatal("terminated archive is live")
	}
	// The same fresh timestamp of a process that is gone (killed): not
	// live, at once.
	dead := *got
	dead.ActivityTimestamp, dead.PID = m.ActivityTimestamp, deadPID(t)
	if dead.IsLive(m.ActivityTimestamp, 5000) {
		t.Fatal("a mark file of a dead process is live")
	}
	// Not ready (version 0) is not live.
	notReady := *got
	notReady.Version, notReady.ActivityTimestamp = 0, m.ActivityTimestamp
	if notReady.IsLive(m.ActivityTimestamp, 5000) {
		t.Fatal("version 0 is live")
	}
	if err := CreateMarkFile(f, m); err == nil {
		t.Fatal("created over a non-empty file")
	}
	long := m
	long.AeronDirectory = strings.Repeat("d", 8192)
	if err := CreateMarkFile(&memFile{}, long); err == nil {
		t.Fatal("header over 8192 bytes accepted")
	}
}

// The fixture's mark file decodes the same from a legacy layout (no
// message header, block at 0).
func TestMarkFileLegacyAndDamaged(t *testing.T) {
	b := readFile(t, filepath.Join(copyFixture(t), MarkFileName))
	want, err := DecodeMarkFile(b)
	if err != nil {
		t.Fatal(err)
	}
	legacy := bytes.Clone(b[8:MarkHeaderLength])
	got, err := DecodeMarkFile(legacy)
	if err != nil {
		t.Fatal(err)
	}
	w := *want
	w.HeaderOffset = 0
	if *got != w {
		t.Fatalf("legacy %+v", *got)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"short block", b[:100], "shorter than the 136-byte header block"},
		{"string cut", b[:140], "offset 136: string 0 of length 33 runs past"},
		{"bad string length", func() []byte {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint32(c[136:], 9000)
			return c
		}(), "offset 136: string 0 of length 9000"},
		{"tiny block length", func() []byte {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint16(c[0:], 16)
			return c
		}(), "block length 16"},
	} {
		_, err := DecodeMarkFile(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "archive: ") || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// deadPID returns the id of a process that has exited and been reaped.
func deadPID(t *testing.T) int64 {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("no `true` to make a dead pid: %v", err)
	}
	return int64(c.Process.Pid)
}
