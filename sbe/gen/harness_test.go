package gen

import (
	"bytes"
	"fmt"
	"go/format"
)

// The vector harness: for a schema, Go source (in the package of the
// schema's generated codecs, so it sees them as they are generated) that
// checks one line of a shared/sbe-vectors file (see vectors_test.go): it
// decodes the hex with the generated decoder and compares every field with
// the line's JSON, and at the schema version encodes the JSON's fields with
// the generated encoder and compares the bytes. Every identifier it adds
// starts with zz, which no generated name does (generated names are
// exported, or state).

// harnessRuntime is the part of the harness that does not depend on the
// schema. %s is the package name.
const harnessRuntime = `package %s

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

type zzVec struct {
	Schema        string                 ` + "`json:\"schema\"`" + `
	SchemaID      int                    ` + "`json:\"schemaId\"`" + `
	SchemaVersion int                    ` + "`json:\"schemaVersion\"`" + `
	Version       int                    ` + "`json:\"version\"`" + `
	Message       string                 ` + "`json:\"message\"`" + `
	TemplateID    int                    ` + "`json:\"templateId\"`" + `
	BlockLength   int                    ` + "`json:\"blockLength\"`" + `
	HeaderLength  int                    ` + "`json:\"headerLength\"`" + `
	HeaderExtra   map[string]any         ` + "`json:\"headerExtra\"`" + `
	N             int                    ` + "`json:\"n\"`" + `
	Fields        map[string]any         ` + "`json:\"fields\"`" + `
	Hex           string                 ` + "`json:\"hex\"`" + `
}

type zzF32 float32
type zzF64 float64

// zzBad is the first conversion problem of an encode (an unknown enum or
// choice name, a value of the wrong JSON type).
var zzBad error

func zzFail(format string, args ...any) {
	if zzBad == nil {
		zzBad = fmt.Errorf(format, args...)
	}
}

// Check checks one line; encoded says whether the encode side ran.
func Check(line []byte) (encoded bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %%v", r)
		}
	}()
	var v zzVec
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return false, err
	}
	b, err := hex.DecodeString(v.Hex)
	if err != nil {
		return false, err
	}
	if v.SchemaID != SchemaID || v.SchemaVersion != SchemaVersion {
		return false, fmt.Errorf("schema %%d version %%d, codecs are of %%d version %%d", v.SchemaID, v.SchemaVersion, SchemaID, SchemaVersion)
	}
	if err := zzHeader(b, &v); err != nil {
		return false, fmt.Errorf("%%s n=%%d v%%d: header: %%w", v.Message, v.N, v.Version, err)
	}
	enc := v.Version == SchemaVersion
	if err := zzDispatch(b, &v, enc); err != nil {
		return enc, fmt.Errorf("%%s n=%%d v%%d: %%w", v.Message, v.N, v.Version, err)
	}
	return enc, nil
}

func zzCmp(path string, want, got any) error {
	bad := func() error { return fmt.Errorf("%%s: decoded %%v (%%T), vector has %%v (%%T)", path, got, got, want, want) }
	switch g := got.(type) {
	case int64:
		n, ok := want.(json.Number)
		if !ok {
			return bad()
		}
		w, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || w != g {
			return bad()
		}
	case uint64:
		n, ok := want.(json.Number)
		if !ok {
			return bad()
		}
		w, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || w != g {
			return bad()
		}
	case zzF32:
		if s, ok := want.(string); ok && s == "NaN" {
			if !math.IsNaN(float64(g)) {
				return bad()
			}
			return nil
		}
		n, ok := want.(json.Number)
		if !ok {
			return bad()
		}
		w, err := strconv.ParseFloat(string(n), 32)
		if err != nil || math.Float32bits(float32(w)) != math.Float32bits(float32(g)) {
			return bad()
		}
	case zzF64:
		if s, ok := want.(string); ok && s == "NaN" {
			if !math.IsNaN(float64(g)) {
				return bad()
			}
			return nil
		}
		n, ok := want.(json.Number)
		if !ok {
			return bad()
		}
		w, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.Float64bits(w) != math.Float64bits(float64(g)) {
			return bad()
		}
	case string:
		if w, ok := want.(string); !ok || w != g {
			return bad()
		}
	case []any:
		w, ok := want.([]any)
		if !ok || len(w) != len(g) {
			return bad()
		}
		for i := range g {
			if err := zzCmp(fmt.Sprintf("%%s[%%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			return bad()
		}
		var keys []string
		for k := range w {
			keys = append(keys, k)
			if _, ok := g[k]; !ok {
				return fmt.Errorf("%%s: vector has %%s, the decoder has no such field", path, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("%%s: decoder has %%s, the vector does not", path, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := zzCmp(path+"."+k, w[k], g[k]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%%s: harness cannot compare %%T", path, got)
	}
	return nil
}

func zzEnumName(s string) string {
	if s == "null" {
		return "NULL_VAL"
	}
	return s
}

// zzChars is a char array as the vectors write it: the bytes before the
// first NUL; a non-NUL byte after it is reported.
func zzChars(b []byte) string {
	for i, c := range b {
		if c == 0 {
			for _, r := range b[i:] {
				if r != 0 {
					return string(b) + " (non-NUL after NUL)"
				}
			}
			return string(b[:i])
		}
	}
	return string(b)
}

func zzChar(c byte) string {
	if c == 0 {
		return ""
	}
	return string(rune(c))
}

func zzI(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		zzFail("want a number, have %%v", v)
		return 0
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		zzFail("%%v", err)
	}
	return i
}

func zzU(v any) uint64 {
	n, ok := v.(json.Number)
	if !ok {
		zzFail("want a number, have %%v", v)
		return 0
	}
	i, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		zzFail("%%v", err)
	}
	return i
}

// zzF returns the float; NaN is Java's canonical NaN, as SBE writes it.
func zzF(v any, bits int) float64 {
	if s, ok := v.(string); ok && s == "NaN" {
		if bits == 32 {
			return float64(math.Float32frombits(0x7fc00000))
		}
		return math.Float64frombits(0x7ff8000000000000)
	}
	n, ok := v.(json.Number)
	if !ok {
		zzFail("want a number, have %%v", v)
		return 0
	}
	f, err := strconv.ParseFloat(string(n), bits)
	if err != nil {
		zzFail("%%v", err)
	}
	return f
}

func zzF32bits(v any) float32 {
	if s, ok := v.(string); ok && s == "NaN" {
		return math.Float32frombits(0x7fc00000)
	}
	return float32(zzF(v, 32))
}

// zzIsNull reports whether JSON value v is the null literal lit.
func zzIsNull(v any, lit string) bool {
	switch x := v.(type) {
	case json.Number:
		return string(x) == lit
	case string:
		return lit == "NaN" && x == "NaN"
	}
	return false
}

func zzStr(v any) string {
	s, ok := v.(string)
	if !ok {
		zzFail("want a string, have %%v", v)
	}
	return s
}

func zzCharByte(v any) byte {
	s := zzStr(v)
	if s == "" {
		return 0
	}
	return s[0]
}

func zzHex(v any) []byte {
	b, err := hex.DecodeString(zzStr(v))
	if err != nil {
		zzFail("%%v", err)
	}
	return b
}

func zzList(v any) []any {
	l, ok := v.([]any)
	if !ok {
		zzFail("want a list, have %%v", v)
	}
	return l
}

func zzObj(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		zzFail("want an object, have %%v", v)
	}
	return m
}

func zzHas(l []any, name string) bool {
	for _, x := range l {
		if x == name {
			return true
		}
	}
	return false
}

func zzSameBytes(got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("encoded %%d bytes, vector %%d; first difference at byte %%d\n  ours   %%x\n  vector %%x", len(got), len(want), i, got, want)
}
`

