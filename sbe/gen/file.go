package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ParseFile parses and validates the schema in file; errors name the file
// (or the included file they are in). XInclude include elements
// (namespace [XIncludeNamespace], parse="xml", no xpointer) are replaced
// by the root element of the file their href names, relative to the
// including file, as real SBE's parser does with sbe.xinclude.aware: the
// common way to share types between schemas.
func ParseFile(file string) (*Schema, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var s *Schema
	root, err := parseTree(bytes.NewReader(b))
	if err == nil {
		err = expandIncludes(root, filepath.Dir(file), 0, os.ReadFile)
	}
	if err == nil {
		s, err = parseSchema(root)
	}
	var se *Error
	if errors.As(err, &se) {
		if se.File == "" {
			se.File = file
		}
		return nil, se
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// GenerateFile generates the codecs of schema into dir/PKG_gen.go and
// returns that path. The header names schema as given, so a relative path
// keeps the output reproducible. The file is written only if it changed.
func GenerateFile(schema, dir, pkg string) (string, error) {
	s, err := ParseFile(schema)
	if err != nil {
		return "", err
	}
	if pkg == "" {
		pkg = DefaultPackage(s)
	}
	src, err := Generate(s, Options{Package: pkg, Source: filepath.ToSlash(schema)})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, pkg+"_gen.go")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, src) {
		return path, nil
	}
	return path, os.WriteFile(path, src, 0o644)
}
