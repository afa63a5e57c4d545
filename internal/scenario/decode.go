package scenario

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/matchlog/matchlog/engine"
)

// MaxLineBytes is the longest command line a [Reader] accepts.
const MaxLineBytes = 1 << 20

// Error is a bad command line: its number, the field at fault ("" when the
// line as a whole is) and what is wrong.
type Error struct {
	Line  int    // 1-based; 0 from [ParseCommand]
	Field string // JSON field name, or ""
	Msg   string
}

func (e *Error) Error() string {
	var s string
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: ", e.Line)
	}
	if e.Field != "" {
		s += fmt.Sprintf("field %q: ", e.Field)
	}
	return s + e.Msg
}

// field is one JSON field of a command line.
type field uint8

const (
	fCmd field = iota
	fSource
	fSeq
	fTime
	fInstrument
	fOrderID
	fAccount
	fSide
	fType
	fTIF
	fSTP
	fPostOnly
	fRef
	fPrice
	fStop
	fQty
	fTick
	fLot
	fMinPrice
	fMaxPrice
	numFields
)

var fieldNames = [numFields]string{
	"cmd", "source", "seq", "time", "instrument", "order_id", "account", "side", "type", "tif", "stp",
	"post_only", "ref", "price", "stop", "qty", "tick", "lot", "min_price", "max_price",
}

func fieldOf(key []byte) (field, bool) {
	switch string(key) {
	case "cmd":
		return fCmd, true
	case "source":
		return fSource, true
	case "seq":
		return fSeq, true
	case "time":
		return fTime, true
	case "instrument":
		return fInstrument, true
	case "order_id":
		return fOrderID, true
	case "account":
		return fAccount, true
	case "side":
		return fSide, true
	case "type":
		return fType, true
	case "tif":
		return fTIF, true
	case "stp":
		return fSTP, true
	case "post_only":
		return fPostOnly, true
	case "ref":
		return fRef, true
	case "price":
		return fPrice, true
	case "stop":
		return fStop, true
	case "qty":
		return fQty, true
	case "tick":
		return fTick, true
	case "lot":
		return fLot, true
	case "min_price":
		return fMinPrice, true
	case "max_price":
		return fMaxPrice, true
	}
	return 0, false
}

// mask is a set of fields.
type mask uint32

func m(fs ...field) mask {
	var s mask
	for _, f := range fs {
		s |= 1 << f
	}
	return s
}

// Fields each command kind uses (allowed) and must have (required). For new
// orders, price, stop and ref also depend on the order type: see
// [orderFields].
var (
	commonFields   = m(fCmd, fSource, fSeq, fTime, fInstrument)
	alwaysRequired = m(fCmd, fSource, fSeq, fTime)

	kindFields = [...]struct{ allowed, required mask }{
		engine.CmdDefineInstrument: {commonFields | m(fTick, fLot, fMinPrice, fMaxPrice), commonFields | m(fTick, fLot, fMinPrice, fMaxPrice)},
		engine.CmdNewOrder: {commonFields | m(fOrderID, fAccount, fSide, fType, fTIF, fSTP, fPostOnly, fRef, fPrice, fStop, fQty),
			commonFields | m(fOrderID, fSide, fQty)},
		engine.CmdCancel:     {commonFields | m(fOrderID), commonFields | m(fOrderID)},
		engine.CmdModify:     {commonFields | m(fOrderID, fPrice, fQty), commonFields | m(fOrderID, fPrice, fQty)},
		engine.CmdMassCancel: {commonFields | m(fAccount), alwaysRequired},
		engine.CmdMarkPrice:  {commonFields | m(fPrice), commonFields | m(fPrice)},
	}
)

// orderFields returns the type-dependent fields of a new order: which of
// price, stop and ref it may have and which it must have. Unknown type codes
// (which the engine rejects) may have all three and need none.
func orderFields(t engine.OrderType) (allowed, required mask) {
	switch t {
	case engine.Limit:
		return m(fPrice), m(fPrice)
	case engine.Market:
		return 0, 0
	case engine.Stop:
		return m(fStop, fRef), m(fStop)
	case engine.StopLimit:
		return m(fPrice, fStop, fRef), m(fPrice, fStop)
	}
	return m(fPrice, fStop, fRef), 0
}

