//go:build amd64 && !race

package shm

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// hasPrefetchW's CPUID answer agrees with the kernel's (Linux calls the flag
// 3dnowprefetch): a wrong "yes" would fault on the first offer of a machine without
// PREFETCHW, a wrong "no" would lose the prefetch.
func TestHasPrefetchWAgreesWithTheKernel(t *testing.T) {
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
		if prefetchW != kernel || hasPrefetchW() != kernel {
			t.Fatalf("prefetchW = %v, hasPrefetchW() = %v, the kernel's flags say %v", prefetchW, hasPrefetchW(), kernel)
		}
		return
	}
	t.Skip("/proc/cpuinfo lists no flags")
}
