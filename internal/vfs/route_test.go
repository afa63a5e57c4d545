package vfs_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

func TestRoute(t *testing.T) {
	base, alt := vfs.NewMem(), vfs.NewMem()
	r := &vfs.Route{Base: base, Alt: alt, Match: func(n string) bool { return strings.HasSuffix(n, ".alt") }}
	if err := r.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"d/a", "d/b.alt", "d/c"} {
		f, err := r.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte(n), 0)
		f.Close()
	}
	if _, err := base.Stat("d/b.alt"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("matched file on base: %v", err)
	}
	if n, err := alt.Stat("d/b.alt"); err != nil || n != int64(len("d/b.alt")) {
		t.Fatalf("matched file on alt: %d %v", n, err)
	}
	got, err := r.List("d")
	if err != nil || !slices.Equal(got, []string{"a", "b.alt", "c"}) {
		t.Fatalf("list %v %v", got, err)
	}
	if err := r.Rename("d/a", "d/a.alt"); err == nil {
		t.Fatal("rename across the two file systems accepted")
	}
	if err := r.SyncDir("d"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("d/b.alt"); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.List("d"); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after remove: %v", got)
	}
}

func TestRebase(t *testing.T) {
	m := vfs.NewMem()
	r := &vfs.Rebase{FS: m, Root: "root"}
	if err := r.MkdirAll("a/b"); err != nil {
		t.Fatal(err)
	}
	f, err := r.Create("a/b/f")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := m.Stat("root/a/b/f"); err != nil {
		t.Fatalf("file not under the root: %v", err)
	}
	if got, err := r.List("a/b"); err != nil || !slices.Equal(got, []string{"f"}) {
		t.Fatalf("list %v %v", got, err)
	}
	if err := r.Rename("a/b/f", "a/g"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Stat("a/g"); err != nil {
		t.Fatal(err)
	}
}
