package gen

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Schema is a parsed, validated SBE message schema with every offset and
// block length resolved.
type Schema struct {
	Package     string
	ID          int
	Version     int
	BigEndian   bool
	HeaderType  *Type
	Types       []*Type // named types in declaration order
	Messages    []*Message
	Description string

	types map[string]*Type
}

// Prim is an SBE primitive type.
type Prim struct {
	Name   string
	Size   int
	GoType string
	Signed bool
	Float  bool
	Null   string // the spec's default null value, as a Go literal
	Min    string
	Max    string
}

var prims = map[string]*Prim{
	"char":   {Name: "char", Size: 1, GoType: "byte", Null: "0", Min: "0x20", Max: "0x7e"},
	"int8":   {Name: "int8", Size: 1, GoType: "int8", Signed: true, Null: "-128", Min: "-127", Max: "127"},
	"int16":  {Name: "int16", Size: 2, GoType: "int16", Signed: true, Null: "-32768", Min: "-32767", Max: "32767"},
	"int32":  {Name: "int32", Size: 4, GoType: "int32", Signed: true, Null: "-2147483648", Min: "-2147483647", Max: "2147483647"},
	"int64":  {Name: "int64", Size: 8, GoType: "int64", Signed: true, Null: "-9223372036854775808", Min: "-9223372036854775807", Max: "9223372036854775807"},
	"uint8":  {Name: "uint8", Size: 1, GoType: "uint8", Null: "255", Min: "0", Max: "254"},
	"uint16": {Name: "uint16", Size: 2, GoType: "uint16", Null: "65535", Min: "0", Max: "65534"},
	"uint32": {Name: "uint32", Size: 4, GoType: "uint32", Null: "4294967295", Min: "0", Max: "4294967294"},
	"uint64": {Name: "uint64", Size: 8, GoType: "uint64", Null: "18446744073709551615", Min: "0", Max: "18446744073709551614"},
	"float":  {Name: "float", Size: 4, GoType: "float32", Float: true, Null: "NaN"},
	"double": {Name: "double", Size: 8, GoType: "float64", Float: true, Null: "NaN"},
}

// Kind is what a [Type] is.
type Kind int

// Kinds of type.
const (
	KindPrim Kind = iota
	KindComposite
	KindEnum
	KindSet
)

// Presence is a field's or type's presence.
type Presence int

// Presences.
const (
	Required Presence = iota
	Optional
	Constant
)

// Type is a named or inline SBE type: a primitive (possibly an array), a
// composite, an enum or a set.
type Type struct {
	Name string
	Kind Kind
	Line int

	Prim         *Prim // primitive; encoding of an enum or set
	Length       int   // array length of a primitive; 1 for scalars
	Presence     Presence
	Null         string // null value as a Go literal ("NaN" for floats)
	Const        string // constant value text
	MaxValue     string
	CharEncoding string
	SinceVersion int

	Members []*Member    // composite
	Values  []*EnumValue // enum
	Choices []*SetChoice // set
	Size    int          // encoded size in bytes (0 for a constant)
	NullEnc string       // enum: the encoding's null value literal
	state   int          // 0 unresolved, 1 resolving, 2 done
	n       *node
}

// IsCharArray reports whether t is a char array of length > 1 or length 0.
func (t *Type) IsCharArray() bool {
	return t.Kind == KindPrim && t.Prim.Name == "char" && t.Length != 1
}

// Member is one member of a composite.
type Member struct {
	Name   string
	Type   *Type
	Offset int
	Line   int
}

// EnumValue is one valid value of an enum.
type EnumValue struct {
	Name         string
	Value        string // Go literal
	SinceVersion int
	Deprecated   int
}

// SetChoice is one bit of a set.
type SetChoice struct {
	Name         string
	Bit          int
	SinceVersion int
	Deprecated   int
}

// Block is the body of a message or a group entry: fixed fields, then
// repeating groups, then variable-length data.
type Block struct {
	Name        string
	ID          int
	Line        int
	BlockLength int
	Fields      []*Field
	Groups      []*Group
	Data        []*Data
	// SinceVersion and Deprecated of the message or group.
	SinceVersion int
	Deprecated   int
	Description  string
	Gaps         [][2]int // [start, end) of block bytes no field covers
}