// harness emits the schema-specific part of the harness.
type harness struct {
	s *Schema
	b bytes.Buffer
}

func (h *harness) p(format string, args ...any) {
	fmt.Fprintf(&h.b, format, args...)
	h.b.WriteByte('\n')
}

// Harness returns the harness source for schema s in package pkg, gofmt'ed.
func Harness(s *Schema, pkg string) ([]byte, error) {
	h := &harness{s: s}
	h.b.WriteString(fmt.Sprintf(harnessRuntime, pkg))
	h.header()
	for _, t := range s.Types {
		h.typ(t)
	}
	h.p("func zzDispatch(b []byte, v *zzVec, enc bool) error {")
	h.p("switch v.TemplateID {")
	for _, m := range s.Messages {
		h.p("case %d: return zzCheck%s(b, v, enc)", m.ID, goName(m.Name))
	}
	h.p("}")
	h.p("return fmt.Errorf(\"no message with template id %%d\", v.TemplateID)")
	h.p("}")
	for _, m := range s.Messages {
		h.message(m)
	}
	src, err := format.Source(h.b.Bytes())
	if err != nil {
		return h.b.Bytes(), err
	}
	return src, nil
}

var standardHeader = map[string]bool{"blockLength": true, "templateId": true, "schemaId": true, "version": true}

