//go:build amd64 && !race

package shm

// On amd64 every aligned store is a release store in hardware (x86-TSO:
// stores become visible in program order, and no store passes an earlier
// load), so a release store needs no fence, only a compiler that keeps the
// earlier memory operations before it. The Go compiler never moves a memory
// operation across a call to an assembly function, and these are assembly
// (release_amd64.s), so neither the compiler nor the CPU reorders them with
// what the goroutine did before. Aligned 4- and 8-byte MOVs are single-copy
// atomic, so a concurrent reader never sees a torn value.

//go:noescape
func storeRelease32(addr *int32, v int32)

//go:noescape
func storeRelease64(addr *int64, v int64)

// storeRelease64PairPrefetch is two storeRelease64s in one call, followed,
// if the CPU has the instruction (prefetchW), by a PREFETCHW of each cache
// line of the n bytes PrefetchDistance past b.
//
//go:noescape
func storeRelease64PairPrefetch(a *int64, av int64, b *int64, bv int64, n int)

// prefetchW reports whether the CPU says it has PREFETCHW (CPUID
// 0x80000001:ECX[8], PRFCHW; Linux lists it as 3dnowprefetch): Intel's
// CPUs since Broadwell and AMD's. On a CPU without it the opcode may
// fault, so the assembly tests this first; a CPU that has the instruction
// but does not say so only goes without the prefetch. It is set once,
// before main, and read by the assembly only.
var prefetchW = hasPrefetchW()

// hasPrefetchW asks CPUID.
func hasPrefetchW() bool