// Message is one SBE message.
type Message struct {
	Block
}

// Group is a repeating group.
type Group struct {
	Block
	Dim *Type // dimension composite: blockLength, numInGroup
}

// Field is a fixed-length field of a block.
type Field struct {
	Name         string
	ID           int
	Type         *Type
	Offset       int
	Size         int // 0 for a constant
	Presence     Presence
	Const        string // constant value: literal text, or an enum value name
	ValueRef     *EnumValue
	SinceVersion int
	Deprecated   int
	Line         int
	Description  string
}

// Data is a variable-length data field.
type Data struct {
	Name         string
	ID           int
	Type         *Type // composite of length and varData
	Length       *Member
	Line         int
	SinceVersion int
	Deprecated   int
}

// Error is a schema error that names the offending element and its line.
// It prints as "sbe/gen: FILE:LINE: <element name=...>: message".
type Error struct {
	File string // set by ParseFile
	Line int
	Msg  string
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "schema"
	}
	return fmt.Sprintf("sbe/gen: %s:%d: %s", file, e.Line, e.Msg)
}

func errAt(n *node, format string, args ...any) error {
	return &Error{File: n.file, Line: n.line, Msg: n.where() + ": " + fmt.Sprintf(format, args...)}
}

// Parse reads and validates an SBE 1.0 XML schema.
//
// A schema with XInclude elements needs [ParseFile], which resolves their
// hrefs relative to the schema file; Parse rejects them.
func Parse(r io.Reader) (*Schema, error) {
	root, err := parseTree(r)
	if err != nil {
		return nil, err
	}
	if inc := findInclude(root); inc != nil {
		return nil, errAt(inc, "XInclude of %q: Parse has no directory to resolve it in; use ParseFile", inc.attr("href"))
	}
	return parseSchema(root)
}

