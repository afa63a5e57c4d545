//go:build !amd64

package engine

// Without a prefetch instruction to call, the walk's prefetches do nothing.

func prefetchLevel(*level, int)  {}
func prefetchChunks(*chunk, int) {}
func prefetchOrders(*order, int) {}
func prefetchSlot(*indexSlot)    {}
