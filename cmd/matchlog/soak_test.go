//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSoak runs `matchlog soak` for a few seconds with a kill every
// 300 ms (the node child is this test binary, as in TestKill9): it must
// stop by itself with status 0, having killed and checked the node in
// several rounds, print running tally lines with kills by kind, and end
// with every command answered; the node directory it leaves is there.
// It refuses a directory that is not empty, and leaves that directory
// as it was.
func TestSoak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "soak")
	var out, errOut strings.Builder
	code := run([]string{"soak", "--dir", dir, "--duration", "6s", "--kill-every", "300ms", "--tally-every", "1s"}, &out, &errOut)
	t.Logf("stdout:\n%s", out.String())
	if code != 0 {
		t.Fatalf("exit status %d; stderr: %s", code, errOut.String())
	}
	text := out.String()
	tally := regexp.MustCompile(`(?m)^soak: (\d+) rounds in \S+ \([\d.]+ a minute; [\d.]+ since the last line\); kills: (.*); (\d+) commands answered, (\d+) as Duplicate; log (\d+) bytes$`)
	lines := tally.FindAllStringSubmatch(text, -1)
	if len(lines) < 2 {
		t.Fatalf("want at least 2 running tally lines, got %d", len(lines))
	}
	lastRounds, _ := strconv.Atoi(lines[len(lines)-1][1])
	firstRounds, _ := strconv.Atoi(lines[0][1])
	if lastRounds <= firstRounds {
		t.Errorf("the tally did not advance: %d rounds, then %d", firstRounds, lastRounds)
	}
	if !strings.Contains(lines[len(lines)-1][2], "log write") {
		t.Errorf("no kill during a log write in the tally: %q", lines[len(lines)-1][2])
	}
	if n, _ := strconv.Atoi(lines[len(lines)-1][3]); n == 0 {
		t.Errorf("no command answered")
	}
	summary := regexp.MustCompile(`(?m)^soak: (\d+) kills map\[.*\]; (\d+) commands, all answered \(\d+ as Duplicate after a resend\)`).FindStringSubmatch(text)
	if summary == nil {
		t.Fatalf("no summary line")
	}
	if kills, _ := strconv.Atoi(summary[1]); kills < lastRounds || kills < 3 {
		t.Errorf("%d kills in the summary, %d rounds in the last tally line", kills, lastRounds)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster")); err != nil {
		t.Errorf("the node directory is not left: %v", err)
	}

	// A directory with something in it is refused and left as it was.
	busy := t.TempDir()
	keep := filepath.Join(busy, "mine.txt")
	if err := os.WriteFile(keep, []byte("not the soak's"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"soak", "--dir", busy, "--duration", "1s"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is not empty") {
		t.Errorf("soak on a directory with a file: status %d, stderr %q; want 1 and a refusal", code, errOut.String())
	}
	if names, _ := os.ReadDir(busy); len(names) != 1 {
		t.Errorf("the refused directory holds %d entries, want 1", len(names))
	}
	if b, _ := os.ReadFile(keep); string(b) != "not the soak's" {
		t.Errorf("the refused directory's file changed: %q", b)
	}
}
