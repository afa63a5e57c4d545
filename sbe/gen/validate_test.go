package gen

import (
	"errors"
	"strings"
	"testing"
)

// schemaWith wraps types and messages in a schema with the standard header
// and group dimension composites, starting the types on line 3.
func schemaWith(attrs, types, messages string) string {
	if attrs == "" {
		attrs = `id="1" version="2"`
	}
	return `<?xml version="1.0"?>
<sbe:messageSchema xmlns:sbe="http://fixprotocol.io/2016/sbe" package="t" ` + attrs + `>
<types>
<composite name="messageHeader"><type name="blockLength" primitiveType="uint16"/><type name="templateId" primitiveType="uint16"/><type name="schemaId" primitiveType="uint16"/><type name="version" primitiveType="uint16"/></composite>
<composite name="groupSizeEncoding"><type name="blockLength" primitiveType="uint16"/><type name="numInGroup" primitiveType="uint16"/></composite>
<composite name="varData"><type name="length" primitiveType="uint32"/><type name="varData" primitiveType="uint8" length="0"/></composite>
` + types + `
</types>
` + messages + `
</sbe:messageSchema>`
}

// TestRejects has one case per validation rule: each bad schema must fail
// with an *Error naming the element and the line it is on.
func TestRejects(t *testing.T) {
	cases := []struct {
		name, attrs, types, msgs string
		line                     int // line of the offending element
		want                     string
	}{
		{"bad byteOrder", `id="1" byteOrder="middleEndian"`, "", "", 2, "bad byteOrder"},
		{"missing schema id", `version="1"`, "", "", 2, "missing attribute id"},
		{"unknown headerType", `id="1" headerType="nope"`, "", "", 2, `headerType "nope" is not defined`},
		{"unknown field type", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int99"/>
</sbe:message>`, 10, `unknown type "int99"`},
		{"unknown ref", "", `<composite name="C">
<ref name="r" type="Nope"/>
</composite>`, "", 8, `unknown type "Nope"`},
		{"unknown primitiveType", "", `<type name="T" primitiveType="int128"/>`, "", 7, "unknown primitiveType"},
		{"duplicate type", "", `<type name="T" primitiveType="int8"/>
<type name="T" primitiveType="int8"/>`, "", 8, "duplicate type name"},
		{"duplicate template id", "", "", `<sbe:message name="A" id="1"/>
<sbe:message name="B" id="1"/>`, 10, "duplicate message id 1"},
		{"duplicate message name", "", "", `<sbe:message name="A" id="1"/>
<sbe:message name="A" id="2"/>`, 10, "duplicate message name"},
		{"duplicate field id", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int8"/>
<field name="b" id="1" type="int8"/>
</sbe:message>`, 11, "duplicate field id 1"},
		{"duplicate field name", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int8"/>
<field name="a" id="2" type="int8"/>
</sbe:message>`, 11, "duplicate name"},
		{"overlapping offset", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int64" offset="0"/>
<field name="b" id="2" type="int8" offset="4"/>
</sbe:message>`, 11, "overlaps the previous field"},
		{"out-of-order offset", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int8" offset="8"/>
<field name="b" id="2" type="int8" offset="2"/>
</sbe:message>`, 11, "out of order"},
		{"overlapping composite member", "", `<composite name="C">
<type name="a" primitiveType="int32"/>
<type name="b" primitiveType="int32" offset="2"/>
</composite>`, "", 9, "overlaps the previous member"},
		{"blockLength too small", "", "", `<sbe:message name="M" id="1" blockLength="4">
<field name="a" id="1" type="int64"/>
</sbe:message>`, 9, "blockLength 4 is smaller than the fields (8 bytes)"},
		{"group blockLength too small", "", "", `<sbe:message name="M" id="1">
<group name="g" id="1" blockLength="1">
<field name="a" id="1" type="int16"/>
</group>
</sbe:message>`, 10, "blockLength 1 is smaller"},
		{"field after group", "", "", `<sbe:message name="M" id="1">
<group name="g" id="1"/>
<field name="a" id="2" type="int8"/>
</sbe:message>`, 11, "field after a repeating group"},
		{"field after data", "", "", `<sbe:message name="M" id="1">
<data name="d" id="1" type="varData"/>
<field name="a" id="2" type="int8"/>
</sbe:message>`, 11, "field after var data"},
		{"group after data", "", "", `<sbe:message name="M" id="1">
<data name="d" id="1" type="varData"/>
<group name="g" id="2"/>
</sbe:message>`, 11, "group after var data"},
		{"unknown dimensionType", "", "", `<sbe:message name="M" id="1">
<group name="g" id="1" dimensionType="dims"/>
</sbe:message>`, 10, `unknown dimensionType "dims"`},
		{"dimension without numInGroup", "", `<composite name="dims"><type name="blockLength" primitiveType="uint16"/></composite>`, `<sbe:message name="M" id="1">
<group name="g" id="1" dimensionType="dims"/>
</sbe:message>`, 7, `no "numInGroup" member`},
		{"data type not a var data composite", "", "", `<sbe:message name="M" id="1">
<data name="d" id="1" type="groupSizeEncoding"/>
</sbe:message>`, 10, "is not a var data composite"},
		{"bad presence", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int8" presence="sometimes"/>
</sbe:message>`, 10, "bad presence"},
		{"constant without value", "", `<type name="K" primitiveType="int8" presence="constant"/>`, "", 7, "constant type has no value"},
		{"bad valueRef", "", `<enum name="E" encodingType="uint8"><validValue name="A">1</validValue></enum>`, `<sbe:message name="M" id="1">
<field name="a" id="1" type="E" presence="constant" valueRef="E.B"/>
</sbe:message>`, 10, "no such enum value"},
		{"enum value does not fit", "", `<enum name="E" encodingType="uint8">
<validValue name="A">300</validValue>
</enum>`, "", 8, "does not fit uint8"},
		{"enum value is null", "", `<enum name="E" encodingType="uint8">
<validValue name="A">255</validValue>
</enum>`, "", 8, "is the null value"},
		{"duplicate enum value", "", `<enum name="E" encodingType="uint8">
<validValue name="A">1</validValue>
<validValue name="B">1</validValue>
</enum>`, "", 9, "duplicate enum value"},
		{"set bit out of range", "", `<set name="S" encodingType="uint8">
<choice name="a">8</choice>
</set>`, "", 8, "not in [0, 8)"},
		{"set on a signed type", "", `<set name="S" encodingType="int8"/>`, "", 7, "not allowed here"},
		{"sinceVersion above schema version", "", "", `<sbe:message name="M" id="1">
<field name="a" id="1" type="int8" sinceVersion="3"/>
</sbe:message>`, 10, "above the schema version 2"},
		{"name collides with a group method", "", "", `<sbe:message name="M" id="1">
<group name="g" id="1">
<field name="next" id="1" type="int8"/>
</group>
</sbe:message>`, 11, "collides with a generated method"},
		{"field names meeting in Go", "", "", `<sbe:message name="M" id="1">
<field name="a_b" id="1" type="int8"/>
<field name="aB" id="2" type="int8"/>
</sbe:message>`, 11, `becomes the Go name AB, as "a_b" at line 10 does`},
		{"enum values meeting in Go", "", `<enum name="E" encodingType="uint8"><validValue name="A_B">1</validValue><validValue name="AB">2</validValue></enum>`, "", 7,
			`value "AB" of enum "E" generates the Go identifier EAB, as value "A_B" of enum "E"`},
		{"type names meeting in Go", "", `<composite name="side"><type name="x" primitiveType="int8"/></composite>
<enum name="Side" encodingType="uint8"><validValue name="B">1</validValue></enum>`, "", 8, `type "Side" generates the Go identifier Side, as type "side"`},
		{"group types meeting message types in Go", "", "", `<sbe:message name="M" id="1">
<group name="legs" id="1"/>
</sbe:message>
<sbe:message name="MLegs" id="2"/>`, 12, `generates the Go identifier MLegsEncoder`},
		{"self-referencing composite", "", `<composite name="C">
<ref name="me" type="C"/>
</composite>`, "", 7, "refers to itself"},
		{"template id does not fit the header", "", "", `<sbe:message name="M" id="70000"/>`, 9, "templateId 70000 does not fit messageHeader.templateId"},
		{"schema id does not fit the header", `id="65536"`, "", "", 2, "schemaId 65536 does not fit"},
		{"group block does not fit its dimension", "", `<composite name="small"><type name="blockLength" primitiveType="uint8"/><type name="numInGroup" primitiveType="uint8"/></composite>`, `<sbe:message name="M" id="1">
<group name="g" id="1" dimensionType="small" blockLength="300"/>
</sbe:message>`, 10, "blockLength 300 does not fit small.blockLength (uint8)"},
		{"missing field id", "", "", `<sbe:message name="M" id="1">
<field name="a" type="int8"/>
</sbe:message>`, 10, "missing attribute id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(schemaWith(c.attrs, c.types, c.msgs)))
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *gen.Error", err)
			}
			if !strings.Contains(se.Msg, c.want) || se.Line != c.line {
				t.Fatalf("err = %v, want line %d and %q", err, c.line, c.want)
			}
			if !strings.Contains(se.Msg, "<") {
				t.Fatalf("err = %v does not name the element", err)
			}
		})
	}
}

func TestRejectsBadXML(t *testing.T) {
	if _, err := Parse(strings.NewReader("<messageSchema id='1'><types>")); err == nil {
		t.Fatal("truncated XML parsed")
	}
	if _, err := Parse(strings.NewReader("<schema/>")); err == nil {
		t.Fatal("wrong root element parsed")
	}
}

// TestMessageMethodNamesAllowedInMessages checks a field may share a name
// with a group method (Aeron's SnapshotMarker has a field "index").
func TestMessageMethodNamesAllowedInMessages(t *testing.T) {
	_, err := Parse(strings.NewReader(schemaWith("", "", `<sbe:message name="M" id="1">
<field name="index" id="1" type="int32"/>
<field name="count" id="2" type="int32"/>
</sbe:message>`)))
	if err != nil {
		t.Fatal(err)
	}
}
