package engine

// Prefetches (prefetch_amd64.s): each asks the CPU to bring the n bytes
// from p into its caches without waiting for them, so a walk can request a
// level's memory a few levels before it reads it. They have no effect on
// the program's state.

//go:noescape
func prefetchLevel(p *level, n int)

//go:noescape
func prefetchChunks(p *chunk, n int)

//go:noescape
func prefetchOrders(p *order, n int)

// prefetchSlot asks for the cache line holding *p (one prefetch, no loop).
//
//go:noescape
func prefetchSlot(p *indexSlot)
