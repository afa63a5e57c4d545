package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// echo is an [Applier] that records the commands it gets and answers each
// with accepted and release; its state hash counts the commands.
type echo struct {
	got []engine.Command
	evs []engine.Event
}

func (e *echo) Apply(c *engine.Command) []engine.Event {
	e.got = append(e.got, *c)
	e.evs = append(e.evs[:0],
		engine.Event{Kind: engine.EvAccepted, Source: c.Source, Seq: c.Seq, Instrument: c.Instrument, OrderID: c.OrderID},
		engine.Event{Kind: engine.EvRelease, Source: c.Source, Seq: c.Seq, Instrument: c.Instrument})
	return e.evs
}

func (e *echo) StateHash() uint64 { return uint64(len(e.got)) }

func cancelLine(seq int) string {
	return fmt.Sprintf(`{"cmd":"cancel","source":1,"seq":%d,"time":1,"instrument":2,"order_id":%d}`, seq, 10+seq)
}

func TestRun(t *testing.T) {
	in := cancelLine(1) + "\n\n" + cancelLine(2) + "\n"
	var out bytes.Buffer
	var e echo
	s, err := Run(strings.NewReader(in), &out, &e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"accepted","source":1,"seq":1,"instrument":2,"order_id":11}
{"event":"release","source":1,"seq":1,"instrument":2}
{"event":"accepted","source":1,"seq":2,"instrument":2,"order_id":12}
{"event":"release","source":1,"seq":2,"instrument":2}
{"state_hash":"0x0000000000000002","commands":2,"events":4}
`
	if out.String() != want {
		t.Errorf("got\n%swant\n%s", out.String(), want)
	}
	if s != (Summary{Commands: 2, Events: 4, StateHash: 2}) {
		t.Errorf("summary %+v", s)
	}
}

// TestRunStopsAtBadLine: the events of the lines before a bad line are
// written, nothing after it is applied, and there is no summary line.
func TestRunStopsAtBadLine(t *testing.T) {
	for _, bad := range []string{
		`{"cmd":"cancel","source":1,"seq":3,"time":1,"instrument":2,"order_id":1`, // malformed
		`{"cmd":"cancel_all","source":1,"seq":3,"time":1}`,                        // unknown cmd
		`{"cmd":"new_order","source":1,"seq":3,"time":1,"instrument":2,"order_id":1,"side":"up","price":1,"qty":1}`,
		`{"cmd":"cancel","source":1,"seq":3,"time":1,"instrument":2,"order_id":1,"why":"x"}`,
	} {
		in := cancelLine(1) + "\n" + cancelLine(2) + "\n" + bad + "\n" + cancelLine(4) + "\n"
		var out bytes.Buffer
		var e echo
		s, err := Run(strings.NewReader(in), &out, &e)
		var le *Error
		if !errors.As(err, &le) || le.Line != 3 {
			t.Errorf("%s: err %v, want an *Error on line 3", bad, err)
		}
		if len(e.got) != 2 || s.Commands != 2 || s.Events != 4 {
			t.Errorf("%s: applied %d commands (summary %+v), want 2", bad, len(e.got), s)
		}
		if lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); len(lines) != 4 ||
			!strings.Contains(lines[3], `"release","source":1,"seq":2`) {
			t.Errorf("%s: wrote\n%s", bad, out.String())
		}
	}
}

// TestRunFlushes: output longer than Run's buffer arrives complete and in
// order.
func TestRunFlushes(t *testing.T) {
	var in strings.Builder
	const n = 3000
	for i := 1; i <= n; i++ {
		in.WriteString(cancelLine(i) + "\n")
	}
	var out bytes.Buffer
	var e echo
	if _, err := Run(strings.NewReader(in.String()), &out, &e); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 2*n+2 || lines[2*n] != `{"state_hash":"0x0000000000000bb8","commands":3000,"events":6000}` {
		t.Fatalf("%d lines, summary %q", len(lines), lines[len(lines)-2])
	}
	for i := 1; i <= n; i++ {
		if want := fmt.Sprintf(`{"event":"release","source":1,"seq":%d,`, i); !strings.HasPrefix(lines[2*i-1], want) {
			t.Fatalf("line %d: %s, want %s…", 2*i, lines[2*i-1], want)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

func TestRunWriteError(t *testing.T) {
	var e echo
	_, err := Run(strings.NewReader(cancelLine(1)+"\n"), failingWriter{}, &e)
	if err == nil || !strings.Contains(err.Error(), "pipe closed") {
		t.Fatalf("Run = %v, want the write error", err)
	}
}

// TestRunEngine runs a small scenario through the real engine.
func TestRunEngine(t *testing.T) {
	in := `{"cmd":"define_instrument","source":1,"seq":1,"time":1000,"instrument":1,"tick":1,"lot":1,"min_price":1,"max_price":1000000}
{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"account":7,"side":"buy","price":100,"qty":5}
{"cmd":"new_order","source":1,"seq":3,"time":1002,"instrument":1,"order_id":11,"account":8,"side":"sell","type":"limit","tif":"ioc","price":100,"qty":2}
{"cmd":"new_order","source":1,"seq":3,"time":1002,"instrument":1,"order_id":12,"account":8,"side":"sell","price":100,"qty":2}
{"cmd":"cancel","source":1,"seq":4,"time":1003,"instrument":1,"order_id":99}
`
	var out bytes.Buffer
	e := engine.New()
	s, err := Run(strings.NewReader(in), &out, e)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commands != 5 || s.StateHash != e.StateHash() {
		t.Errorf("summary %+v, engine hash %#x", s, e.StateHash())
	}
	got := out.String()
	for _, want := range []string{
		`{"event":"accepted","source":1,"seq":2,"instrument":1,"order_id":10}`,
		`{"event":"trade","instrument":1,"order_id":11,"maker":10,"side":"sell","price":100,"qty":2,"remaining":0,"maker_remaining":3}`,
		`{"event":"rejected","source":1,"seq":4,"instrument":1,"order_id":99,"reason":"unknown_order"}`,
		fmt.Sprintf(`{"state_hash":"0x%016x","commands":5,"events":%d}`, s.StateHash, s.Events),
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"order_id":12`) {
		t.Errorf("a command at the source's high-water mark was applied:\n%s", got)
	}
}
