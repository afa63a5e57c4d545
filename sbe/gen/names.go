package gen

import "fmt"

// goNameKey prefixes the Go name of an element in a block's name index,
// next to the element names themselves (which have no NUL).
const goNameKey = "\x00"

// checkGoNames fails when two elements of the schema would generate the
// same package-level Go identifier (goName drops underscores and
// capitalises, so "A_B" and "AB", or types "side" and "Side", meet), or two
// values of an enum or choices of a set the same constant: the generated
// code would not compile. The error names both elements.
func (s *Schema) checkGoNames() error {
	seen := map[string]string{}
	for _, id := range []string{"SchemaID", "SchemaVersion", "ErrShortBuffer", "ErrCount", "ErrTooLong", "ErrHeader"} {
		seen[id] = "the generated " + id
	}
	claim := func(id string, line int, where, what string) error {
		if prev, ok := seen[id]; ok {
			return &Error{Line: line, Msg: fmt.Sprintf("%s: %s generates the Go identifier %s, as %s does: rename one", where, what, id, prev)}
		}
		seen[id] = fmt.Sprintf("%s (line %d)", what, line)
		return nil
	}
	for _, t := range s.Types {
		n := goName(t.Name)
		what := fmt.Sprintf("type %q", t.Name)
		ids := [][2]string{{n, what}}
		switch t.Kind {
		case KindEnum:
			ids = append(ids, [2]string{n + "NullValue", what})
			for _, v := range t.Values {
				ids = append(ids, [2]string{n + goName(v.Name), fmt.Sprintf("value %q of enum %q", v.Name, t.Name)})
			}
		case KindSet:
			for _, c := range t.Choices {
				ids = append(ids, [2]string{n + goName(c.Name), fmt.Sprintf("choice %q of set %q", c.Name, t.Name)})
			}
		case KindComposite:
			ids = append(ids, [2]string{n + "EncodedLength", what}, [2]string{"Wrap" + n, what})
		default:
			continue // a named primitive type generates nothing
		}
		where := fmt.Sprintf("<type name=%q>", t.Name)
		if t.n != nil {
			where = t.n.where()
		}
		for _, id := range ids {
			if err := claim(id[0], t.Line, where, id[1]); err != nil {
				return err
			}
		}
	}
	var block func(b *Block, n, elem string) error
	block = func(b *Block, n, elem string) error {
		what := fmt.Sprintf("%s %q", elem, b.Name)
		where := fmt.Sprintf("<%s name=%q>", elem, b.Name)
		for _, id := range []string{n + "Encoder", n + "Decoder", n + "BlockLength"} {
			if err := claim(id, b.Line, where, what); err != nil {
				return err
			}
		}
		for _, g := range b.Groups {
			if err := block(&g.Block, n+goName(g.Name), "group"); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range s.Messages {
		n := goName(m.Name)
		if err := claim(n+"TemplateID", m.Line, fmt.Sprintf("<message name=%q>", m.Name), fmt.Sprintf("message %q", m.Name)); err != nil {
			return err
		}
		if err := block(&m.Block, n, "message"); err != nil {
			return err
		}
	}
	return nil
}