func parseSchema(root *node) (*Schema, error) {
	var err error
	if root.name != "messageSchema" {
		return nil, errAt(root, "root element must be messageSchema")
	}
	s := &Schema{types: map[string]*Type{}, Package: root.attr("package"), Description: root.attr("description")}
	if s.ID, err = intAttr(root, "id", true, 0); err != nil {
		return nil, err
	}
	if s.Version, err = intAttr(root, "version", false, 0); err != nil {
		return nil, err
	}
	switch bo := root.attr("byteOrder"); bo {
	case "", "littleEndian":
	case "bigEndian":
		s.BigEndian = true
	default:
		return nil, errAt(root, "bad byteOrder %q: want littleEndian or bigEndian", bo)
	}
	// Declare every named type first, so refs may point forward.
	for _, c := range root.children {
		if c.name != "types" {
			continue
		}
		for _, t := range c.children {
			if err := s.declare(t); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range s.Types {
		if err := s.resolve(t); err != nil {
			return nil, err
		}
	}
	hdrName := root.attr("headerType")
	if hdrName == "" {
		hdrName = "messageHeader"
	}
	hdr := s.types[hdrName]
	if hdr == nil {
		return nil, errAt(root, "headerType %q is not defined", hdrName)
	}
	if hdr.Kind != KindComposite {
		return nil, errAt(hdr.n, "headerType must be a composite")
	}
	for _, m := range []string{"blockLength", "templateId", "schemaId", "version"} {
		if err := needUintMember(hdr, m); err != nil {
			return nil, err
		}
	}
	s.HeaderType = hdr
	if err := fits(root, hdr, "schemaId", s.ID); err != nil {
		return nil, err
	}
	if err := fits(root, hdr, "version", s.Version); err != nil {
		return nil, err
	}

	ids := map[int]*node{}
	names := map[string]*node{}
	for _, c := range root.children {
		if c.name != "message" {
			continue
		}
		m := &Message{}
		if err := s.block(c, &m.Block, true); err != nil {
			return nil, err
		}
		if p, ok := ids[m.ID]; ok {
			return nil, errAt(c, "duplicate message id %d (first at line %d)", m.ID, p.line)
		}
		if p, ok := names[m.Name]; ok {
			return nil, errAt(c, "duplicate message name (first at line %d)", p.line)
		}
		if m.SinceVersion > s.Version {
			return nil, errAt(c, "sinceVersion %d is above the schema version %d", m.SinceVersion, s.Version)
		}
		if err := fits(c, hdr, "blockLength", m.BlockLength); err != nil {
			return nil, err
		}
		if err := fits(c, hdr, "templateId", m.ID); err != nil {
			return nil, err
		}
		ids[m.ID], names[m.Name] = c, c
		s.Messages = append(s.Messages, m)
	}
	if err := s.checkGoNames(); err != nil {
		return nil, err
	}
	return s, nil
}

func needUintMember(c *Type, name string) error {
	for _, m := range c.Members {
		if m.Name == name {
			if m.Type.Kind != KindPrim || m.Type.Length != 1 || m.Type.Prim.Signed || m.Type.Prim.Float || m.Type.Prim.Name == "char" {
				return errAt(c.n, "member %q must be an unsigned integer", name)
			}
			return nil
		}
	}
	return errAt(c.n, "composite has no %q member", name)
}

// fits checks that v fits the unsigned member name of composite c, as the
// header and group dimensions must carry it.
func fits(n *node, c *Type, name string, v int) error {
	m := member(c, name)
	if bits := m.Type.Prim.Size * 8; bits < 64 && uint64(v) >= 1<<bits {
		return errAt(n, "%s %d does not fit %s.%s (%s)", name, v, c.Name, name, m.Type.Prim.Name)
	}
	return nil
}

func member(c *Type, name string) *Member {
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func intAttr(n *node, k string, required bool, def int) (int, error) {
	v, ok := n.attrs[k]
	if !ok || v == "" {
		if required {
			return 0, errAt(n, "missing attribute %s", k)
		}
		return def, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return 0, errAt(n, "attribute %s=%q is not a non-negative integer", k, v)
	}
	return i, nil
}

func presenceOf(n *node) (Presence, error) {
	switch p := n.attr("presence"); p {
	case "", "required":
		return Required, nil
	case "optional":
		return Optional, nil
	case "constant":
		return Constant, nil
	default:
		return 0, errAt(n, "bad presence %q", p)
	}
}

// declare registers a named type without resolving it.
func (s *Schema) declare(n *node) error {
	switch n.name {
	case "type", "composite", "enum", "set":
	default:
		return errAt(n, "unexpected element in <types>")
	}
	name := n.attr("name")
	if name == "" {
		return errAt(n, "missing attribute name")
	}
	if p, ok := s.types[name]; ok {
		return errAt(n, "duplicate type name (first at line %d)", p.Line)
	}
	t := &Type{Name: name, Line: n.line, n: n}
	s.types[name] = t
	s.Types = append(s.Types, t)
	return nil
}

// resolve fills in a type from its node, resolving refs and sizes.
func (s *Schema) resolve(t *Type) error {
	switch t.state {
	case 2:
		return nil
	case 1:
		return errAt(t.n, "type refers to itself")
	}
	t.state = 1
	n := t.n
	var err error
	if t.SinceVersion, err = intAttr(n, "sinceVersion", false, 0); err != nil {
		return err
	}
	switch n.name {
	case "type":
		err = s.primType(t)
	case "composite":
		err = s.composite(t)
	case "enum":
		err = s.enum(t)
	case "set":
		err = s.set(t)
	default:
		err = errAt(n, "unexpected element")
	}
	if err != nil {
		return err
	}
	t.state = 2
	return nil
}

func (s *Schema) primType(t *Type) error {
	n := t.n
	t.Kind = KindPrim
	p := prims[n.attr("primitiveType")]
	if p == nil {
		return errAt(n, "unknown primitiveType %q", n.attr("primitiveType"))
	}
	t.Prim = p
	var err error
	if t.Length, err = intAttr(n, "length", false, 1); err != nil {
		return err
	}
	if t.Presence, err = presenceOf(n); err != nil {
		return err
	}
	t.Null = p.Null
	if v := n.attr("nullValue"); v != "" {
		if t.Null, err = literal(n, p, v); err != nil {
			return err
		}
	}
	t.MaxValue = n.attr("maxValue")
	t.CharEncoding = n.attr("characterEncoding")
	t.Size = p.Size * t.Length
	if t.Presence == Constant {
		t.Const = strings.TrimSpace(n.text)
		if t.Const == "" {
			return errAt(n, "constant type has no value")
		}
		if p.Name != "char" {
			if _, err := literal(n, p, t.Const); err != nil {
				return err
			}
		}
		t.Size = 0
	}
	return nil
}

// literal checks v against p and returns it as a Go literal.
func literal(n *node, p *Prim, v string) (string, error) {
	switch {
	case p.Float:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return "", errAt(n, "value %q is not a number", v)
		}
	case p.Name == "char":
		if len(v) == 1 {
			return strconv.Itoa(int(v[0])), nil
		}
		if _, err := strconv.ParseUint(v, 0, 8); err != nil {
			return "", errAt(n, "value %q is not a char", v)
		}
	case p.Signed:
		if _, err := strconv.ParseInt(v, 0, p.Size*8); err != nil {
			return "", errAt(n, "value %q does not fit %s", v, p.Name)
		}
	default:
		if _, err := strconv.ParseUint(v, 0, p.Size*8); err != nil {
			return "", errAt(n, "value %q does not fit %s", v, p.Name)
		}
	}
	return v, nil
}

// inline returns the type an inline composite member declares, or the type
// a ref names.
func (s *Schema) memberType(c *node) (*Type, int, error) {
	off := -1
	if c.has("offset") {
		o, err := intAttr(c, "offset", false, 0)
		if err != nil {
			return nil, 0, err
		}
		off = o
	}
	switch c.name {
	case "ref":
		t := s.types[c.attr("type")]
		if t == nil {
			return nil, 0, errAt(c, "unknown type %q", c.attr("type"))
		}
		if err := s.resolve(t); err != nil {
			return nil, 0, err
		}
		return t, off, nil
	case "type", "composite", "enum", "set":
		if c.attr("name") == "" {
			return nil, 0, errAt(c, "missing attribute name")
		}
		t := &Type{Name: c.attr("name"), Line: c.line, n: c}
		if c.name != "type" {
			// Inline composites, enums and sets become package-level types.
			if p, ok := s.types[t.Name]; ok {
				return nil, 0, errAt(c, "duplicate type name (first at line %d)", p.Line)
			}
			s.types[t.Name] = t
			s.Types = append(s.Types, t)
		}
		if err := s.resolve(t); err != nil {
			return nil, 0, err
		}
		return t, off, nil
	}
	return nil, 0, errAt(c, "unexpected element in composite")
}

func (s *Schema) composite(t *Type) error {
	t.Kind = KindComposite
	cur := 0
	seen := map[string]bool{}
	for _, c := range t.n.children {
		mt, off, err := s.memberType(c)
		if err != nil {
			return err
		}
		name := c.attr("name")
		if seen[name] {
			return errAt(c, "duplicate member name")
		}
		seen[name] = true
		if off >= 0 {
			if off < cur {
				return errAt(c, "offset %d overlaps the previous member (which ends at %d)", off, cur)
			}
			cur = off
		}
		t.Members = append(t.Members, &Member{Name: name, Type: mt, Offset: cur, Line: c.line})
		cur += mt.Size
	}
	if len(t.Members) == 0 {
		return errAt(t.n, "composite has no members")
	}
	t.Size = cur
	return nil
}

// encoding resolves the encodingType of an enum or set.
func (s *Schema) encoding(t *Type, allowed ...string) error {
	e := t.n.attr("encodingType")
	p := prims[e]
	null := ""
	if p == nil {
		et := s.types[e]
		if et == nil {
			return errAt(t.n, "unknown encodingType %q", e)
		}
		if err := s.resolve(et); err != nil {
			return err
		}
		if et.Kind != KindPrim || et.Length != 1 {
			return errAt(t.n, "encodingType %q is not a primitive scalar", e)
		}
		p, null = et.Prim, et.Null
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == p.Name
	}
	if !ok {
		return errAt(t.n, "encodingType %q not allowed here (want one of %s)", e, strings.Join(allowed, ", "))
	}
	t.Prim, t.Length, t.Size = p, 1, p.Size
	t.NullEnc = p.Null
	if null != "" {
		t.NullEnc = null
	}
	return nil
}

func (s *Schema) enum(t *Type) error {
	t.Kind = KindEnum
	if err := s.encoding(t, "char", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"); err != nil {
		return err
	}
	seenName, seenVal := map[string]bool{}, map[string]bool{}
	for _, c := range t.n.children {
		if c.name != "validValue" {
			return errAt(c, "unexpected element in enum")
		}
		v, err := literal(c, t.Prim, strings.TrimSpace(c.text))
		if err != nil {
			return err
		}
		name := c.attr("name")
		if name == "" {
			return errAt(c, "missing attribute name")
		}
		if seenName[name] {
			return errAt(c, "duplicate enum value name")
		}
		if seenVal[v] {
			return errAt(c, "duplicate enum value %s", v)
		}
		if v == t.NullEnc {
			return errAt(c, "enum value %s is the null value", v)
		}
		seenName[name], seenVal[v] = true, true
		ev := &EnumValue{Name: name, Value: v}
		if ev.SinceVersion, err = intAttr(c, "sinceVersion", false, 0); err != nil {
			return err
		}
		if ev.Deprecated, err = intAttr(c, "deprecated", false, 0); err != nil {
			return err
		}
		t.Values = append(t.Values, ev)
	}
	if len(t.Values) == 0 {
		return errAt(t.n, "enum has no validValue")
	}
	return nil
}

func (s *Schema) set(t *Type) error {
	t.Kind = KindSet
	if err := s.encoding(t, "uint8", "uint16", "uint32", "uint64"); err != nil {
		return err
	}
	seenName, seenBit := map[string]bool{}, map[int]bool{}
	for _, c := range t.n.children {
		if c.name != "choice" {
			return errAt(c, "unexpected element in set")
		}
		name := c.attr("name")
		if name == "" {
			return errAt(c, "missing attribute name")
		}
		b, err := strconv.Atoi(strings.TrimSpace(c.text))
		if err != nil || b < 0 || b >= t.Prim.Size*8 {
			return errAt(c, "choice bit %q is not in [0, %d)", strings.TrimSpace(c.text), t.Prim.Size*8)
		}
		if seenName[name] || seenBit[b] {
			return errAt(c, "duplicate choice name or bit")
		}
		seenName[name], seenBit[b] = true, true
		sc := &SetChoice{Name: name, Bit: b}
		if sc.SinceVersion, err = intAttr(c, "sinceVersion", false, 0); err != nil {
			return err
		}
		if sc.Deprecated, err = intAttr(c, "deprecated", false, 0); err != nil {
			return err
		}
		t.Choices = append(t.Choices, sc)
	}
	return nil
}

// Method names the generated message and group codecs use themselves; a
// field of that name would collide.
var (
	reservedMessage = map[string]bool{
		"WrapForEncode": true, "WrapForDecode": true, "WrapAndApplyHeader": true, "WrapWithHeader": true,
		"EncodedLength": true, "ActingVersion": true, "ActingBlockLength": true,
	}
	reservedGroup = map[string]bool{
		"Next": true, "HasNext": true, "Count": true, "Index": true, "ResetCountToIndex": true,
	}
)

// block parses the fields, groups and data of a message or group.
func (s *Schema) block(n *node, b *Block, isMessage bool) error {
	var err error
	b.Name, b.Line, b.Description = n.attr("name"), n.line, n.attr("description")
	if b.Name == "" {
		return errAt(n, "missing attribute name")
	}
	if b.ID, err = intAttr(n, "id", true, 0); err != nil {
		return err
	}
	if b.SinceVersion, err = intAttr(n, "sinceVersion", false, 0); err != nil {
		return err
	}
	if b.Deprecated, err = intAttr(n, "deprecated", false, 0); err != nil {
		return err
	}
	ids := map[int]*node{}
	names := map[string]*node{}
	section := 0 // 0 fields, 1 groups, 2 data
	cur, prevOff := 0, -1
	for _, c := range n.children {
		if c.name == "description" || c.name == "doc" {
			continue
		}
		name := c.attr("name")
		if name == "" {
			return errAt(c, "missing attribute name")
		}
		if (isMessage && reservedMessage[goName(name)]) || (!isMessage && reservedGroup[goName(name)]) {
			return errAt(c, "name collides with a generated method")
		}
		if p, ok := names[name]; ok {
			return errAt(c, "duplicate name in %s (first at line %d)", b.Name, p.line)
		}
		if p, ok := names[goNameKey+goName(name)]; ok {
			return errAt(c, "name becomes the Go name %s, as %q at line %d does: rename one", goName(name), p.attr("name"), p.line)
		}
		names[name], names[goNameKey+goName(name)] = c, c
		id, err := intAttr(c, "id", true, 0)
		if err != nil {
			return err
		}
		if p, ok := ids[id]; ok {
			return errAt(c, "duplicate field id %d in %s (first at line %d)", id, b.Name, p.line)
		}
		ids[id] = c
		since, err := intAttr(c, "sinceVersion", false, 0)
		if err != nil {
			return err
		}
		if since > s.Version {
			return errAt(c, "sinceVersion %d is above the schema version %d", since, s.Version)
		}
		depr, err := intAttr(c, "deprecated", false, 0)
		if err != nil {
			return err
		}
		switch c.name {
		case "field":
			switch section {
			case 1:
				return errAt(c, "field after a repeating group: fields must come first")
			case 2:
				return errAt(c, "field after var data: fields must come first")
			}
			f, err := s.field(c, id, since, depr)
			if err != nil {
				return err
			}
			if c.has("offset") {
				off, err := intAttr(c, "offset", false, 0)
				if err != nil {
					return err
				}
				if off < prevOff {
					return errAt(c, "offset %d is out of order (the previous field is at %d)", off, prevOff)
				}
				if off < cur {
					return errAt(c, "offset %d overlaps the previous field (which ends at %d)", off, cur)
				}
				cur = off
			} else if c.has("alignment") {
				// Accepted and ignored, as real SBE (1.34.1) ignores it: a
				// field without an offset follows the previous one, and
				// rounding up would put it where SBE's codecs do not.
				if _, err := intAttr(c, "alignment", false, 0); err != nil {
					return err
				}
			}
			f.Offset, prevOff = cur, cur
			cur += f.Size
			b.Fields = append(b.Fields, f)
		case "group":
			if section == 2 {
				return errAt(c, "group after var data: groups must come before var data")
			}
			section = 1
			g := &Group{}
			if err := s.block(c, &g.Block, false); err != nil {
				return err
			}
			dn := c.attr("dimensionType")
			if dn == "" {
				dn = "groupSizeEncoding"
			}
			g.Dim = s.types[dn]
			if g.Dim == nil {
				return errAt(c, "unknown dimensionType %q", dn)
			}
			if g.Dim.Kind != KindComposite {
				return errAt(c, "dimensionType %q is not a composite", dn)
			}
			for _, m := range []string{"blockLength", "numInGroup"} {
				if err := needUintMember(g.Dim, m); err != nil {
					return err
				}
			}
			if err := fits(c, g.Dim, "blockLength", g.BlockLength); err != nil {
				return err
			}
			b.Groups = append(b.Groups, g)
		case "data":
			section = 2
			d := &Data{Name: name, ID: id, Line: c.line, SinceVersion: since, Deprecated: depr}
			d.Type = s.types[c.attr("type")]
			if d.Type == nil {
				return errAt(c, "unknown type %q", c.attr("type"))
			}
			if d.Type.Kind != KindComposite || len(d.Type.Members) != 2 || member(d.Type, "length") == nil || member(d.Type, "varData") == nil {
				return errAt(c, "data type %q is not a var data composite (length, varData)", c.attr("type"))
			}
			if err := needUintMember(d.Type, "length"); err != nil {
				return err
			}
			d.Length = member(d.Type, "length")
			b.Data = append(b.Data, d)
		default:
			return errAt(c, "unexpected element in %s", n.name)
		}
	}
	b.BlockLength = cur
	defer func() {
		// Record the bytes no field covers, so encoders can zero them.
		at := 0
		for _, f := range b.Fields {
			if f.Offset > at {
				b.Gaps = append(b.Gaps, [2]int{at, f.Offset})
			}
			if f.Size > 0 {
				b.Gaps = append(b.Gaps, compositeGaps(f.Type, f.Offset)...)
			}
			at = max(at, f.Offset+f.Size)
		}
		if b.BlockLength > at {
			b.Gaps = append(b.Gaps, [2]int{at, b.BlockLength})
		}
	}()
	if n.has("blockLength") {
		bl, err := intAttr(n, "blockLength", false, 0)
		if err != nil {
			return err
		}
		if bl < cur {
			return errAt(n, "blockLength %d is smaller than the fields (%d bytes)", bl, cur)
		}
		b.BlockLength = bl
	}
	return nil
}

// compositeGaps returns the bytes of composite t at base that no member
// covers, recursively.
func compositeGaps(t *Type, base int) [][2]int {
	if t.Kind != KindComposite {
		return nil
	}
	var gaps [][2]int
	at := 0
	for _, m := range t.Members {
		if m.Offset > at {
			gaps = append(gaps, [2]int{base + at, base + m.Offset})
		}
		gaps = append(gaps, compositeGaps(m.Type, base+m.Offset)...)
		at = max(at, m.Offset+m.Type.Size)
	}
	return gaps
}

func (s *Schema) field(c *node, id, since, depr int) (*Field, error) {
	f := &Field{Name: c.attr("name"), ID: id, SinceVersion: since, Deprecated: depr, Line: c.line, Description: c.attr("description")}
	f.Type = s.types[c.attr("type")]
	if f.Type == nil {
		if p := prims[c.attr("type")]; p != nil {
			f.Type = &Type{Name: p.Name, Kind: KindPrim, Prim: p, Length: 1, Null: p.Null, Size: p.Size, state: 2}
		} else {
			return nil, errAt(c, "unknown type %q", c.attr("type"))
		}
	}
	f.Presence = f.Type.Presence
	if c.has("presence") {
		p, err := presenceOf(c)
		if err != nil {
			return nil, err
		}
		f.Presence = p
	}
	f.Size = f.Type.Size
	if f.Presence == Constant {
		f.Size = 0
		switch {
		case c.has("valueRef"):
			ref := c.attr("valueRef")
			i := strings.IndexByte(ref, '.')
			if i < 0 || f.Type.Kind != KindEnum || ref[:i] != f.Type.Name {
				return nil, errAt(c, "valueRef %q must name a value of the field's enum %s", ref, f.Type.Name)
			}
			for _, v := range f.Type.Values {
				if v.Name == ref[i+1:] {
					f.ValueRef = v
				}
			}
			if f.ValueRef == nil {
				return nil, errAt(c, "valueRef %q: no such enum value", ref)
			}
		case f.Type.Presence == Constant:
			f.Const = f.Type.Const
		case strings.TrimSpace(c.text) != "" && f.Type.Kind == KindPrim:
			f.Const = strings.TrimSpace(c.text)
		default:
			return nil, errAt(c, "constant field has no value")
		}
	} else if f.Type.Presence == Constant {
		return nil, errAt(c, "field of constant type %s must have presence constant", f.Type.Name)
	}
	if f.Type.Kind == KindPrim && f.Type.Length == 0 && f.Presence != Constant {
		return nil, errAt(c, "field of type %s has length 0", f.Type.Name)
	}
	return f, nil
}
