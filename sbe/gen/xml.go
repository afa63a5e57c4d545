package gen

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// node is one XML element with the line it starts on. The generator reads
// the whole schema into a tree of nodes first, so every later error can name
// the element and its line.
type node struct {
	name     string // local name, namespace prefix dropped
	attrs    map[string]string
	children []*node
	text     string
	line     int
}

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
