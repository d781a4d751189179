package driver

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestProbeDriverAgreesWithAeronStat: our CnC and counters reader sees the same counters
// (ids, labels) as Aeron's own AeronStat, and the same driver pid.
func TestProbeDriverAgreesWithAeronStat(t *testing.T) {
	// A publication of ours adds stream counters (pub-lmt, pub-pos …) to compare too.
	c := connect(t)
	pair(t, c, "aeron:ipc?term-length=64k", infra.UniqueStreamID())

	info, err := aeron.ProbeDriver(archive.AeronDir, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out, err := infra.RunJava(context.Background(), time.Minute, "io.aeron.samples.AeronStat",
		map[string]string{"aeron.dir": archive.AeronDir}, "watch=false")
	if err != nil {
		t.Fatalf("AeronStat: %v\n%s", err, out)
	}
	if !strings.Contains(out, "pid "+strconv.FormatInt(info.PID, 10)+",") {
		t.Errorf("AeronStat does not show driver pid %d:\n%s", info.PID, firstLines(out, 2))
	}
	// "  42:                    0 - label"; values move between the two reads, labels and
	// ids of long-lived counters do not.
	line := regexp.MustCompile(`(?m)^\s*(\d+):\s+[-\d,]+ - (.*)$`)
	stat := map[int32]string{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.Atoi(m[1])
		stat[int32(id)] = m[2]
	}
	if len(stat) < 20 {
		t.Fatalf("AeronStat listed only %d counters:\n%s", len(stat), out)
	}
	// Counters the driver allocated while AeronStat ran are in a probe taken after it.
	after, err := aeron.ProbeDriver(archive.AeronDir, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Other test packages share this driver and come and go while AeronStat runs: compare
	// the counters that were the same in our probes before and after it.
	before := map[int32]string{}
	for _, ctr := range info.Counters {
		before[ctr.ID] = ctr.Label
	}
	compared := 0
	for _, ctr := range after.Counters {
		if before[ctr.ID] != ctr.Label || strings.HasPrefix(ctr.Label, "client-heartbeat:") {
			continue
		}
		compared++
		if got, ok := stat[ctr.ID]; !ok || got != ctr.Label {
			t.Errorf("counter %d: we read %q, AeronStat %q", ctr.ID, ctr.Label, got)
		}
	}
	if compared < 20 {
		t.Fatalf("only %d counters were stable enough to compare", compared)
	}
	if !info.HasCounter(aeron.CounterTypeClientHeartbeat) {
		t.Error("no client-heartbeat counter, though a client is connected")
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