func (h *harness) header() {
	hdr := goName(h.s.HeaderType.Name)
	h.p("func zzHeader(b []byte, v *zzVec) error {")
	h.p("if v.HeaderLength != %sEncodedLength { return fmt.Errorf(\"header length %%d, ours %%d\", v.HeaderLength, %sEncodedLength) }", hdr, hdr)
	h.p("c, err := Wrap%s(b, 0)", hdr)
	h.p("if err != nil { return err }")
	h.p("got := map[string]any{}")
	h.p("want := map[string]any{}")
	h.p("got[\"blockLength\"], want[\"blockLength\"] = uint64(c.BlockLength()), json.Number(strconv.Itoa(v.BlockLength))")
	h.p("got[\"templateId\"], want[\"templateId\"] = uint64(c.TemplateId()), json.Number(strconv.Itoa(v.TemplateID))")
	h.p("got[\"schemaId\"], want[\"schemaId\"] = uint64(c.SchemaId()), json.Number(strconv.Itoa(v.SchemaID))")
	h.p("got[\"version\"], want[\"version\"] = uint64(c.Version()), json.Number(strconv.Itoa(v.Version))")
	for _, m := range h.s.HeaderType.Members {
		if standardHeader[m.Name] {
			continue
		}
		h.p("got[%q] = %s", m.Name, h.value(m.Type, "c."+goName(m.Name), Required, nil))
		h.p("want[%q] = v.HeaderExtra[%q]", m.Name, m.Name)
	}
	h.p("return zzCmp(\"header\", want, got)")
	h.p("}")
	h.p("")
	h.p("func zzSetHeaderExtra(buf []byte, v *zzVec) {")
	h.p("c, _ := Wrap%s(buf, 0)", hdr)
	h.p("_ = c")
	for _, m := range h.s.HeaderType.Members {
		if standardHeader[m.Name] {
			continue
		}
		h.set(m.Type, "c.Set"+goName(m.Name), fmt.Sprintf("v.HeaderExtra[%q]", m.Name))
	}
	h.p("}")
	h.p("")
}

// conv is the expression turning scalar expression x of primitive p into
// the harness's comparable form.
func conv(p *Prim, x string) string {
	switch {
	case p.Name == "char":
		return "zzChar(" + x + ")"
	case p.Float && p.Size == 4:
		return "zzF32(" + x + ")"
	case p.Float:
		return "zzF64(" + x + ")"
	case p.Signed:
		return "int64(" + x + ")"
	}
	return "uint64(" + x + ")"
}

// value is the decode expression of a field or member of type t read by
// getter expression acc (without the call parentheses).
func (h *harness) value(t *Type, acc string, presence Presence, ref *EnumValue) string {
	if presence == Constant {
		switch {
		case ref != nil:
			return "zzEnumName(" + acc + "().String())"
		case t.Prim != nil && t.Prim.Name == "char":
			return acc + "()"
		}
		return conv(t.Prim, acc+"()")
	}
	switch {
	case t.Kind == KindComposite:
		return "zzComp" + goName(t.Name) + "(" + acc + "())"
	case t.Kind == KindEnum:
		return "zzEnumName(" + acc + "().String())"
	case t.Kind == KindSet:
		return "zzSet" + goName(t.Name) + "(" + acc + "())"
	case t.IsCharArray():
		return "zzChars(" + acc + "())"
	case t.Length > 1:
		return fmt.Sprintf("func() []any { r := []any{}; for i := 0; i < %d; i++ { r = append(r, %s) }; return r }()", t.Length, conv(t.Prim, acc+"(i)"))
	}
	return conv(t.Prim, acc+"()")
}

// setValue is the Go expression of type t (scalar) from JSON expression j.
func setValue(t *Type, j string) string {
	switch t.Kind {
	case KindEnum:
		return "zzEnum" + goName(t.Name) + "(" + j + ")"
	case KindSet:
		return "zzToSet" + goName(t.Name) + "(" + j + ")"
	}
	p := t.Prim
	switch {
	case p.Name == "char":
		return "zzCharByte(" + j + ")"
	case p.Float && p.Size == 4:
		return "zzF32bits(" + j + ")"
	case p.Float:
		return "zzF(" + j + ", 64)"
	case p.Signed:
		return p.GoType + "(zzI(" + j + "))"
	}
	return p.GoType + "(zzU(" + j + "))"
}

