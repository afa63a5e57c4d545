//go:build !(linux || darwin)

package archive

func osFreeBytes(string) (uint64, error) { return 0, ErrFreeSpaceUnsupported }
