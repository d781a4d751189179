//go:build amd64 && !race

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
