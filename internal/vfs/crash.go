package vfs

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"syscall"
)

// CrashCloneConfig configures [MemFS.CrashClone].
type CrashCloneConfig struct {
	// UnsyncedDataPercent is the chance, in percent, that each unsynced
	// change survives the crash. It is clamped to [0, 100]; 0 keeps exactly
	// the durable state and 100 exactly the current state.
	UnsyncedDataPercent int
	// Rand draws the random choices. Nil means a source seeded at random,
	// which makes the crash impossible to reproduce.
	Rand *rand.Rand
}

// CrashClone returns a new MemFS holding what a restart after a crash at
// this instant could find, following the model in the package
// documentation. m itself is not changed.
func (m *MemFS) CrashClone(cfg CrashCloneConfig) *MemFS {
	c := crasher{
		pct:  min(max(cfg.UnsyncedDataPercent, 0), 100),
		rng:  cfg.Rand,
		done: map[*memNode]*memNode{},
	}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return &MemFS{root: c.clone(m.root)}
}

// crasher builds one crash clone.
type crasher struct {
	pct  int
	rng  *rand.Rand
	done map[*memNode]*memNode // original -> clone, so a node reached twice stays one node
}

// keep reports whether an unsynced change survives.
func (c *crasher) keep() bool {
	switch c.pct {
	case 0:
		return false
	case 100:
		return true
	}
	return c.rng.IntN(100) < c.pct
}

func (c *crasher) clone(n *memNode) *memNode {
	if cl, ok := c.done[n]; ok {
		return cl
	}
	cl := &memNode{dir: n.dir}
	c.done[n] = cl // before recursing: entries may lead back here
	if n.dir {
		c.cloneDir(n, cl)
	} else {
		c.cloneFile(n, cl)
	}
	return cl
}

// cloneDir replays a prefix of the unsynced entry changes on the durable
// entries, then clones what they name.
func (c *crasher) cloneDir(n, cl *memNode) {
	entries := maps.Clone(n.durable)
	if entries == nil {
		entries = map[string]*memNode{}
	}
	for _, o := range n.dirLog {
		if !c.keep() {
			break
		}
		o.apply(entries)
	}
	cl.children = make(map[string]*memNode, len(entries))
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		cl.children[name] = c.clone(entries[name])
	}
	cl.durable = maps.Clone(cl.children)
}

// cloneFile replays a random subset of the unsynced changes on the synced
// contents, then cuts or extends the result to a length between the synced
// and the current one.
func (c *crasher) cloneFile(n, cl *memNode) {
	var img []byte
	switch {
	case c.pct == 100 || len(n.fileLog) == 0:
		img = bytes.Clone(n.data)
	case c.pct == 0:
		img = bytes.Clone(n.synced)
	default:
		img = bytes.Clone(n.synced)
		for i := range n.fileLog {
			if c.keep() {
				img = n.fileLog[i].apply(img)
			}
		}
		lo, hi := int64(len(n.synced)), int64(len(n.data))
		if lo > hi {
			lo, hi = hi, lo
		}
		img = resize(img, lo+c.rng.Int64N(hi-lo+1))
	}
	cl.data = img
	cl.synced = bytes.Clone(img)
}

// CutFile cuts the named file to size bytes as a crash could have torn it:
// both its current contents and its contents as of the last sync lose
// everything from size on, so no later CrashClone brings those bytes back.
// Unsynced changes below size stay unsynced. It is meant for tests that need
// a torn tail at an exact byte; size must be between 0 and the current
// length.
func (m *MemFS) CutFile(name string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walkLocked("cut", name, split(name))
	if err != nil {
		return err
	}
	if n.dir {
		return pathErr("cut", name, syscall.EISDIR)
	}
	if size < 0 || size > int64(len(n.data)) {
		return pathErr("cut", name, syscall.EINVAL)
	}
	if int64(len(n.synced)) > size {
		n.synced = n.synced[:size]
	}
	if len(n.fileLog) == 0 {
		n.data = n.data[:size] // synced == data still holds
		return nil
	}
	n.changeFileLocked(fileOp{kind: opTruncate, off: size})
	return nil
}