// Reader reads commands from JSON lines. See the package documentation for
// the format.
type Reader struct {
	br   *bufio.Reader
	line int
	long []byte // a line longer than br's buffer
	p    parser
	err  error // sticky: nothing is read after an error
}

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Line returns the number of the line last read.
func (r *Reader) Line() int { return r.line }

// Next decodes the next command into c, skipping blank lines. It returns
// io.EOF after the last command, an [*Error] for a bad line, or the error of
// the underlying reader. After an error, Next returns it again and reads no
// more.
func (r *Reader) Next(c *engine.Command) error {
	if r.err != nil {
		return r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return err
		}
		if blank(line) {
			continue
		}
		if err := r.p.parse(line, c); err != nil {
			err.Line = r.line
			r.err = err
			return err
		}
		return nil
	}
}

// readLine returns the next line without its line ending, valid until the
// next call.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(r.long) > MaxLineBytes {
				return nil, &Error{Line: r.line + 1, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
			}
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err != nil && err != io.EOF:
		return nil, fmt.Errorf("scenario: reading line %d: %w", r.line+1, err)
	}
	r.line++
	if len(line) > MaxLineBytes {
		return nil, &Error{Line: r.line, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func blank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// ParseCommand decodes one command line (without its line ending) into c.
// An error is an [*Error] with Line 0. A [Reader] is the faster way to read
// many lines: it reuses its buffers.
func ParseCommand(line []byte, c *engine.Command) error {
	var p parser
	if err := p.parse(line, c); err != nil {
		return err
	}
	return nil
}

// parser decodes one line. It is a small JSON parser that accepts exactly one
// flat object of known fields and rejects everything else.
type parser struct {
	b   []byte
	i   int
	tmp []byte // unescaped string
}

func (p *parser) parse(line []byte, c *engine.Command) *Error {
	*c = engine.Command{}
	p.b, p.i = line, 0
	var seen mask
	var order [numFields]field // fields in line order, to report the first unused one
	n := 0

	p.ws()
	if !p.eat('{') {
		return &Error{Msg: "not a JSON object"}
	}
	p.ws()
	if !p.eat('}') {
		for {
			p.ws()
			key, err := p.str()
			if err != nil {
				return err
			}
			f, ok := fieldOf(key)
			if !ok {
				return &Error{Field: string(key), Msg: "unknown field"}
			}
			p.ws()
			if !p.eat(':') {
				return p.syntax("want ':'")
			}
			p.ws()
			if seen&(1<<f) != 0 {
				return &Error{Field: fieldNames[f], Msg: "repeated"}
			}
			seen |= 1 << f
			order[n] = f
			n++
			if err := p.value(f, c); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return p.syntax("want ',' or '}'")
		}
	}
	p.ws()
	if p.i < len(p.b) {
		return p.syntax("data after the object")
	}

	if seen&m(fCmd) == 0 {
		return &Error{Field: "cmd", Msg: "missing"}
	}
	kf := kindFields[c.Kind]
	if bad := seen &^ kf.allowed; bad != 0 {
		return unused(bad, order[:n], c.Kind.String())
	}
	req := kf.required
	if c.Kind == engine.CmdNewOrder {
		if seen&m(fType) == 0 {
			c.Type = engine.Limit
		}
		allowed, r := orderFields(c.Type)
		if bad := seen & m(fPrice, fStop, fRef) &^ allowed; bad != 0 {
			// Unknown type codes allow all three, so the name is not "".
			return unused(bad, order[:n], typeNames.name[c.Type]+" orders")
		}
		req |= r
		if seen&m(fTIF) == 0 {
			c.TIF = engine.GTC
			if c.Type == engine.Market || c.Type == engine.Stop {
				c.TIF = engine.IOC
			}
		}
		if seen&m(fRef) == 0 && (c.Type == engine.Stop || c.Type == engine.StopLimit) {
			c.Ref = engine.RefLastTrade
		}
	}
	if missing := req &^ seen; missing != 0 {
		for f := range numFields {
			if missing&(1<<f) != 0 {
				return &Error{Field: fieldNames[f], Msg: "missing"}
			}
		}
	}
	return nil
}

// unused reports the first field of bad (not empty) in line order as not
// used by what.
func unused(bad mask, order []field, what string) *Error {
	f := order[0]
	for _, f = range order {
		if bad&(1<<f) != 0 {
			break
		}
	}
	return &Error{Field: fieldNames[f], Msg: "not used by " + what}
}

// value decodes the value of field f into c.
func (p *parser) value(f field, c *engine.Command) *Error {
	var err *Error
	switch f {
	case fCmd:
		if p.peek() != '"' {
			return p.wrongType(f, "a string")
		}
		var s []byte
		if s, err = p.str(); err != nil {
			return err
		}
		k, ok := cmdNames.code(s)
		if !ok {
			return &Error{Field: "cmd", Msg: fmt.Sprintf("unknown command %q (want %s)", s, cmdNames)}
		}
		c.Kind = engine.CommandKind(k)
	case fSource:
		c.Source, err = p.uint(f, math.MaxUint64)
	case fSeq:
		c.Seq, err = p.uint(f, math.MaxUint64)
	case fTime:
		c.Time, err = p.int(f)
	case fInstrument:
		var v uint64
		v, err = p.uint(f, math.MaxUint32)
		c.Instrument = uint32(v)
	case fOrderID:
		c.OrderID, err = p.uint(f, math.MaxUint64)
	case fAccount:
		c.Account, err = p.uint(f, math.MaxUint64)
	case fSide:
		var v uint8
		v, err = p.enum(f, sideNames)
		c.Side = engine.Side(v)
	case fType:
		var v uint8
		v, err = p.enum(f, typeNames)
		c.Type = engine.OrderType(v)
	case fTIF:
		var v uint8
		v, err = p.enum(f, tifNames)
		c.TIF = engine.TimeInForce(v)
	case fSTP:
		var v uint8
		v, err = p.enum(f, stpNames)
		c.STP = engine.STP(v)
	case fRef:
		var v uint8
		v, err = p.enum(f, refNames)
		c.Ref = engine.TriggerRef(v)
	case fPostOnly:
		c.Post, err = p.bool(f)
	case fPrice:
		c.Price, err = p.int(f)
	case fStop:
		c.Stop, err = p.int(f)
	case fQty:
		c.Qty, err = p.int(f)
	case fTick:
		c.Tick, err = p.int(f)
	case fLot:
		c.Lot, err = p.int(f)
	case fMinPrice:
		c.MinPrice, err = p.int(f)
	case fMaxPrice:
		c.MaxPrice, err = p.int(f)
	}
	return err
}

func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) ws() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

func (p *parser) syntax(want string) *Error {
	if p.i >= len(p.b) {
		return &Error{Msg: fmt.Sprintf("malformed JSON: line ends early (%s)", want)}
	}
	r, _ := utf8.DecodeRune(p.b[p.i:])
	return &Error{Msg: fmt.Sprintf("malformed JSON at column %d: unexpected %q (%s)", p.i+1, r, want)}
}

// wrongType reports a value of the wrong JSON type, or malformed JSON if the
// value is not JSON at all.
func (p *parser) wrongType(f field, want string) *Error {
	var got string
	switch c := p.peek(); {
	case c == '"':
		got = "a string"
	case p.literal("true") || p.literal("false"):
		got = "a boolean"
	case p.literal("null"):
		got = "null"
	case c == '{':
		got = "an object"
	case c == '[':
		got = "an array"
	case c == '-' || c >= '0' && c <= '9':
		got = "a number"
	default:
		return p.syntax("want a value")
	}
	return &Error{Field: fieldNames[f], Msg: "want " + want + ", got " + got}
}

// str reads a string and returns its unescaped bytes, valid until the next
// call.
func (p *parser) str() ([]byte, *Error) {
	if !p.eat('"') {
		return nil, p.syntax("want a string")
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], nil
		case c == '\\':
			p.tmp = append(p.tmp[:0], p.b[start:p.i]...)
			return p.escaped()
		case c < 0x20:
			return nil, p.syntax("control character in a string")
		}
		p.i++
	}
	return nil, p.syntax("unterminated string")
}

