//go:build amd64 && !race

#include "go_asm.h"
#include "textflag.h"

// func storeRelease32(addr *int32, v int32)
TEXT ·storeRelease32(SB), NOSPLIT, $0-12
	MOVQ addr+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func storeRelease64(addr *int64, v int64)
TEXT ·storeRelease64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

// func storeRelease64PairPrefetch(a *int64, av int64, b *int64, bv int64, n int)
TEXT ·storeRelease64PairPrefetch(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), AX
	MOVQ av+8(FP), BX
	MOVQ b+16(FP), CX
	MOVQ bv+24(FP), DX
	MOVQ BX, (AX)
	MOVQ DX, (CX)
	CMPB ·prefetchW(SB), $0
	JEQ  done
	MOVQ n+32(FP), R8
	ADDQ CX, R8 // CX runs over [b, b+n), the prefetches PrefetchDistance ahead of it

next:
	CMPQ CX, R8
	JAE  done
	// PREFETCHW PrefetchDistance(CX), which the Go assembler has no
	// mnemonic for: 0F 0D /1, ModRM 0x89 (mod 10: disp32; reg 1; rm CX).
	BYTE $0x0F; BYTE $0x0D; BYTE $0x89; LONG $const_PrefetchDistance
	ADDQ $const_cacheLine, CX
	JMP  next

done:
	RET

// func hasPrefetchW() bool
TEXT ·hasPrefetchW(SB), NOSPLIT, $0-1
	MOVL $0x80000000, AX // the highest extended leaf
	CPUID
	CMPL AX, $0x80000001
	JB   no
	MOVL $0x80000001, AX
	CPUID
	SHRL $8, CX // ECX bit 8: PRFCHW
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

no:
	MOVB $0, ret+0(FP)
	RET
