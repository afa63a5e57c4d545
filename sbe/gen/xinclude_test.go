package gen

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	xiTypes = `<?xml version="1.0" encoding="UTF-8"?>
<types>
    <composite name="messageHeader">
        <type name="blockLength" primitiveType="uint16"/>
        <type name="templateId" primitiveType="uint16"/>
        <type name="schemaId" primitiveType="uint16"/>
        <type name="version" primitiveType="uint16"/>
    </composite>
    <enum name="Side" encodingType="uint8">
        <validValue name="Buy">1</validValue>
        <validValue name="Sell">2</validValue>
    </enum>
</types>
`
	xiMessages = `<?xml version="1.0" encoding="UTF-8"?>
<sbe:message xmlns:sbe="http://fixprotocol.io/2016/sbe" name="Order" id="1">
    <field name="side" id="1" type="Side"/>
    <field name="qty" id="2" type="int64"/>
</sbe:message>
`
	xiSchemaHead = `<?xml version="1.0" encoding="UTF-8"?>
<sbe:messageSchema xmlns:sbe="http://fixprotocol.io/2016/sbe" xmlns:xi="http://www.w3.org/2001/XInclude" package="xi" id="5" version="1">
`
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestXInclude: ParseFile splices the files XIncludes name (relative to the
// including file, nested) as an XInclude-aware parser does, and the codecs
// are those of the same schema written in one file; Parse, with no file to
// resolve against, refuses an XInclude and says to use ParseFile.
func TestXInclude(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"main.xml":         xiSchemaHead + `<xi:include href="common/types.xml"/>` + "\n" + `<xi:include href="order.xml"/>` + "\n</sbe:messageSchema>\n",
		"common/types.xml": xiTypes,
		"order.xml":        xiMessages,
		"inline.xml": xiSchemaHead + strings.TrimPrefix(xiTypes, `<?xml version="1.0" encoding="UTF-8"?>`+"\n") +
			strings.TrimPrefix(xiMessages, `<?xml version="1.0" encoding="UTF-8"?>`+"\n") + "</sbe:messageSchema>\n",
	})
	s, err := ParseFile(filepath.Join(dir, "main.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 1 || s.Messages[0].Name != "Order" || s.HeaderType == nil || s.types["Side"] == nil {
		t.Fatalf("included schema: %d messages, types %v", len(s.Messages), s.types)
	}
	inline, err := ParseFile(filepath.Join(dir, "inline.xml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Generate(s, Options{Package: "xi", Source: "x.xml"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(inline, Options{Package: "xi", Source: "x.xml"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("codecs of the schema with XIncludes differ from those of the same schema in one file")
	}
	main, err := os.ReadFile(filepath.Join(dir, "main.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(bytes.NewReader(main)); err == nil || !strings.Contains(err.Error(), "use ParseFile") {
		t.Errorf("Parse of a schema with an XInclude: %v; want a refusal naming ParseFile", err)
	}
}

// TestXIncludeErrors: an error inside an included file names that file
// and its line; a missing file, a text include, an xpointer and a cycle
// are refused naming the include.
func TestXIncludeErrors(t *testing.T) {
	badTypes := strings.Replace(xiTypes, `encodingType="uint8"`, `encodingType="uint9"`, 1)
	for _, c := range []struct {
		name, include string
		files         map[string]string
		want          string
	}{
		{"error in the included file", `<xi:include href="types.xml"/>`, map[string]string{"types.xml": badTypes}, "types.xml:9:"},
		{"missing file", `<xi:include href="nope.xml"/>`, nil, "nope.xml"},
		{"text", `<xi:include href="types.xml" parse="text"/>`, map[string]string{"types.xml": xiTypes}, `parse="text" is not supported`},
		{"xpointer", `<xi:include href="types.xml" xpointer="x"/>`, map[string]string{"types.xml": xiTypes}, "xpointer is not supported"},
		{"cycle", `<xi:include href="loop.xml"/>`, map[string]string{"loop.xml": `<types xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="loop.xml"/></types>`}, "nested deeper than 16"},
		{"no href", `<xi:include/>`, nil, "without href"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"main.xml": xiSchemaHead + c.include + "\n</sbe:messageSchema>\n"}
			for k, v := range c.files {
				files[k] = v
			}
			dir := writeFiles(t, files)
			_, err := ParseFile(filepath.Join(dir, "main.xml"))
			var se *Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want a schema error containing %q", err, c.want)
			}
		})
	}
}
