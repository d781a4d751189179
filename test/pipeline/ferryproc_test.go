package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A ferry process dies with what started it (startFerry), rather than run on against the
// shared peers after the test binary was killed or timed out. The test binary's death is
// played by the end of the thread that started the process, which the kernel takes the
// same way (prctl(2), PR_SET_PDEATHSIG).
func TestAFerryProcessDiesWithWhatStartedIt(t *testing.T) {
	var f *ferryProc
	if err := onAThreadThatEnds(func() { f = startProc(t, exec.Command("sleep", "300")) }); err != nil {
		t.Skipf("no thread to end safely: %v", err)
	}
	exitErr, ok := f.WaitExit(10 * time.Second)
	if !ok {
		t.Fatalf("the process (pid %d) still runs 10 s after the thread that started it ended", f.Pid())
	}
	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the process ended with %v, want SIGKILL", exitErr)
	}
}

// onAThreadThatEnds runs f on a thread that ends when f has returned: Go ends the thread
// of a goroutine that exits locked to it (runtime.LockOSThread). Not on the main thread,
// which Go keeps, nor on a thread that started a process still running: the shared peers
// TestMain started die with theirs, as startProc's processes do. A goroutine that finds
// itself on one of those holds it while another tries.
func onAThreadThatEnds(f func()) error {
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // unlocked only on a thread that must not end
		tid := syscall.Gettid()
		children, rerr := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/children", tid))
		if rerr != nil {
			runtime.UnlockOSThread()
			err = fmt.Errorf("the thread's children are not listed (the kernel needs CONFIG_PROC_CHILDREN): %w", rerr)
			return
		}
		if tid == syscall.Getpid() || len(bytes.TrimSpace(children)) > 0 {
			err = onAThreadThatEnds(f)
			runtime.UnlockOSThread()
			return
		}
		f()
	}()
	<-done
	return err
}
