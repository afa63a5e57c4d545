package retention

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// cowFS: writes, creates, renames and removes through the view are seen
// by the view and never reach the base.
func TestCOW(t *testing.T) {
	base := vfs.NewMem()
	if err := base.MkdirAll("d"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		f, err := base.Create("d/" + n)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("base "+n), 0)
		f.Close()
	}
	want, _ := vfs.Digests(base, "d")
	c := newCOW(base)
	f, err := c.OpenRW("d/a")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("VIEW"), 0)
	f.Close()
	if _, err := c.Create("d/b"); !errors.Is(err, vfs.ErrExist) {
		t.Fatalf("create of a base file: %v", err)
	}
	nf, err := c.Create("d/new")
	if err != nil {
		t.Fatal(err)
	}
	nf.Close()
	if err := c.Rename("d/b", "d/b2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("d/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat("d/c"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("removed file: %v", err)
	}
	if _, err := c.Open("d/b"); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("renamed file: %v", err)
	}
	names, err := c.List("d")
	if err != nil || !slices.Equal(names, []string{"a", "b2", "new"}) {
		t.Fatalf("list %v %v", names, err)
	}
	b, err := vfs.ReadFile(c, "d/a")
	if err != nil || string(b) != "VIEW a" {
		t.Fatalf("read through the view: %q %v", b, err)
	}
	if b, _ := vfs.ReadFile(c, "d/b2"); string(b) != "base b" {
		t.Fatalf("renamed file holds %q", b)
	}
	if got, _ := vfs.Digests(base, "d"); !maps.Equal(got, want) {
		t.Fatalf("the base changed: %v, was %v", got, want)
	}
}
