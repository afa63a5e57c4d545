package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// FuzzParseCommand checks the hand-written decoder against encoding/json:
// it calls malformed only what is not JSON, accepts only JSON, reads the
// same values encoding/json reads, and what it accepts re-encodes to a line
// that decodes to the same command.
func FuzzParseCommand(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		c := randomCommand(r)
		f.Add(bytes.TrimSuffix(AppendCommand(nil, &c), []byte("\n")))
	}
	for _, s := range []string{
		`{"cmd":"m\u0061rk_price","source":1,"seq":1,"time":1,"instrument":1,"price":5}`,
		` { "cmd" : "cancel" , "source":-0 } `, `{"qty":1e3}`, `{"qty":01}`, `{"a":[1,{"b":2}]}`, `{}`, `[]`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var c engine.Command
		err := ParseCommand(line, &c)
		valid := json.Valid(line)
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Line != 0) {
			t.Fatalf("error %v is not an *Error without a line", err)
		}
		if err != nil && strings.HasPrefix(e.Msg, "malformed JSON") && valid {
			t.Fatalf("valid JSON called malformed: %v", err)
		}
		if err != nil {
			return
		}
		if !valid {
			t.Fatalf("accepted invalid JSON")
		}
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			t.Fatalf("accepted a line encoding/json rejects: %v", err)
		}
		for key, v := range obj {
			f, ok := fieldOf([]byte(key))
			if !ok {
				t.Fatalf("accepted unknown field %q", key)
			}
			if got := value(&c, f); !sameValue(v, got, f) {
				t.Fatalf("field %s: decoded %v, encoding/json reads %v", key, got, v)
			}
		}
		again := AppendCommand(nil, &c)
		var c2 engine.Command
		if err := ParseCommand(again[:len(again)-1], &c2); err != nil || c2 != c {
			t.Fatalf("re-encoded as %s: %v, %+v want %+v", again, err, c2, c)
		}
	})
}

// value returns the command's field f: a string name for enums, an integer
// or a bool.
func value(c *engine.Command, f field) any {
	switch f {
	case fCmd:
		return c.Kind.String()
	case fSource:
		return c.Source
	case fSeq:
		return c.Seq
	case fTime:
		return c.Time
	case fInstrument:
		return uint64(c.Instrument)
	case fOrderID:
		return c.OrderID
	case fAccount:
		return c.Account
	case fSide:
		return uint8(c.Side)
	case fType:
		return uint8(c.Type)
	case fTIF:
		return uint8(c.TIF)
	case fSTP:
		return uint8(c.STP)
	case fRef:
		return uint8(c.Ref)
	case fPostOnly:
		return c.Post
	case fPrice:
		return c.Price
	case fStop:
		return c.Stop
	case fQty:
		return c.Qty
	case fTick:
		return c.Tick
	case fLot:
		return c.Lot
	case fMinPrice:
		return c.MinPrice
	case fMaxPrice:
		return c.MaxPrice
	}
	panic("unknown field")
}

var enums = map[field]*enum{fSide: sideNames, fType: typeNames, fTIF: tifNames, fSTP: stpNames, fRef: refNames}

// sameValue compares what encoding/json read (with UseNumber) with what the
// decoder stored.
func sameValue(j, got any, f field) bool {
	switch got := got.(type) {
	case string:
		return j == got
	case bool:
		return j == got
	case uint8: // enum: a name or a code
		if s, ok := j.(string); ok {
			return enums[f].name[got] == s
		}
		n, ok := j.(json.Number)
		return ok && n.String() == strconv.FormatUint(uint64(got), 10)
	case uint64:
		n, ok := j.(json.Number)
		// "-0" is the only way to write a sign on an unsigned field.
		return ok && (n.String() == strconv.FormatUint(got, 10) || n.String() == "-0" && got == 0)
	case int64:
		n, ok := j.(json.Number)
		return ok && (n.String() == strconv.FormatInt(got, 10) || n.String() == "-0" && got == 0)
	}
	return false
}