// escaped reads the rest of a string that holds escapes into p.tmp.
func (p *parser) escaped() ([]byte, *Error) {
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.tmp, nil
		case c < 0x20:
			return nil, p.syntax("control character in a string")
		case c != '\\':
			p.tmp = append(p.tmp, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.b) {
			break
		}
		switch e := p.b[p.i]; e {
		case '"', '\\', '/':
			p.tmp = append(p.tmp, e)
		case 'b':
			p.tmp = append(p.tmp, '\b')
		case 'f':
			p.tmp = append(p.tmp, '\f')
		case 'n':
			p.tmp = append(p.tmp, '\n')
		case 'r':
			p.tmp = append(p.tmp, '\r')
		case 't':
			p.tmp = append(p.tmp, '\t')
		case 'u':
			var r rune
			for k := 1; k <= 4; k++ {
				if p.i+k >= len(p.b) {
					p.i = len(p.b)
					return nil, p.syntax("unterminated string")
				}
				h := p.b[p.i+k]
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					p.i += k
					return nil, p.syntax("want a hex digit")
				}
			}
			p.i += 4
			// Surrogate halves become U+FFFD: no valid name or key needs them.
			p.tmp = utf8.AppendRune(p.tmp, r)
		default:
			return nil, p.syntax("bad escape")
		}
		p.i++
	}
	return nil, p.syntax("unterminated string")
}