// set emits the encode statements for a field or member of type t through
// setter expression setter (without parentheses) from JSON expression j.
func (h *harness) set(t *Type, setter, j string) {
	switch {
	case t.Presence == Constant:
	case t.Kind == KindComposite:
		h.p("zzFail(%q)", "harness: composite "+t.Name+" set through "+setter)
	case t.IsCharArray():
		h.p("%sString(zzStr(%s))", setter, j)
	case t.Length > 1:
		h.p("for i, x := range zzList(%s) { %s(i, %s) }", j, setter, setValue(t, "x"))
	default:
		h.p("%s(%s)", setter, setValue(t, j))
	}
}

func (h *harness) typ(t *Type) {
	n := goName(t.Name)
	switch t.Kind {
	case KindEnum:
		h.p("func zzEnum%s(v any) %s {", n, n)
		h.p("switch zzStr(v) {")
		for _, e := range t.Values {
			h.p("case %q: return %s%s", e.Name, n, goName(e.Name))
		}
		h.p("case \"NULL_VAL\": return %sNullValue", n)
		h.p("}")
		h.p("zzFail(\"enum %s has no value %%v\", v)", t.Name)
		h.p("return %sNullValue", n)
		h.p("}")
	case KindSet:
		h.p("func zzSet%s(s %s) []any {", n, n)
		h.p("r := []any{}")
		for _, c := range t.Choices {
			h.p("if s.%s() { r = append(r, %q) }", goName(c.Name), c.Name)
		}
		h.p("return r")
		h.p("}")
		h.p("func zzToSet%s(v any) %s {", n, n)
		h.p("l := zzList(v)")
		h.p("var s %s", n)
		for _, c := range t.Choices {
			h.p("s = s.Set%s(zzHas(l, %q))", goName(c.Name), c.Name)
		}
		h.p("if len(l) != %s { zzFail(\"set %s: unknown choice in %%v\", l) }", "len(zzSet"+n+"(s))", t.Name)
		h.p("return s")
		h.p("}")
	case KindComposite:
		h.p("func zzComp%s(c %s) map[string]any {", n, n)
		h.p("m := map[string]any{}")
		for _, m := range t.Members {
			if m.Type.Kind == KindPrim && m.Type.Length == 0 {
				continue
			}
			h.p("m[%q] = %s", m.Name, h.value(m.Type, "c."+goName(m.Name), m.Type.Presence, nil))
		}
		h.p("return m")
		h.p("}")
		h.p("func zzSetComp%s(c %s, v any) {", n, n)
		h.p("f := zzObj(v)")
		h.p("_ = f")
		for _, m := range t.Members {
			if m.Type.Kind == KindPrim && m.Type.Length == 0 {
				continue
			}
			if m.Type.Kind == KindComposite {
				h.p("zzSetComp%s(c.%s(), f[%q])", goName(m.Type.Name), goName(m.Name), m.Name)
				continue
			}
			h.set(m.Type, "c.Set"+goName(m.Name), fmt.Sprintf("f[%q]", m.Name))
		}
		h.p("}")
	}
}

func (h *harness) message(m *Message) {
	n := goName(m.Name)
	hdr := goName(h.s.HeaderType.Name)
	h.p("func zzCheck%s(b []byte, v *zzVec, enc bool) error {", n)
	h.p("var d %sDecoder", n)
	h.p("if err := d.WrapForDecode(b, v.HeaderLength, v.BlockLength, v.Version); err != nil { return err }")
	h.p("got, err := zzRead%s(&d)", n)
	h.p("if err != nil { return fmt.Errorf(\"decode: %%w\", err) }")
	h.p("if err := zzCmp(\"fields\", v.Fields, got); err != nil { return fmt.Errorf(\"decode: %%w\", err) }")
	h.p("if d.EncodedLength() != len(b)-v.HeaderLength { return fmt.Errorf(\"decode: consumed %%d bytes of %%d after the header\", d.EncodedLength(), len(b)-v.HeaderLength) }")
	h.p("if !enc { return nil }")
	h.p("buf := make([]byte, 2*len(b)+4096)")
	h.p("var e %sEncoder", n)
	h.p("if err := e.WrapAndApplyHeader(buf, 0); err != nil { return fmt.Errorf(\"encode: %%w\", err) }")
	h.p("zzSetHeaderExtra(buf, v)")
	h.p("zzBad = nil")
	h.p("if err := zzWrite%s(&e, v.Fields); err != nil { return fmt.Errorf(\"encode: %%w\", err) }", n)
	h.p("if zzBad != nil { return fmt.Errorf(\"encode: %%w\", zzBad) }")
	h.p("if err := zzSameBytes(buf[:%sEncodedLength+e.EncodedLength()], b); err != nil { return fmt.Errorf(\"encode: %%w\", err) }", hdr)
	h.p("return nil")
	h.p("}")
	h.p("")
	h.block(&m.Block, n)
}

