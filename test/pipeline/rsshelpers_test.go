package pipeline

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// rssVmHWM is the peak resident set size of process pid in kB: VmHWM of
// /proc/<pid>/status, which the kernel keeps as a high-water mark. It counts the pages of
// mapped files too: the Aeron log buffers ferry maps from the media driver's directory.
func rssVmHWM(pid int) (int64, error) { return procStatusKB(pid, "VmHWM") }

// procStatusKB is the field key (in kB) of /proc/<pid>/status, e.g. VmHWM, RssAnon,
// RssShmem.
func procStatusKB(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, sc.Text())
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
}
