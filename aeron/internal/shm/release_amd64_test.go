//go:build amd64 && !race

package shm

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// hasPrefetchW says yes only where the kernel lists the instruction too (Linux calls the
// flag 3dnowprefetch): a wrong "yes" would fault on the first offer of a machine without
// PREFETCHW. (The kernel may list it where CPUID's bit is clear — it assumes it for every
// 64-bit AMD CPU — so a "no" beside the kernel's "yes" only loses the prefetch.)
func TestHasPrefetchWOnlyWhereTheKernelListsIt(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare with: %v", err)
	}
	for line := range strings.Lines(string(info)) {
		name, flags, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		kernel := slices.Contains(strings.Fields(flags), "3dnowprefetch")
		if prefetchW != hasPrefetchW() {
			t.Fatalf("prefetchW = %v, but hasPrefetchW() = %v", prefetchW, hasPrefetchW())
		}
		if prefetchW && !kernel {
			t.Fatal("CPUID says PREFETCHW, the kernel's flags do not list 3dnowprefetch")
		}
		t.Logf("CPUID: %v, kernel: %v", prefetchW, kernel)
		return
	}
	t.Skip("/proc/cpuinfo lists no flags")
}

// On a CPU without PREFETCHW the assembly takes the branch that skips the prefetches, and
// still makes both stores. (A prefetch is invisible, so only the stores can be checked.)
func TestStoreReleasePairWithoutPrefetchW(t *testing.T) {
	had := prefetchW
	prefetchW = false
	t.Cleanup(func() { prefetchW = had })
	b := Alloc(64)
	StoreReleasePairAndPrefetch(b.Int64Word(8), 3, b.Int64Word(48), -4, 4096)
	if got8, got48 := b.LoadInt64(8), b.LoadInt64(48); got8 != 3 || got48 != -4 {
		t.Errorf("words 8 and 48 = %d and %d, want 3 and -4", got8, got48)
	}
}
