package scenario

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

func parse(t *testing.T, line string) engine.Command {
	t.Helper()
	var c engine.Command
	if err := ParseCommand([]byte(line), &c); err != nil {
		t.Fatalf("ParseCommand(%s): %v", line, err)
	}
	return c
}

func TestParseExamples(t *testing.T) {
	for _, tc := range []struct {
		line string
		want engine.Command
	}{
		{`{"cmd":"define_instrument","source":1,"seq":1,"time":1000,"instrument":1,"tick":1,"lot":1,"min_price":1,"max_price":1000000}`,
			engine.Command{Kind: engine.CmdDefineInstrument, Source: 1, Seq: 1, Time: 1000, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1000000}},
		{`{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"account":7,"side":"buy","type":"limit","tif":"gtc","price":100,"qty":5,"post_only":false,"stp":"cancel_newest"}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 2, Time: 1001, Instrument: 1, OrderID: 10, Account: 7,
				Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5, STP: engine.STPCancelNewest}},
		// Defaults: type limit, tif gtc, stp none.
		{`{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"side":"sell","price":100,"qty":5}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 2, Time: 1001, Instrument: 1, OrderID: 10,
				Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 100, Qty: 5}},
		// Market and stop orders default to ioc; stops to ref last.
		{`{"cmd":"new_order","source":1,"seq":3,"time":5,"instrument":2,"order_id":11,"side":"buy","type":"market","qty":5}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 3, Time: 5, Instrument: 2, OrderID: 11,
				Side: engine.Buy, Type: engine.Market, TIF: engine.IOC, Qty: 5}},
		{`{"cmd":"new_order","source":1,"seq":3,"time":5,"instrument":2,"order_id":11,"side":"buy","type":"stop","stop":90,"qty":5}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 3, Time: 5, Instrument: 2, OrderID: 11,
				Side: engine.Buy, Type: engine.Stop, TIF: engine.IOC, Ref: engine.RefLastTrade, Stop: 90, Qty: 5}},
		{`{"cmd":"new_order","source":1,"seq":3,"time":5,"instrument":2,"order_id":11,"side":"sell","type":"stop_limit","stop":90,"ref":"mark","price":89,"qty":5,"post_only":true,"stp":"decrement"}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 3, Time: 5, Instrument: 2, OrderID: 11,
				Side: engine.Sell, Type: engine.StopLimit, TIF: engine.GTC, Ref: engine.RefMark, Stop: 90, Price: 89, Qty: 5,
				Post: true, STP: engine.STPDecrement}},
		// Numeric codes reach the engine as they are, so scenarios can test its rejects.
		{`{"cmd":"new_order","source":1,"seq":3,"time":5,"instrument":2,"order_id":11,"side":0,"type":9,"tif":7,"stp":200,"qty":5}`,
			engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 3, Time: 5, Instrument: 2, OrderID: 11,
				Side: 0, Type: 9, TIF: 7, STP: 200, Qty: 5}},
		{`{"cmd":"cancel","source":2,"seq":9,"time":7,"instrument":1,"order_id":10}`,
			engine.Command{Kind: engine.CmdCancel, Source: 2, Seq: 9, Time: 7, Instrument: 1, OrderID: 10}},
		{`{"cmd":"modify","source":2,"seq":9,"time":7,"instrument":1,"order_id":10,"price":101,"qty":3}`,
			engine.Command{Kind: engine.CmdModify, Source: 2, Seq: 9, Time: 7, Instrument: 1, OrderID: 10, Price: 101, Qty: 3}},
		{`{"cmd":"mass_cancel","source":2,"seq":9,"time":7,"account":7}`,
			engine.Command{Kind: engine.CmdMassCancel, Source: 2, Seq: 9, Time: 7, Account: 7}},
		{`{"cmd":"mark_price","source":2,"seq":9,"time":-7,"instrument":1,"price":-100}`,
			engine.Command{Kind: engine.CmdMarkPrice, Source: 2, Seq: 9, Time: -7, Instrument: 1, Price: -100}},
		// Whitespace, any field order, escapes, extreme values.
		{" \t{ \"seq\" : 18446744073709551615 , \"cmd\":\"m\\u0061rk_pr\\u0069ce\",\"source\":0,\"time\":-9223372036854775808," +
			"\"instrument\":4294967295,\"price\":9223372036854775807 } \r",
			engine.Command{Kind: engine.CmdMarkPrice, Source: 0, Seq: math.MaxUint64, Time: math.MinInt64,
				Instrument: math.MaxUint32, Price: math.MaxInt64}},
	} {
		if got := parse(t, tc.line); got != tc.want {
			t.Errorf("ParseCommand(%s)\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

// randomCommand returns a command with only the fields its kind uses set,
// enums mostly valid and sometimes any code.
func randomCommand(r *rand.Rand) engine.Command {
	u := func() uint64 {
		if r.IntN(8) == 0 {
			return r.Uint64()
		}
		return r.Uint64N(1000)
	}
	i := func() int64 {
		if r.IntN(8) == 0 {
			return int64(r.Uint64())
		}
		return r.Int64N(2000) - 100
	}
	code := func(e *enum) uint8 {
		if r.IntN(10) == 0 {
			return uint8(r.UintN(256))
		}
		return e.codes[r.IntN(len(e.codes))]
	}
	c := engine.Command{
		Kind:       engine.CommandKind(cmdNames.codes[r.IntN(len(cmdNames.codes))]),
		Source:     u(),
		Seq:        u(),
		Time:       i(),
		Instrument: uint32(u()),
	}
	switch c.Kind {
	case engine.CmdDefineInstrument:
		c.Tick, c.Lot, c.MinPrice, c.MaxPrice = i(), i(), i(), i()
	case engine.CmdNewOrder:
		c.OrderID, c.Account = u(), u()
		c.Side = engine.Side(code(sideNames))
		c.Type = engine.OrderType(code(typeNames))
		c.TIF = engine.TimeInForce(code(tifNames))
		c.STP = engine.STP(code(stpNames))
		c.Post = r.IntN(2) == 0
		c.Qty = i()
		allowed, _ := orderFields(c.Type)
		if allowed&m(fPrice) != 0 {
			c.Price = i()
		}
		if allowed&m(fStop) != 0 {
			c.Stop = i()
			c.Ref = engine.TriggerRef(code(refNames))
		}
	case engine.CmdCancel:
		c.OrderID = u()
	case engine.CmdModify:
		c.OrderID, c.Price, c.Qty = u(), i(), i()
	case engine.CmdMassCancel:
		c.Account = u()
	case engine.CmdMarkPrice:
		c.Price = i()
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var line, again []byte
	for range 20000 {
		want := randomCommand(r)
		line = AppendCommand(line[:0], &want)
		var got engine.Command
		if err := ParseCommand(line[:len(line)-1], &got); err != nil {
			t.Fatalf("ParseCommand(%s): %v", line, err)
		}
		if got != want {
			t.Fatalf("round trip of %s\n got %+v\nwant %+v", line, got, want)
		}
		if again = AppendCommand(again[:0], &got); string(again) != string(line) {
			t.Fatalf("re-encoded\n%s\nas\n%s", line, again)
		}
	}
}

// TestRoundTripReader sends many commands through one Reader, with the
// line endings and blank lines files have.
func TestRoundTripReader(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var file []byte
	var want []engine.Command
	for k := range 5000 {
		c := randomCommand(r)
		want = append(want, c)
		file = AppendCommand(file, &c)
		switch k % 7 {
		case 1:
			file = append(file[:len(file)-1], "\r\n"...)
		case 2:
			file = append(file, "\n  \t\n"...)
		}
	}
	file = file[:len(file)-1] // no newline after the last line
	rd := NewReader(strings.NewReader(string(file)))
	for k, w := range want {
		var c engine.Command
		if err := rd.Next(&c); err != nil {
			t.Fatalf("command %d: %v", k, err)
		}
		if c != w {
			t.Fatalf("command %d (line %d)\n got %+v\nwant %+v", k, rd.Line(), c, w)
		}
	}
	var c engine.Command
	if err := rd.Next(&c); err != io.EOF {
		t.Fatalf("after the last command: %v, want io.EOF", err)
	}
}

func TestParseErrors(t *testing.T) {
	const order = `"cmd":"new_order","source":1,"seq":2,"time":3,"instrument":1,"order_id":10,"side":"buy","price":100,"qty":5`
	for _, tc := range []struct {
		line, field, msg string
	}{
		// Malformed JSON.
		{`not json`, "", "not a JSON object"},
		{`"cancel"`, "", "not a JSON object"},
		{`{"cmd":"cancel"`, "", "malformed JSON: line ends early"},
		{`{` + order + `,}`, "", "malformed JSON"},
		{`{` + order + `}}`, "", "malformed JSON"},
		{`{` + order + `} {}`, "", "malformed JSON"},
		{`[` + order + `]`, "", "not a JSON object"},
		{`{"cmd" "cancel"}`, "", "malformed JSON"},
		{`{"cmd":"cancel` + "\t" + `"}`, "", "control character"},
		{`{"cmd":"can\xcel"}`, "", "malformed JSON"},
		{`{"cmd":"can\u00"}`, "", "malformed JSON"},
		{`{"qty":01}`, "", "malformed JSON"},
		{`{"qty":-}`, "", "malformed JSON"},
		{`{"qty":tru}`, "", "malformed JSON"},
		{`{"post_only":nul}`, "", "malformed JSON"},
		{`{cmd:"cancel"}`, "", "malformed JSON"},
		// Unknown command or field, bad enum value.
		{`{"cmd":"buy_everything","source":1,"seq":1,"time":1}`, "cmd", `unknown command "buy_everything"`},
		{`{"cmd":7,"source":1,"seq":1,"time":1}`, "cmd", "want a string, got a number"},
		{`{` + order + `,"colour":"red"}`, "colour", "unknown field"},
		{`{` + order + `,"Side":"buy"}`, "Side", "unknown field"},
		{`{"cmd":"new_order","side":"bye"}`, "side", `unknown value "bye" (want buy|sell)`},
		{`{"cmd":"new_order","type":"iceberg"}`, "type", `unknown value "iceberg"`},
		{`{"cmd":"new_order","tif":"day"}`, "tif", `unknown value "day" (want gtc|ioc|fok)`},
		{`{"cmd":"new_order","stp":"always"}`, "stp", `unknown value "always"`},
		{`{"cmd":"new_order","ref":"index"}`, "ref", `unknown value "index" (want last|mark)`},
		{`{"cmd":"new_order","side":256}`, "side", "256 is out of range"},
		// Wrong types and ranges.
		{`{"qty":"5"}`, "qty", "want an integer, got a string"},
		{`{"qty":5.0}`, "qty", "want an integer, got 5.0"},
		{`{"qty":5e2}`, "qty", "want an integer, got 5e2"},
		{`{"qty":null}`, "qty", "want an integer, got null"},
		{`{"qty":[5]}`, "qty", "want an integer, got an array"},
		{`{"qty":{}}`, "qty", "want an integer, got an object"},
		{`{"qty":true}`, "qty", "want an integer, got a boolean"},
		{`{"qty":9223372036854775808}`, "qty", "9223372036854775808 is out of range"},
		{`{"qty":-9223372036854775809}`, "qty", "out of range"},
		{`{"qty":99999999999999999999999}`, "qty", "out of range"},
		{`{"seq":-1}`, "seq", "-1 is out of range"},
		{`{"seq":18446744073709551616}`, "seq", "out of range"},
		{`{"instrument":4294967296}`, "instrument", "4294967296 is out of range"},
		{`{"post_only":1}`, "post_only", "want a boolean, got a number"},
		{`{"side":true}`, "side", "want a string, got a boolean"},
		// Missing, repeated, unused fields.
		{`{}`, "cmd", "missing"},
		{`{"source":1,"seq":1,"time":1}`, "cmd", "missing"},
		{`{"cmd":"cancel","source":1,"time":1,"instrument":1,"order_id":1}`, "seq", "missing"},
		{`{"cmd":"cancel","source":1,"seq":1,"instrument":1,"order_id":1}`, "time", "missing"},
		{`{"cmd":"cancel","seq":1,"time":1,"instrument":1,"order_id":1}`, "source", "missing"},
		{`{"cmd":"cancel","source":1,"seq":1,"time":1,"instrument":1}`, "order_id", "missing"},
		{`{"cmd":"cancel","source":1,"seq":1,"time":1,"order_id":1}`, "instrument", "missing"},
		{`{"cmd":"new_order","source":1,"seq":2,"time":3,"instrument":1,"order_id":10,"price":100,"qty":5}`, "side", "missing"},
		{`{"cmd":"new_order","source":1,"seq":2,"time":3,"instrument":1,"order_id":10,"side":"buy","qty":5}`, "price", "missing"},
		{`{"cmd":"new_order","source":1,"seq":2,"time":3,"instrument":1,"order_id":10,"side":"buy","type":"stop","qty":5}`, "stop", "missing"},
		{`{"cmd":"modify","source":1,"seq":2,"time":3,"instrument":1,"order_id":10,"qty":5}`, "price", "missing"},
		{`{"cmd":"define_instrument","source":1,"seq":1,"time":1,"instrument":1,"tick":1,"lot":1,"min_price":1}`, "max_price", "missing"},
		{`{"cmd":"mark_price","source":1,"seq":1,"time":1,"instrument":1}`, "price", "missing"},
		{`{` + order + `,"qty":5}`, "qty", "repeated"},
		{`{` + order + `,"stop":90}`, "stop", "not used by limit orders"},
		{`{` + order + `,"type":"market"}`, "price", "not used by market orders"},
		{`{` + order + `,"ref":"last"}`, "ref", "not used by limit orders"},
		{`{` + order + `,"tick":1}`, "tick", "not used by new_order"},
		{`{"cmd":"cancel","source":1,"seq":1,"time":1,"instrument":1,"order_id":1,"side":"buy"}`, "side", "not used by cancel"},
		{`{"cmd":"mass_cancel","source":1,"seq":1,"time":1,"order_id":1}`, "order_id", "not used by mass_cancel"},
	} {
		var c engine.Command
		err := ParseCommand([]byte(tc.line), &c)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("ParseCommand(%s) = %v, want an *Error", tc.line, err)
			continue
		}
		if e.Field != tc.field || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("ParseCommand(%s) = %q, want field %q and %q", tc.line, err, tc.field, tc.msg)
		}

		// Through a Reader the error names the line; nothing after it is read.
		file := `{"cmd":"cancel","source":1,"seq":1,"time":1,"instrument":1,"order_id":1}` + "\n\n" + tc.line + "\n" +
			`{"cmd":"cancel","source":1,"seq":2,"time":1,"instrument":1,"order_id":1}` + "\n"
		rd := NewReader(strings.NewReader(file))
		if err := rd.Next(&c); err != nil {
			t.Fatal(err)
		}
		err = rd.Next(&c)
		if !errors.As(err, &e) || e.Line != 3 || !strings.HasPrefix(err.Error(), "line 3: ") {
			t.Errorf("Reader on %s: %v, want an *Error for line 3", tc.line, err)
		}
		if tc.field != "" && !strings.Contains(err.Error(), `field "`+tc.field+`": `) {
			t.Errorf("Reader on %s: %v does not name field %q", tc.line, err, tc.field)
		}
		if again := rd.Next(&c); again != err {
			t.Errorf("Reader went on after an error: %v", again)
		}
	}
}

func TestReaderLongLine(t *testing.T) {
	pad := strings.Repeat(" ", 100<<10) // longer than the read buffer
	file := "\n" + `{"cmd":"mark_price",` + pad + `"source":1,"seq":1,"time":1,"instrument":1,"price":5}` + "\n" +
		strings.Repeat("x", MaxLineBytes+1) + "\n"
	rd := NewReader(strings.NewReader(file))
	var c engine.Command
	if err := rd.Next(&c); err != nil || c.Price != 5 || rd.Line() != 2 {
		t.Fatalf("long line: %v, %+v, line %d", err, c, rd.Line())
	}
	err := rd.Next(&c)
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: longer than") {
		t.Fatalf("too long a line: %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReaderIOError(t *testing.T) {
	var c engine.Command
	err := NewReader(failingReader{}).Next(&c)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Next = %v", err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	line := []byte(`{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"account":7,"side":"buy","type":"limit","tif":"gtc","price":100,"qty":5,"post_only":false,"stp":"cancel_newest"}`)
	escaped := []byte(`{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"side":"b\u0075y","price":100,"qty":5}`)
	var p parser
	var c engine.Command
	for _, l := range [][]byte{line, escaped} {
		if n := testing.AllocsPerRun(100, func() {
			if err := p.parse(l, &c); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("parse %s: %v allocs, want 0", l, n)
		}
	}
}
