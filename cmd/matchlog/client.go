package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/scenario"
	"github.com/matchlog/matchlog/sbe/wiresbe"
)

const clientUsage = `usage: matchlog client --connect ADDR [--client-id N] [--first-seq S] [--timeout D] [--window W] < commands.jsonl
       matchlog client --connect ADDR depth --instrument N [--levels K] [--once] [--json]

Talks to a running node (matchlog node) over TCP.

Without a command it reads engine commands from stdin, JSON lines in the format
of 'matchlog engine run', sends each to the node as it is read, and prints the
events the node releases for them as JSON lines in engine run's format
('{"event":"duplicate","source":S,"seq":Q}' for a command the engine had
applied before), then a summary line {"commands":N,"events":M,"duplicates":D}.
It exits once stdin has ended and every command has its answer (its Release,
or a Duplicate), or with status 1 after --timeout. A bad line stops the
reading as in engine run: the commands before it are answered, then exit 1.

Source and sequence: the node takes a command's source from the session (the
client id) and its sequence from the client, so the "source" and "seq" of the
input lines are not sent. The client id is --client-id, by default the source
of the first command. Sequences are consecutive from --first-seq; by default
(0) from one above the engine's high-water mark for the client id, which the
node reports when the session opens (client.Options.Resume): on a new node a
file numbered from 1 gets the same sequences as in engine run, and a second
run of the same file gets new ones instead of being ignored as duplicates.
Give --first-seq 1 to replay the file's sequences (a command the engine has
already applied is then answered Duplicate and has no events). The "time"
field is not sent either: the node's sequencer stamps each command.

depth subscribes to the top --levels levels a side of an instrument's book
and prints them, then again after every change (a table, or with --json one
JSON object a line: {"instrument":N,"bids":[{"price","qty","count"}],"asks":[...]},
bids best first), until SIGINT; --once prints the levels once and exits. Its
client id defaults to one derived from the process id: a second Connect of a
client id takes its session over.
`

// clientFlags are the flags of `matchlog client` and `client depth`.
type clientFlags struct {
	connect  string
	clientID uint64
	firstSeq uint64
	timeout  time.Duration
	window   int
	// depth
	instrument uint
	levels     uint
	once       bool
	jsonOut    bool
}

func (f *clientFlags) common(fs *flag.FlagSet) {
	fs.StringVar(&f.connect, "connect", f.connect, "the node's address, host:port (required)")
	fs.Uint64Var(&f.clientID, "client-id", f.clientID, "client id: the source of the commands (0: the first command's source; for depth: one from the process id)")
	fs.DurationVar(&f.timeout, "timeout", f.timeout, "give up when the connection, or the answers after the end of stdin (depth --once: the levels), take longer")
}

// runClient is `matchlog client`.
func runClient(args []string, stdout, stderr io.Writer) error {
	f := &clientFlags{timeout: 30 * time.Second, window: 1024}
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.common(fs)
	fs.Uint64Var(&f.firstSeq, "first-seq", 0, "sequence of the first command (0: above the engine's high-water mark for the client id)")
	fs.IntVar(&f.window, "window", f.window, "commands in flight at most (unanswered)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), clientUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	rest := fs.Args()
	if len(rest) > 0 {
		if rest[0] != "depth" {
			fmt.Fprintf(stderr, "matchlog client: unknown command %q\n", rest[0])
			fs.Usage()
			return errUsage
		}
		return runClientDepth(f, rest[1:], stdout, stderr)
	}
	bad := usageErr(fs, stderr, "client")
	switch {
	case f.connect == "":
		return bad("--connect is required")
	case f.timeout <= 0:
		return bad("--timeout must be positive")
	case f.window < 1:
		return bad("--window must be at least 1")
	}
	return clientSend(f, stdout)
}

// clientStdin is where `matchlog client` reads its commands; tests replace
// it.
var clientStdin io.Reader = os.Stdin

// eventWriter serialises the reader goroutine's writes with the main
// goroutine's.
type eventWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
}

func (lw *eventWriter) event(ev *engine.Event) {
	lw.mu.Lock()
	lw.buf = scenario.AppendEvent(lw.buf[:0], ev)
	lw.w.Write(lw.buf)
	lw.mu.Unlock()
}

