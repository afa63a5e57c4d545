package scenario

import (
	"strings"

	"github.com/matchlog/matchlog/engine"
)

// Name tables of the engine's enums. They are built from the engine's
// String methods so the file formats cannot drift from the engine.
var (
	sideNames   = newEnum(func(i int) string { return engine.Side(i).String() })
	typeNames   = newEnum(func(i int) string { return engine.OrderType(i).String() })
	tifNames    = newEnum(func(i int) string { return engine.TimeInForce(i).String() })
	stpNames    = newEnum(func(i int) string { return engine.STP(i).String() })
	refNames    = newEnum(func(i int) string { return engine.TriggerRef(i).String() })
	cmdNames    = newEnum(func(i int) string { return engine.CommandKind(i).String() })
	eventNames  = newEnum(func(i int) string { return engine.EventKind(i).String() })
	reasonNames = newEnum(func(i int) string { return engine.Reason(i).String() })
)

// enum maps the codes of one uint8 enum to their names and back.
type enum struct {
	name  [256]string // "" where the engine has no name for a code
	codes []uint8     // the codes that have a name, ascending
}

// newEnum builds an enum from a String method; the engine's String methods
// end the names of unknown codes with '?'.
func newEnum(str func(int) string) *enum {
	e := new(enum)
	for i := range e.name {
		if s := str(i); !strings.HasSuffix(s, "?") {
			e.name[i] = s
			e.codes = append(e.codes, uint8(i))
		}
	}
	return e
}

// code returns the code whose name is s.
func (e *enum) code(s []byte) (uint8, bool) {
	for _, c := range e.codes {
		if e.name[c] == string(s) {
			return c, true
		}
	}
	return 0, false
}

// String lists the names for error messages: "buy|sell".
func (e *enum) String() string {
	var b strings.Builder
	for _, c := range e.codes {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(e.name[c])
	}
	return b.String()
}
