#include "textflag.h"

// hashRun8 (see hash_amd64.go): the digests of HashResting for n >= 1
// consecutive orders, eight lanes at a time in AVX-512 registers. Each
// group of eight orders (256 bytes: pa, sk, id, qty each) is loaded with
// masks that zero the lanes past n (a masked-off lane never faults), moved
// into one register a field by four two-table permutes, and carried through
// the digest's seven mixes and finish lane by lane; the accounts come by a
// masked gather at the clamped dense numbers. The lanes' digests are added
// with the lane mask, so lanes past n add nothing.

// Permute tables: with two orders a register (pa sk id qty pa sk id qty),
// idxPS picks pa and sk of four orders, idxIQ id and qty; idxLo and idxHi
// join the four-order halves of two registers.
DATA hashidx<>+0(SB)/8, $0
DATA hashidx<>+8(SB)/8, $4
DATA hashidx<>+16(SB)/8, $8
DATA hashidx<>+24(SB)/8, $12
DATA hashidx<>+32(SB)/8, $1
DATA hashidx<>+40(SB)/8, $5
DATA hashidx<>+48(SB)/8, $9
DATA hashidx<>+56(SB)/8, $13
DATA hashidx<>+64(SB)/8, $2
DATA hashidx<>+72(SB)/8, $6
DATA hashidx<>+80(SB)/8, $10
DATA hashidx<>+88(SB)/8, $14
DATA hashidx<>+96(SB)/8, $3
DATA hashidx<>+104(SB)/8, $7
DATA hashidx<>+112(SB)/8, $11
DATA hashidx<>+120(SB)/8, $15
DATA hashidx<>+128(SB)/8, $0
DATA hashidx<>+136(SB)/8, $1
DATA hashidx<>+144(SB)/8, $2
DATA hashidx<>+152(SB)/8, $3
DATA hashidx<>+160(SB)/8, $8
DATA hashidx<>+168(SB)/8, $9
DATA hashidx<>+176(SB)/8, $10
DATA hashidx<>+184(SB)/8, $11
DATA hashidx<>+192(SB)/8, $4
DATA hashidx<>+200(SB)/8, $5
DATA hashidx<>+208(SB)/8, $6
DATA hashidx<>+216(SB)/8, $7
DATA hashidx<>+224(SB)/8, $12
DATA hashidx<>+232(SB)/8, $13
DATA hashidx<>+240(SB)/8, $14
DATA hashidx<>+248(SB)/8, $15
GLOBL hashidx<>(SB), RODATA|NOPTR, $256

// The digest's multipliers (mix, then finish's two), the dense account
// number's mask and the flag bits' mask.
DATA hashk<>+0(SB)/8, $0x9E3779B97F4A7C15
DATA hashk<>+8(SB)/8, $0xff51afd7ed558ccd
DATA hashk<>+16(SB)/8, $0xc4ceb9fe1a85ec53
DATA hashk<>+24(SB)/8, $0xffffffff
DATA hashk<>+32(SB)/8, $15
GLOBL hashk<>(SB), RODATA|NOPTR, $40

// One mix step on the digests in Z16 with the values in v:
// h ^= v; h *= 0x9E3779B97F4A7C15; h = rotl(h, 29) ^ h>>32.
#define MIX(v) \
	VPXORQ  v, Z16, Z16 \
	VPMULLQ Z31, Z16, Z16 \
	VPROLQ  $29, Z16, Z17 \
	VPSRLQ  $32, Z16, Z16 \
	VPXORQ  Z17, Z16, Z16

// func hashRun8(h0, px uint64, orders *order, n int, accts *uint64, lastAcct uint64) (sum, maxAcct uint64)
TEXT ·hashRun8(SB), NOSPLIT, $0-64
	MOVQ orders+16(FP), AX
	MOVQ n+24(FP), BX
	MOVQ accts+32(FP), R8

	VPBROADCASTQ hashk<>+0(SB), Z31
	VPBROADCASTQ hashk<>+8(SB), Z30
	VPBROADCASTQ hashk<>+16(SB), Z29
	VPBROADCASTQ h0+0(FP), Z28
	VPBROADCASTQ px+8(FP), Z27
	VPBROADCASTQ hashk<>+24(SB), Z26
	VPBROADCASTQ hashk<>+32(SB), Z25
	VPBROADCASTQ lastAcct+40(FP), Z24
	VPXORQ       Z23, Z23, Z23
	VPXORQ       Z22, Z22, Z22
	VMOVDQU64    hashidx<>+0(SB), Z21
	VMOVDQU64    hashidx<>+64(SB), Z20
	VMOVDQU64    hashidx<>+128(SB), Z19
	VMOVDQU64    hashidx<>+192(SB), Z18
	MOVL         $0xff, DX
	KMOVW        DX, K7

