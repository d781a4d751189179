package infra

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// RunJava runs a main class from the cached aeron-all jar (a sample publisher, ArchiveTool,
// AeronStat …) with the given system properties and arguments, and returns its combined
// output. It is bounded by ctx and by timeout; a run that does not finish in time is killed
// and reported with its output so far.
func RunJava(ctx context.Context, timeout time.Duration, mainClass string, props map[string]string, args ...string) (string, error) {
	jar, err := AeronJar()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append(javaFlags(props), "-cp", jar, mainClass)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, "java", argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("infra: %s did not finish within %s: %w", mainClass, timeout, ctx.Err())
	}
	if err != nil {
		return string(out), fmt.Errorf("infra: %s: %w", mainClass, err)
	}
	return string(out), nil
}
