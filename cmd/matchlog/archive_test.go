package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// copyArchiveFixture copies real Aeron's archive directory (read-only
// original) into a temp directory and returns the copy: the archive alone,
// with no cluster/recording.log beside it, so detach and purge work on it
// without the snapshot check (TestPurgePastSnapshotRefused covers that).
func copyArchiveFixture(t *testing.T) string {
	t.Helper()
	return filepath.Join(fixtures.CopyAeronSingleNode(t, "archive"), "archive")
}

func hasTemplate(c replayCounts, schema, template uint16, frames int) bool {
	for _, t := range c.Templates {
		if t.SchemaID == schema && t.TemplateID == template {
			return t.Frames == frames
		}
	}
	return false
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errb := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q, stdout\n%s", args, code, errb, out)
	}
	return out
}

func failCLI(t *testing.T, want string, args ...string) {
	t.Helper()
	code, out, errb := runCLI(t, args...)
	if code != 1 || !strings.Contains(errb, want) {
		t.Fatalf("%v: exit %d, stderr %q (want %q), stdout\n%s", args, code, errb, want, out)
	}
}

// TestArchiveCLIFixture runs every command on a copy of the archive Aeron
// wrote: describe and verify it, replay its recordings, then detach, delete
// and purge segments of the log recording and check the files and the
// catalog agree.
func TestArchiveCLIFixture(t *testing.T) {
	d := copyArchiveFixture(t)
	// describe's and verify's output on the fixture: TestGoldenAeron.
	var desc struct {
		Recordings []struct {
			RecordingID   int64 `json:"recording_id"`
			StartPosition int64 `json:"start_position"`
			StopPosition  int64 `json:"stop_position"`
			SegmentBytes  int64 `json:"segment_bytes"`
			Segments      []struct {
				Name string `json:"name"`
				Size int64  `json:"size_bytes"`
			} `json:"segments"`
			Deleted []struct {
				Name string `json:"name"`
			} `json:"deleted"`
		} `json:"recordings"`
	}
	// Replay of the whole recordings: TestGoldenAeron; a range here.
	var counts replayCounts
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "replay", "--dir", d, "--id", "1", "--from", "96", "--to", "288", "--json")), &counts); err != nil {
		t.Fatal(err)
	}
	if counts.Frames != 2 {
		t.Fatalf("replay [96, 288) %+v", counts)
	}
	failCLI(t, "not a frame boundary", "archive", "replay", "--dir", d, "--id", "1", "--from", "64")
	failCLI(t, "not a frame boundary", "archive", "replay", "--dir", d, "--id", "1", "--to", "100")
	failCLI(t, "not inside", "archive", "replay", "--dir", d, "--id", "1", "--to", "1000")
	failCLI(t, "recording 9 is not in the catalog of "+d+" (recordings: 0, 1, 2)", "archive", "replay", "--dir", d, "--id", "9")

	// Detach: refused off a boundary, then moves the start; files stay.
	failCLI(t, "not a segment boundary", "archive", "detach", "--dir", d, "--id", "0", "--position", "65536")
	failCLI(t, "past the stop segment", "archive", "detach", "--dir", d, "--id", "0", "--position", "262144")
	failCLI(t, "not after the start segment", "archive", "detach", "--dir", d, "--id", "1", "--position", "0")
	out := mustCLI(t, "archive", "detach", "--dir", d, "--id", "0", "--position", "131072")
	if !strings.Contains(out, "start 0 -> 131072") || !fileExists(d, "0-0.rec") {
		t.Fatalf("detach:\n%s", out)
	}
	// Verify reports the detached file as an orphan until it is deleted.
	failCLI(t, "verify found problems", "archive", "verify", "--dir", d)

	// Delete without --now: renamed, left for the archive to unlink.
	out = mustCLI(t, "archive", "delete", "--dir", d, "--id", "0")
	if !strings.Contains(out, "renamed 1 segment files") || fileExists(d, "0-0.rec") || !fileExists(d, "0-0.rec.deleted") {
		t.Fatalf("delete:\n%s", out)
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "describe", "--dir", d, "--json")), &desc); err != nil {
		t.Fatal(err)
	}
	if r := desc.Recordings[0]; r.StartPosition != 131072 || len(r.Segments) != 1 || len(r.Deleted) != 1 || r.Deleted[0].Name != "0-0.rec.deleted" {
		t.Fatalf("describe after delete %+v", r)
	}
	mustCLI(t, "archive", "verify", "--dir", d, "--all")
	// --now unlinks what is pending.
	mustCLI(t, "archive", "delete", "--dir", d, "--id", "0", "--now")
	if fileExists(d, "0-0.rec.deleted") {
		t.Fatal("delete --now left the renamed file")
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "replay", "--dir", d, "--id", "0", "--json")), &counts); err != nil {
		t.Fatal(err)
	}
	if counts.From != 131072 || counts.To != 231264 || counts.Frames == 0 {
		t.Fatalf("replay after purge %+v", counts)
	}
	failCLI(t, "not after the start segment", "archive", "purge", "--dir", d, "--id", "0", "--position", "131072")
	mustCLI(t, "archive", "verify", "--dir", d, "--all")

	// A live archive in the directory: every change is refused.
	a, err := archive.Open(vfs.Default, d, archive.Options{CatalogCapacity: 65536, MarkErrorBufferLength: 4096})
	if err != nil {
		t.Fatal(err)
	}
	failCLI(t, "another archive is active", "archive", "detach", "--dir", d, "--id", "0", "--position", "131072")
	failCLI(t, "another archive is active", "archive", "purge", "--dir", d, "--id", "0", "--position", "131072")
	failCLI(t, "another archive is active", "archive", "delete", "--dir", d, "--id", "0")
	failCLI(t, "another archive is active", "archive", "verify", "--dir", d, "--truncate")
	mustCLI(t, "archive", "replay", "--dir", d, "--id", "0", "--json") // read-only: fine
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestArchiveCLIRecorded: purge and delete on an archive our recorder
// wrote, with --delay 0.
func TestArchiveCLIRecorded(t *testing.T) {
	dir := t.TempDir()
	a, err := archive.Open(vfs.Default, dir, archive.Options{SegmentLength: 64 << 10, FileSyncLevel: 1, CatalogSyncLevel: 1,
		CatalogCapacity: 4096, MarkErrorBufferLength: 4096})
	if err != nil {
		t.Fatal(err)
	}
	l, err := logbuf.NewAt(64<<10, 4096, 5, 1, 9, 0)
	if err != nil {
		t.Fatal(err)
	}
	pub, img := l.Publication(), l.Image()
	r, err := a.StartRecording(archive.Source{Log: l, Image: img})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 1000)
	msg[2] = 42 // SBE template id 42
	for pub.Position() < 5*64<<10 {
		pub.SetPositionLimit(img.Position() + int64(l.TermWindowLength()))
		if pos, err := pub.Offer(msg); err != nil {
			t.Fatal(err)
		} else if pos < 0 {
			if _, err := r.Record(pub.Position()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := r.Record(pub.Position()); err != nil {
		t.Fatal(err)
	}
	stop := r.Position()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "archive", "verify", "--dir", dir, "--all")
	out := mustCLI(t, "archive", "purge", "--dir", dir, "--id", "0", "--position", "196608", "--delay", "0", "--json")
	var rm removalJSON
	if err := json.Unmarshal([]byte(out), &rm); err != nil {
		t.Fatal(err)
	}
	if rm.OldStart != 0 || rm.NewStart != 196608 || rm.Renamed != 3 || rm.Unlinked != 3 || len(rm.Pending) != 0 {
		t.Fatalf("purge %+v", rm)
	}
	for _, name := range []string{"0-0.rec", "0-65536.rec", "0-131072.rec", "0-0.rec.deleted"} {
		if fileExists(dir, name) {
			t.Fatalf("%s left", name)
		}
	}
	mustCLI(t, "archive", "verify", "--dir", dir, "--all")
	var counts replayCounts
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "replay", "--dir", dir, "--id", "0", "--json")), &counts); err != nil {
		t.Fatal(err)
	}
	if counts.From != 196608 || counts.To != stop || counts.DataFrames == 0 || !hasTemplate(counts, 0, 42, counts.DataFrames) {
		t.Fatalf("replay %+v", counts)
	}
	// Usage errors.
	for _, args := range [][]string{
		{"archive"}, {"archive", "nope", "--dir", dir}, {"archive", "detach", "--dir", dir, "--id", "0"},
		{"archive", "delete", "--dir", dir}, {"archive", "describe"},
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestArchiveReplayShowsPadding: `archive replay` lists the padding frames
// at the term ends of a log that crosses terms, as frames of type PAD, and
// counts them apart from the data frames.
func TestArchiveReplayShowsPadding(t *testing.T) {
	d := buildTwoSetDir(t)
	adir := filepath.Join(d, "archive")
	var counts replayCounts
	if err := json.Unmarshal([]byte(mustCLI(t, "archive", "replay", "--dir", adir, "--id", "0", "--json")), &counts); err != nil {
		t.Fatal(err)
	}
	if counts.PadFrames == 0 || counts.Frames != counts.DataFrames+counts.PadFrames {
		t.Fatalf("replay of a log across terms: %+v; want padding frames counted", counts)
	}
	text := mustCLI(t, "archive", "replay", "--dir", adir, "--id", "0")
	if n := strings.Count(text, " type=PAD "); n != counts.PadFrames {
		t.Fatalf("text lists %d PAD frames, JSON counts %d", n, counts.PadFrames)
	}
}