// number reads a JSON number that must be an integer and returns its sign
// and magnitude; ovf reports a magnitude beyond uint64.
func (p *parser) number(f field) (neg bool, mag uint64, err *Error) {
	c := p.peek()
	if c != '-' && (c < '0' || c > '9') {
		return false, 0, p.wrongType(f, "an integer")
	}
	start := p.i
	neg = p.eat('-')
	if p.i >= len(p.b) || p.b[p.i] < '0' || p.b[p.i] > '9' {
		return false, 0, p.syntax("want a digit")
	}
	ovf := false
	if p.b[p.i] == '0' {
		p.i++
	} else {
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			d := uint64(p.b[p.i] - '0')
			if mag > (math.MaxUint64-d)/10 {
				ovf = true
			}
			mag = mag*10 + d
			p.i++
		}
	}
	if c := p.peek(); c == '.' || c == 'e' || c == 'E' {
		for p.i < len(p.b) && !isSpace(p.b[p.i]) && p.b[p.i] != ',' && p.b[p.i] != '}' {
			p.i++
		}
		return false, 0, &Error{Field: fieldNames[f], Msg: fmt.Sprintf("want an integer, got %s", p.b[start:p.i])}
	}
	if ovf {
		return false, 0, p.outOfRange(f, start)
	}
	return neg, mag, nil
}

func (p *parser) outOfRange(f field, start int) *Error {
	return &Error{Field: fieldNames[f], Msg: fmt.Sprintf("%s is out of range", p.b[start:p.i])}
}

func (p *parser) uint(f field, max uint64) (uint64, *Error) {
	start := p.i
	neg, v, err := p.number(f)
	if err != nil {
		return 0, err
	}
	if v > max || neg && v != 0 {
		return 0, p.outOfRange(f, start)
	}
	return v, nil
}

func (p *parser) int(f field) (int64, *Error) {
	start := p.i
	neg, v, err := p.number(f)
	if err != nil {
		return 0, err
	}
	if neg {
		if v > 1<<63 {
			return 0, p.outOfRange(f, start)
		}
		return int64(-v), nil
	}
	if v > math.MaxInt64 {
		return 0, p.outOfRange(f, start)
	}
	return int64(v), nil
}

// enum reads an enum value: its name or its numeric code.
func (p *parser) enum(f field, e *enum) (uint8, *Error) {
	if p.peek() != '"' {
		if c := p.peek(); c == '-' || c >= '0' && c <= '9' {
			v, err := p.uint(f, math.MaxUint8)
			return uint8(v), err
		}
		return 0, p.wrongType(f, "a string")
	}
	s, err := p.str()
	if err != nil {
		return 0, err
	}
	v, ok := e.code(s)
	if !ok {
		return 0, &Error{Field: fieldNames[f], Msg: fmt.Sprintf("unknown value %q (want %s)", s, e)}
	}
	return v, nil
}

// literal reports whether the input continues with s.
func (p *parser) literal(s string) bool {
	return len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s
}

func (p *parser) bool(f field) (bool, *Error) {
	switch {
	case p.literal("true"):
		p.i += 4
		return true, nil
	case p.literal("false"):
		p.i += 5
		return false, nil
	}
	return false, p.wrongType(f, "a boolean")
}