func (lw *eventWriter) printf(format string, a ...any) {
	lw.mu.Lock()
	fmt.Fprintf(lw.w, format, a...)
	lw.mu.Unlock()
}

func (lw *eventWriter) flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Flush()
}

// clientSend sends the commands of in and prints their events.
func clientSend(f *clientFlags, stdout io.Writer) (err error) {
	in := scenario.NewReader(clientStdin)
	var cmd engine.Command
	first := in.Next(&cmd)
	if first != nil && first != io.EOF {
		return first
	}
	id := f.clientID
	if id == 0 {
		if first == io.EOF || cmd.Source == 0 {
			return errors.New("client: no --client-id and no command with a non-zero source to take it from")
		}
		id = cmd.Source
	}
	out := &eventWriter{w: bufio.NewWriter(stdout)}
	var events, dups atomic.Int64
	var closed closedErr
	opts := client.Options{
		Addr: f.connect, ClientID: id, FirstSeq: f.firstSeq, Resume: f.firstSeq == 0, DialTimeout: f.timeout,
		OnEvent: func(ev *engine.Event) { events.Add(1); out.event(ev) },
		OnDuplicate: func(source, seq uint64) {
			dups.Add(1)
			out.printf("{\"event\":\"duplicate\",\"source\":%d,\"seq\":%d}\n", source, seq)
		},
		OnSessionClosed: func(code wiresbe.CloseCode, reason string) { closed.set("client", code, reason) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	c, err := client.Dial(ctx, opts)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.Close(); err == nil && !errors.Is(cerr, client.ErrClosed) {
			err = cerr
		}
	}()
	commands := 0
	readErr := first
	for readErr == nil {
		for c.Outstanding() >= f.window {
			if err := c.Err(); err != nil {
				return err
			}
			time.Sleep(100 * time.Microsecond)
		}
		if _, err := c.Send(&cmd); err != nil {
			return fmt.Errorf("line %d: %w", in.Line(), err)
		}
		commands++
		readErr = in.Next(&cmd)
	}
	ctx, cancel = context.WithTimeout(context.Background(), f.timeout)
	werr := c.Wait(ctx)
	cancel()
	// The answers are in; the events were written on the reader goroutine
	// before each answer was counted.
	out.printf("{\"commands\":%d,\"events\":%d,\"duplicates\":%d}\n", commands, events.Load(), dups.Load())
	if ferr := out.flush(); ferr != nil {
		return ferr
	}
	switch {
	case werr != nil && closed.get() != nil:
		return closed.get()
	case werr != nil:
		return fmt.Errorf("client: %d of %d commands unanswered: %w", c.Outstanding(), commands, werr)
	case readErr != io.EOF:
		return readErr
	}
	return nil
}

// closedErr keeps the server's SessionClosed, set on the reader goroutine.
type closedErr struct {
	mu  sync.Mutex
	err error
}

func (c *closedErr) set(who string, code wiresbe.CloseCode, reason string) {
	c.mu.Lock()
	c.err = fmt.Errorf("%s: the node closed the session: %v: %s", who, code, reason)
	c.mu.Unlock()
}

func (c *closedErr) get() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// depthJSON is one line of `client depth --json`.
type depthJSON struct {
	Instrument uint         `json:"instrument"`
	Bids       []depthLevel `json:"bids" doc:"best (highest) first"`
	Asks       []depthLevel `json:"asks" doc:"best (lowest) first"`
}

// depthLevel is one price level of `client depth --json`.
type depthLevel struct {
	Price int64 `json:"price"`
	Qty   int64 `json:"qty"`
	Count int64 `json:"count"`
}

// runClientDepth is `matchlog client depth`.
func runClientDepth(f *clientFlags, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("client depth", flag.ContinueOnError)
	f.common(fs)
	fs.UintVar(&f.instrument, "instrument", 0, "instrument id (required)")
	fs.UintVar(&f.levels, "levels", 10, "levels a side (1 to 65535)")
	fs.BoolVar(&f.once, "once", false, "print the levels once and exit")
	fs.BoolVar(&f.jsonOut, "json", false, "one JSON object a line instead of a table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog client --connect ADDR depth --instrument N [--levels K] [--once] [--json]\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "client depth")
	switch {
	case f.connect == "":
		return bad("--connect is required")
	case !flagGiven(fs, "instrument") || f.instrument > 1<<32-1:
		return bad("--instrument is required (an instrument id, 0 to 4294967295)")
	case f.levels < 1 || f.levels > 65535:
		return bad("--levels %d: want 1 to 65535", f.levels)
	case f.timeout <= 0:
		return bad("--timeout must be positive")
	}
	id := f.clientID
	if id == 0 {
		id = 1<<62 | uint64(os.Getpid())
	}
	var mu sync.Mutex
	book := map[engine.Side]map[int64]depthLevel{engine.Buy: {}, engine.Sell: {}}
	updates := make(chan struct{}, 1)
	snapshotDone := make(chan struct{})
	var once sync.Once
	var closed closedErr
	notify := func() {
		select {
		case updates <- struct{}{}:
		default:
		}
	}
	opts := client.Options{Addr: f.connect, ClientID: id, DialTimeout: f.timeout, Reconnect: !f.once,
		OnDepth: func(ev *engine.Event) {
			if ev.Instrument != uint32(f.instrument) {
				return
			}
			mu.Lock()
			if ev.Count == 0 {
				delete(book[ev.Side], ev.Price)
			} else {
				book[ev.Side][ev.Price] = depthLevel{ev.Price, ev.Qty, ev.Count}
			}
			mu.Unlock()
			notify()
		},
		OnDepthSnapshotEnd: func(instrument uint32) {
			if instrument == uint32(f.instrument) {
				once.Do(func() { close(snapshotDone) })
			}
		},
		OnSessionClosed: func(code wiresbe.CloseCode, reason string) {
			closed.set("client depth", code, reason)
			notify()
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	c, err := client.Dial(ctx, opts)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SubscribeDepth(uint32(f.instrument), uint16(f.levels)); err != nil {
		return err
	}
	select {
	case <-snapshotDone:
	case <-time.After(f.timeout):
		return fmt.Errorf("client depth: no levels of instrument %d within %s", f.instrument, f.timeout)
	}
	print := func() error {
		mu.Lock()
		bids, asks := sortedLevels(book[engine.Buy], true, int(f.levels)), sortedLevels(book[engine.Sell], false, int(f.levels))
		mu.Unlock()
		if f.jsonOut {
			return writeJSONLine(stdout, depthJSON{f.instrument, bids, asks})
		}
		return depthTable(stdout, f.instrument, bids, asks)
	}
	if err := print(); err != nil || f.once {
		return err
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		select {
		case <-updates:
			if err := c.Err(); err != nil {
				return err
			}
			if err := closed.get(); err != nil && !opts.Reconnect {
				return err
			}
			if err := print(); err != nil {
				return err
			}
		case <-sig.Done():
			return nil
		}
	}
}

func sortedLevels(m map[int64]depthLevel, bids bool, k int) []depthLevel {
	out := make([]depthLevel, 0, len(m))
	for _, l := range m {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b depthLevel) int {
		if bids {
			return cmp.Compare(b.Price, a.Price)
		}
		return cmp.Compare(a.Price, b.Price)
	})
	return out[:min(k, len(out))]
}

// depthTable prints bids and asks side by side, best first.
func depthTable(w io.Writer, instrument uint, bids, asks []depthLevel) error {
	fmt.Fprintf(w, "instrument %d\n", instrument)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "count\tbid qty\tbid\task\task qty\tcount\t\n")
	for i := range max(len(bids), len(asks)) {
		var b, a [3]string
		if i < len(bids) {
			b = [3]string{fmt.Sprint(bids[i].Count), fmt.Sprint(bids[i].Qty), fmt.Sprint(bids[i].Price)}
		}
		if i < len(asks) {
			a = [3]string{fmt.Sprint(asks[i].Price), fmt.Sprint(asks[i].Qty), fmt.Sprint(asks[i].Count)}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", b[0], b[1], b[2], a[0], a[1], a[2])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
