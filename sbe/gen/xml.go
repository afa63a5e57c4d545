package gen

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// node is one XML element with the line it starts on. The generator reads
// the whole schema into a tree of nodes first, so every later error can name
// the element and its line.
type node struct {
	name     string // local name, namespace prefix dropped; xiInclude for an XInclude
	attrs    map[string]string
	children []*node
	text     string
	line     int
	file     string // the file it was read from, if not the schema's own (an XInclude)
}

// XIncludeNamespace is the namespace of XInclude's include element.
const XIncludeNamespace = "http://www.w3.org/2001/XInclude"

// xiInclude is the node name of an XInclude include element: no SBE
// element has a name with a colon.
const xiInclude = "xi:include"

func (n *node) attr(k string) string { return n.attrs[k] }

func (n *node) has(k string) bool {
	_, ok := n.attrs[k]
	return ok
}

// where names the element for an error message: `<field name="x">`.
func (n *node) where() string {
	if nm := n.attr("name"); nm != "" {
		return fmt.Sprintf("<%s name=%q>", n.name, nm)
	}
	return fmt.Sprintf("<%s>", n.name)
}

func parseTree(r io.Reader) (*node, error) {
	d := xml.NewDecoder(r)
	var stack []*node
	var root *node
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sbe/gen: xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attrs: map[string]string{}, line: line}
			if t.Name.Space == XIncludeNamespace && t.Name.Local == "include" {
				n.name = xiInclude
			}
			// line was read before Token: the position just past the
			// previous token, which is where this start tag begins.
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				n.attrs[a.Name.Local] = strings.TrimSpace(a.Value)
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("sbe/gen: xml: no root element")
	}
	return root, nil
}

// maxIncludeDepth bounds nested XIncludes (and so include cycles).
const maxIncludeDepth = 16

// expandIncludes replaces every XInclude include element under n by the
// root element of the file its href names, relative to dir, recursively,
// as an XInclude-aware parser does (real SBE with sbe.xinclude.aware).
// Only parse="xml" (the default) without xpointer is supported.
func expandIncludes(n *node, dir string, depth int, read func(string) ([]byte, error)) error {
	for i, c := range n.children {
		if c.name != xiInclude {
			if err := expandIncludes(c, dir, depth, read); err != nil {
				return err
			}
			continue
		}
		href := c.attr("href")
		switch {
		case href == "":
			return errAt(c, "XInclude without href")
		case c.attr("parse") != "" && c.attr("parse") != "xml":
			return errAt(c, "XInclude parse=%q is not supported (only xml)", c.attr("parse"))
		case c.has("xpointer"):
			return errAt(c, "XInclude xpointer is not supported: include a whole file")
		case depth >= maxIncludeDepth:
			return errAt(c, "XIncludes nested deeper than %d (a cycle?)", maxIncludeDepth)
		}
		path := href
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, filepath.FromSlash(href))
		}
		b, err := read(path)
		if err != nil {
			return errAt(c, "XInclude: %v", err)
		}
		inc, err := parseTree(bytes.NewReader(b))
		if err != nil {
			return errAt(c, "XInclude %s: %v", href, err)
		}
		setFile(inc, path)
		if err := expandIncludes(inc, filepath.Dir(path), depth+1, read); err != nil {
			return err
		}
		n.children[i] = inc
	}
	return nil
}

func setFile(n *node, file string) {
	n.file = file
	for _, c := range n.children {
		setFile(c, file)
	}
}

// findInclude returns the first XInclude element under n, or nil.
func findInclude(n *node) *node {
	for _, c := range n.children {
		if c.name == xiInclude {
			return c
		}
		if f := findInclude(c); f != nil {
			return f
		}
	}
	return nil
}
