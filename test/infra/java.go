package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// javaHome returns the installation of the java on PATH: the one fetch.sh checked (Java 17
// or newer) and the one the archive and the Java samples run ("java" in their argv). It is
// where that java's real path lies, two directories up, if that holds a bin/java which is
// the same file; otherwise "". To run the peers on another JDK, put its bin first on PATH.
func javaHome() (string, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("infra: no java on PATH (make deps checks for Java 17 or newer): %w", err)
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", fmt.Errorf("infra: the java on PATH: %w", err)
	}
	home := filepath.Dir(filepath.Dir(real))
	if bin, err := filepath.EvalSymlinks(filepath.Join(home, "bin", "java")); err != nil || bin != real {
		return "", nil
	}
	return home, nil
}

// JavaProcess is a Java peer running in the background (a sample subscriber, a
// publisher), its output captured. It is safe for concurrent use.
type JavaProcess struct {
	proc  *process
	out   string   // the file its output goes to
	input *os.File // the writing end of its standard input, or nil (it reads /dev/null)
}

// StartJava starts a main class from the cached aeron-all jar in the background. Its output
// goes to a file in dir and its standard input is empty. The process dies with the test
// binary; stop it with Stop.
func StartJava(dir, mainClass string, props map[string]string, args ...string) (*JavaProcess, error) {
	return startJava(dir, mainClass, props, args, false)
}

// StartJavaAnswering is StartJava for a main class that asks questions on its standard
// input (a sample's "Execute again? (y/n)"): Answer gives it each answer once it has asked.
func StartJavaAnswering(dir, mainClass string, props map[string]string, args ...string) (*JavaProcess, error) {
	return startJava(dir, mainClass, props, args, true)
}

func startJava(dir, mainClass string, props map[string]string, args []string, answering bool) (*JavaProcess, error) {
	jar, err := AeronJar()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"java"}, javaFlags(props)...)
	argv = append(argv, "-cp", jar, mainClass)
	argv = append(argv, args...)
	out := filepath.Join(dir, filepath.Base(strings.ReplaceAll(mainClass, ".", "-"))+".log")
	var stdin, input *os.File
	if answering {
		if stdin, input, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("infra: %s: standard input: %w", mainClass, err)
		}
		defer stdin.Close() // the child holds its own descriptor
	}
	proc, err := startProcess(mainClass, argv, nil, dir, out, stdin, false)
	if err != nil {
		if input != nil {
			_ = input.Close()
		}
		return nil, err
	}
	return &JavaProcess{proc: proc, out: out, input: input}, nil
}

// Answer writes line and a newline to the standard input of a process started with
// StartJavaAnswering. Write it only once the process has asked: a Java Scanner made per
// question (Agrona's ContinueBarrier) reads ahead, and an answer sent early is lost with
// the Scanner that read it.
func (j *JavaProcess) Answer(line string) error {
	if j.input == nil {
		return errors.New("infra: Answer to a Java process not started with StartJavaAnswering")
	}
	if _, err := io.WriteString(j.input, line+"\n"); err != nil {
		return fmt.Errorf("infra: answering %s: %w", j.proc.name, err)
	}
	return nil
}

// Output is everything the process printed so far.
func (j *JavaProcess) Output() string {
	b, _ := os.ReadFile(j.out)
	return string(b)
}

// Exited reports whether the process has ended, and how.
func (j *JavaProcess) Exited() (bool, error) { return j.proc.exited() }

// Stop terminates the process (SIGTERM), waits up to 10 s, then kills it.
func (j *JavaProcess) Stop() error {
	j.closeInput()
	return j.proc.stop(10 * time.Second)
}

func (j *JavaProcess) closeInput() {
	if j.input != nil {
		_ = j.input.Close() // a second close only errs
	}
}

// Interrupt is Stop with SIGINT, the signal Aeron's samples handle (Agrona's SigInt): they
// then end their loops and print their closing statistics before they exit.
func (j *JavaProcess) Interrupt() error { return j.proc.signal(syscall.SIGINT, 10*time.Second) }
