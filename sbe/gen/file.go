package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ParseFile parses and validates the schema in file; errors name the file.
func ParseFile(file string) (*Schema, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	s, err := Parse(bytes.NewReader(b))
	var se *Error
	if errors.As(err, &se) {
		se.File = file
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