loop:
	CMPQ  BX, $8
	JAE   full
	// A last group of m < 8 orders: 4m qwords to load, m lanes.
	MOVQ  BX, CX
	SHLQ  $2, CX
	MOVL  $1, DX
	SHLQ  CX, DX
	DECQ  DX
	KMOVW DX, K1
	SHRQ  $8, DX
	KMOVW DX, K2
	SHRQ  $8, DX
	KMOVW DX, K3
	SHRQ  $8, DX
	KMOVW DX, K4
	MOVQ  BX, CX
	MOVL  $1, DX
	SHLQ  CX, DX
	DECQ  DX
	KMOVW DX, K5
	JMP   load

full:
	KMOVW K7, K1
	KMOVW K7, K2
	KMOVW K7, K3
	KMOVW K7, K4
	KMOVW K7, K5

load:
	VMOVDQU64.Z 0(AX), K1, Z0
	VMOVDQU64.Z 64(AX), K2, Z1
	VMOVDQU64.Z 128(AX), K3, Z2
	VMOVDQU64.Z 192(AX), K4, Z3

	// Z4: pa, sk of orders 0-3; Z5: id, qty of 0-3; Z6, Z7: of 4-7.
	VMOVDQA64 Z21, Z4
	VPERMI2Q  Z1, Z0, Z4
	VMOVDQA64 Z20, Z5
	VPERMI2Q  Z1, Z0, Z5
	VMOVDQA64 Z21, Z6
	VPERMI2Q  Z3, Z2, Z6
	VMOVDQA64 Z20, Z7
	VPERMI2Q  Z3, Z2, Z7

	// Z8: pa, Z9: sk, Z10: id, Z11: qty of the eight orders.
	VMOVDQA64 Z19, Z8
	VPERMI2Q  Z6, Z4, Z8
	VMOVDQA64 Z18, Z9
	VPERMI2Q  Z6, Z4, Z9
	VMOVDQA64 Z19, Z10
	VPERMI2Q  Z7, Z5, Z10
	VMOVDQA64 Z18, Z11
	VPERMI2Q  Z7, Z5, Z11

	// Accounts: dense numbers (low 32 bits of pa), their maximum kept
	// for the caller's check, clamped to the table, gathered in the
	// valid lanes.
	VPANDQ     Z26, Z8, Z12
	VPMAXUQ    Z12, Z22, Z22
	VPMINUQ    Z24, Z12, Z12
	KMOVW      K5, K6
	VPXORQ     Z13, Z13, Z13
	VPGATHERQQ (R8)(Z12*8), K6, Z13

	// Sequence (sk >> 8) and flags (sk & 15).
	VPSRLQ $8, Z9, Z14
	VPANDQ Z25, Z9, Z0

	VMOVDQA64 Z28, Z16
	MIX(Z10)
	MIX(Z13)
	MIX(Z27)
	MIX(Z11)
	MIX(Z14)
	MIX(Z0)

	// finish
	VPSRLQ  $33, Z16, Z17
	VPXORQ  Z17, Z16, Z16
	VPMULLQ Z30, Z16, Z16
	VPSRLQ  $33, Z16, Z17
	VPXORQ  Z17, Z16, Z16
	VPMULLQ Z29, Z16, Z16
	VPSRLQ  $33, Z16, Z17
	VPXORQ  Z17, Z16, Z16

	VPADDQ Z16, Z23, K5, Z23

	ADDQ $256, AX
	SUBQ $8, BX
	JG   loop

	VEXTRACTI64X4 $1, Z23, Y0
	VPADDQ        Y0, Y23, Y0
	VEXTRACTI128  $1, Y0, X1
	VPADDQ        X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VPADDQ        X1, X0, X0
	VMOVQ         X0, sum+48(FP)

	VEXTRACTI64X4 $1, Z22, Y2
	VPMAXUQ       Y2, Y22, Y2
	VEXTRACTI128  $1, Y2, X3
	VPMAXUQ       X3, X2, X2
	VPSHUFD       $0x4e, X2, X3
	VPMAXUQ       X3, X2, X2
	VMOVQ         X2, maxAcct+56(FP)
	VZEROUPPER
	RET
