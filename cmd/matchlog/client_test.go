package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/scenario"
	"github.com/matchlog/matchlog/server"
)

// startTestServer serves a node in a new directory on 127.0.0.1 until the
// test ends, and returns its address.
func startTestServer(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Options{Addr: "127.0.0.1:0",
		Node: cluster.Options{Dir: filepath.Join(t.TempDir(), "node"), TermLength: 64 * 1024, SegmentLength: 256 * 1024, FileSyncLevel: 0}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return srv.Addr().String()
}

// clientInput is a seeded random command stream as JSON lines, all of
// source 1 with sequences 1, 2, 3, ... (the generator's resends and other
// sources renumbered: the client assigns its own source and sequences).
func clientInput(t *testing.T, n int) string {
	t.Helper()
	gen := enginetest.NewGen(3, enginetest.GenConfig{})
	var b []byte
	var c engine.Command
	for i := 0; i < n; i++ {
		gen.Next(&c)
		for c.Kind < engine.CmdDefineInstrument || c.Kind > engine.CmdMarkPrice {
			gen.Next(&c) // kinds the wire protocol does not carry
		}
		c.Source, c.Seq = 1, uint64(i+1)
		b = scenario.AppendCommand(b, &c)
	}
	return string(b)
}

func runClientCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	old := clientStdin
	clientStdin = strings.NewReader(stdin)
	defer func() { clientStdin = old }()
	return runCLI(t, append([]string{"client"}, args...)...)
}

// eventLines drops the summary line that ends an event stream.
func eventLines(t *testing.T, out string) string {
	t.Helper()
	i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
	if i < 0 || !strings.HasPrefix(out[i+1:], `{"`) || strings.HasPrefix(out[i+1:], `{"event"`) {
		t.Fatalf("no summary line at the end of\n%s", out)
	}
	return out[:i+1]
}

// TestClientVerb sends a command stream to a node through `matchlog
// client` and compares the events with `engine run` on the same input:
// equal, source and sequence included, since a new node's high-water mark
// for client 1 is 0 and the client numbers from 1 as the file does. A
// second run of the same input gets the next sequences (the client resumes
// above the high-water mark) and so is applied again, not ignored; with
// --first-seq 1 every command is answered Duplicate. Then depth --once
// shows the book engine run leaves.
func TestClientVerb(t *testing.T) {
	addr := startTestServer(t)
	input := clientInput(t, 400)
	in := filepath.Join(t.TempDir(), "commands.jsonl")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	code, want, errb := runCLI(t, "engine", "run", "--in", in)
	if code != 0 {
		t.Fatalf("engine run: exit %d, %s", code, errb)
	}
	code, got, errb := runClientCLI(t, input, "--connect", addr, "--timeout", "20s")
	if code != 0 || errb != "" {
		t.Fatalf("client: exit %d, stderr %q\n%s", code, errb, got)
	}
	if g, w := eventLines(t, got), eventLines(t, want); g != w {
		t.Fatalf("client events differ from engine run's:\n%s", firstDiff(g, w))
	}
	if !strings.HasSuffix(got, `{"commands":400,"events":`+eventCount(want)+`,"duplicates":0}`+"\n") {
		t.Errorf("summary: %s", got[strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n")+1:])
	}

	// Replayed with the file's own sequences: all duplicates, no events.
	code, got, errb = runClientCLI(t, input, "--connect", addr, "--first-seq", "1")
	if code != 0 || errb != "" || strings.Count(got, `{"event":"duplicate","source":1,`) != 400 ||
		!strings.HasSuffix(got, `{"commands":400,"events":0,"duplicates":400}`+"\n") {
		t.Fatalf("--first-seq 1: exit %d, stderr %q\n%.500s", code, errb, got)
	}

	// depth --once: the levels of each instrument equal the depth engine
	// run's book ends with.
	eng := engine.New()
	if _, err := scenario.Run(strings.NewReader(input), discard{}, eng); err != nil {
		t.Fatal(err)
	}
	const inst = 8 // the stream's instrument with a book on both sides at the end
	code, got, errb = runClientCLI(t, "", "--connect", addr, "depth", "--instrument", "8", "--levels", "3", "--once", "--json")
	if code != 0 || errb != "" {
		t.Fatalf("depth: exit %d, stderr %q\n%s", code, errb, got)
	}
	w := wantDepthLine(eng, inst, 3)
	if got != w || strings.Count(w, `"price"`) != 6 {
		t.Errorf("depth --once --json:\n%s\nwant (3 levels a side)\n%s", got, w)
	}
	code, got, _ = runClientCLI(t, "", "--connect", addr, "depth", "--instrument", "8", "--levels", "3", "--once")
	bid, ask := eng.Depth(inst, engine.Buy, 1, nil)[0], eng.Depth(inst, engine.Sell, 1, nil)[0]
	if code != 0 || !strings.HasPrefix(got, "instrument 8\n") || strings.Count(got, "\n") != 6 ||
		!strings.Contains(got, fmt.Sprintf("%d  %d  %d", bid.Qty, bid.Price, ask.Price)) {
		t.Errorf("depth --once table: exit %d\n%s", code, got)
	}

	// A bad line: the commands before it are answered, exit 1 naming it.
	bad := "{\"cmd\":\"cancel\",\"source\":1,\"seq\":1,\"time\":1,\"instrument\":1,\"order_id\":1}\n{\"cmd\":\"frob\"}\n"
	code, got, errb = runClientCLI(t, bad, "--connect", addr)
	if code != 1 || !strings.Contains(errb, "line 2") || !strings.Contains(got, `{"event":"release","source":1,`) {
		t.Errorf("bad line: exit %d, stderr %q\n%s", code, errb, got)
	}
	// Usage errors.
	for _, args := range [][]string{{}, {"--connect", addr, "frob"}, {"--connect", addr, "depth"}, {"depth", "--instrument", "1"},
		{"--connect", addr, "depth", "--instrument", "1", "--levels", "0"}} {
		if code, _, errb := runClientCLI(t, "", args...); code != 2 || errb == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2", args, code, errb)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func eventCount(out string) string {
	i := strings.Index(out, `"events":`)
	j := strings.Index(out[i:], "}")
	return out[i+len(`"events":`) : i+j]
}

// wantDepthLine is the line depth --json prints for an engine's book.
func wantDepthLine(eng *engine.Engine, instrument uint32, k int) string {
	b := fmt.Sprintf(`{"instrument":%d`, instrument)
	for _, side := range []engine.Side{engine.Buy, engine.Sell} {
		name := map[engine.Side]string{engine.Buy: "bids", engine.Sell: "asks"}[side]
		var parts []string
		for _, l := range eng.Depth(instrument, side, k, nil) {
			parts = append(parts, fmt.Sprintf(`{"price":%d,"qty":%d,"count":%d}`, l.Price, l.Qty, l.Count))
		}
		b += fmt.Sprintf(`,"%s":[%s]`, name, strings.Join(parts, ","))
	}
	return b + "}\n"
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, x, y)
		}
	}
	return ""
}
