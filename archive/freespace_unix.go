//go:build linux || darwin

package archive

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// osFreeBytes is statfs(2)'s f_bavail * f_bsize: the bytes an unprivileged
// user may still write in the file system holding dir.
func osFreeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("archive: statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
