#include "textflag.h"
// Cache prefetches for the walk (see prefetch.go): PREFETCHT0 on every
// 64-byte line of the n bytes from p. A prefetch never faults and changes
// no state but the caches.

// func prefetchLevel(p *level, n int)
TEXT ·prefetchLevel(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop0:
	CMPQ CX, $0
	JLE  done0
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JMP  loop0
done0:
	RET

// func prefetchChunks(p *chunk, n int)
TEXT ·prefetchChunks(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop1:
	CMPQ CX, $0
	JLE  done1
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JMP  loop1
done1:
	RET

// func prefetchOrders(p *order, n int)
TEXT ·prefetchOrders(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
loop2:
	CMPQ CX, $0
	JLE  done2
	PREFETCHT0 (AX)
	ADDQ $64, AX
	SUBQ $64, CX
	JMP  loop2
done2:
	RET

// func prefetchSlot(p *indexSlot)
TEXT ·prefetchSlot(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET
