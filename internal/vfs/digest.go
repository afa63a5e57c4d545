package vfs

import (
	"fmt"
	"hash/fnv"
)

// Digests returns, for every entry of the directories dirs, its length and
// FNV-1a digest ("LEN:HEX"), or "not a file" for an entry that cannot be
// read as one; a missing directory has no entries. Two results are equal
// exactly when the directories hold the same files with the same bytes:
// what the tests that require "the directory as it was found" compare.
func Digests(fsys FS, dirs ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, d := range dirs {
		names, err := fsys.List(d)
		if err != nil {
			continue
		}
		for _, name := range names {
			p := fsys.Join(d, name)
			size, serr := fsys.Stat(p)
			f, err := fsys.Open(p)
			if serr != nil || err != nil {
				out[p] = "not a file"
				continue
			}
			b := make([]byte, size)
			_, err = f.ReadAt(b, 0)
			f.Close()
			if err != nil && size > 0 {
				return nil, fmt.Errorf("vfs: digest of %s: %w", p, err)
			}
			h := fnv.New64a()
			h.Write(b)
			out[p] = fmt.Sprintf("%d:%016x", size, h.Sum64())
		}
	}
	return out, nil
}