func (h *harness) block(b *Block, n string) {
	// Decode.
	h.p("func zzRead%s(d *%sDecoder) (map[string]any, error) {", n, n)
	h.p("m := map[string]any{}")
	for _, f := range b.Fields {
		acc := "d." + goName(f.Name)
		h.p("m[%q] = %s", f.Name, h.value(f.Type, acc, f.Presence, f.ValueRef))
		if f.SinceVersion > 0 && f.Presence != Constant && f.Type.Kind != KindComposite && !f.Type.IsCharArray() && f.Type.Length <= 1 {
			h.p("if d.st.version < %d && d.Has%s() { return nil, fmt.Errorf(\"%s: Has%s() at acting version %%d (since %d)\", d.st.version) }",
				f.SinceVersion, goName(f.Name), f.Name, goName(f.Name), f.SinceVersion)
		}
	}
	for _, g := range b.Groups {
		gn := goName(g.Name)
		h.p("{")
		h.p("g, err := d.%s()", gn)
		h.p("if err != nil { return nil, fmt.Errorf(\"group %s: %%w\", err) }", g.Name)
		h.p("l := []any{}")
		h.p("for g.HasNext() {")
		h.p("if _, err := g.Next(); err != nil { return nil, fmt.Errorf(\"group %s entry %%d: %%w\", len(l), err) }", g.Name)
		h.p("e, err := zzRead%s(g)", n+gn)
		h.p("if err != nil { return nil, fmt.Errorf(\"group %s entry %%d: %%w\", len(l), err) }", g.Name)
		h.p("l = append(l, e)")
		h.p("}")
		h.p("m[%q] = l", g.Name)
		h.p("}")
	}
	for _, dd := range b.Data {
		h.p("{")
		h.p("v, err := d.%s()", goName(dd.Name))
		h.p("if err != nil { return nil, fmt.Errorf(\"var data %s: %%w\", err) }", dd.Name)
		h.p("m[%q] = hex.EncodeToString(v)", dd.Name)
		h.p("}")
	}
	h.p("return m, nil")
	h.p("}")
	h.p("")
	// Encode.
	h.p("func zzWrite%s(e *%sEncoder, f map[string]any) error {", n, n)
	for _, fl := range b.Fields {
		if fl.Presence == Constant {
			continue
		}
		j := fmt.Sprintf("f[%q]", fl.Name)
		setter := "e." + goName(fl.Name)
		t := fl.Type
		switch {
		case t.Kind == KindComposite:
			h.p("zzSetComp%s(%s(), %s)", goName(t.Name), setter, j)
		case fl.Presence == Optional && t.Kind == KindPrim && t.Length <= 1:
			h.p("if zzIsNull(%s, %q) { %sNull() } else { %s(%s) }", j, t.Null, setter, setter, setValue(t, j))
		default:
			h.set(t, setter, j)
		}
	}
	for _, g := range b.Groups {
		gn := goName(g.Name)
		h.p("{")
		h.p("l := zzList(f[%q])", g.Name)
		h.p("g, err := e.%sCount(len(l))", gn)
		h.p("if err != nil { return fmt.Errorf(\"group %s: %%w\", err) }", g.Name)
		h.p("for _, x := range l {")
		h.p("if _, err := g.Next(); err != nil { return fmt.Errorf(\"group %s: %%w\", err) }", g.Name)
		h.p("if err := zzWrite%s(g, zzObj(x)); err != nil { return err }", n+gn)
		h.p("}")
		h.p("}")
	}
	for _, dd := range b.Data {
		h.p("if err := e.Put%s(zzHex(f[%q])); err != nil { return fmt.Errorf(\"var data %s: %%w\", err) }", goName(dd.Name), dd.Name, dd.Name)
	}
	h.p("return nil")
	h.p("}")
	h.p("")
	for _, g := range b.Groups {
		h.block(&g.Block, n+goName(g.Name))
	}
}
