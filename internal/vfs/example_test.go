package vfs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/matchlog/matchlog/internal/vfs"
)

// A file whose data is synced but whose directory is not loses its entry in
// a crash; SyncDir makes it durable.
func ExampleMemFS_CrashClone() {
	fs := vfs.NewMem()
	f, _ := fs.Create("/log")
	_, _ = f.WriteAt([]byte("synced"), 0)
	_ = f.Sync()
	_, _ = f.WriteAt([]byte("+unsynced"), 6)
	_ = f.Close()

	lost := fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 0})
	_, err := lost.Stat("/log")
	fmt.Println(err)

	_ = fs.SyncDir("/")
	c := fs.CrashClone(vfs.CrashCloneConfig{UnsyncedDataPercent: 0, Rand: rand.New(rand.NewPCG(1, 2))})
	size, _ := c.Stat("/log")
	fmt.Println("after SyncDir:", size, "bytes")
	// Output:
	// vfs: stat /log: file does not exist
	// after SyncDir: 6 bytes
}

// A sweep fails operation i of a workload for i = 0, 1, 2, … until a run
// completes without reaching its injection.
func ExampleInjector() {
	workload := func(fs vfs.FS) error {
		f, err := fs.Create("/f")
		if err != nil {
			return err
		}
		if _, err := f.WriteAt([]byte("x"), 0); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
	for i := int64(0); ; i++ {
		inj := vfs.NewInjector(vfs.NewMem(), vfs.AllOps, i)
		err := workload(inj)
		if inj.Injected() == nil {
			fmt.Println("clean run after", i, "failure points:", err)
			break
		}
		fmt.Println(errors.Is(err, vfs.ErrInjected), err)
	}
	// Output:
	// true vfs: injected error: create /f (operation 0)
	// true vfs: injected error: write /f (operation 1)
	// true vfs: injected error: sync /f (operation 2)
	// true vfs: injected error: close /f (operation 3)
	// clean run after 4 failure points: <nil>
}
