package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `usage:
  ferry run      --config FILE
  ferry validate --config FILE
  ferry recordings --config FILE
  ferry status   --config FILE [--json] [--watch]
  ferry checkpoint show  --config FILE --stream NAME
  ferry checkpoint reset --config FILE --stream NAME --yes [--force]
  ferry checkpoint forget --config FILE --stream NAME --recording ID [--topic-holds POSITION] --yes
  ferry demo [--aeron-dir DIR] [--pulsar URL] [--pulsar-admin URL] [--dir DIR] [--rate N] [--listen HOST:PORT]
  ferry version
ferry COMMAND -h prints a command's flags and what they mean.`

// run is the whole command line: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "help" || cmd == "-h" || cmd == "--help" || cmd == "-help":
		fmt.Fprintln(stdout, usage)
		return exitOK
	case cmd == "version" && len(rest) == 1 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help"):
		fmt.Fprintln(stdout, "usage: ferry version\n\nprints ferry's version; it takes no flags")
		return exitOK
	case cmd == "version" && len(rest) > 0:
		err = usageError{fmt.Sprintf("version takes no arguments (given %q)", rest)}
	case cmd == "version" || (cmd == "--version" || cmd == "-version") && len(rest) == 0:
		fmt.Fprintln(stdout, "ferry", version)
		return exitOK
	case cmd == "run":
		err = runPipeline(rest, stderr)
	case cmd == "status":
		err = status(rest, stdout)
	case cmd == "demo":
		err = demo(rest, stdout, stderr)
	case cmd == "recordings":
		err = recordings(rest, stdout)
	case cmd == "validate":
		err = validate(rest, stdout)
	case cmd == "checkpoint" && len(rest) > 0 && rest[0] == "show":
		err = checkpointShow(rest[1:], stdout)
	case cmd == "checkpoint" && len(rest) > 0 && rest[0] == "reset":
		err = checkpointReset(rest[1:], stdout)
	case cmd == "checkpoint" && len(rest) > 0 && rest[0] == "forget":
		err = checkpointForget(rest[1:], stdout)
	case cmd == "checkpoint" && len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help"):
		fmt.Fprintln(stdout, usage)
		return exitOK
	case cmd == "checkpoint":
		err = usageError{"checkpoint: want show, reset or forget, as in: ferry checkpoint show --config FILE --stream NAME"}
	default:
		fmt.Fprintf(stderr, "ferry: unknown command %q\n%s\n", args[0], usage)
		return exitUsage
	}
	var u usageError
	var h helpRequest
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &h):
		fmt.Fprint(stdout, h.text)
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usage)
		return exitOK
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "ferry: %v\n%s\n", err, usage)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ferry: %v\n", err)
		return exitFailure
	}
}

// usageError is a mistake on the command line rather than a failure of the command.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// helpRequest is -h or --help on a subcommand: text is its usage line and flags.
type helpRequest struct{ text string }

func (h helpRequest) Error() string { return "help requested" }

func (h helpRequest) Unwrap() error { return flag.ErrHelp }

// flags parses a subcommand's flags; unknown flags and stray arguments are usage errors,
// and -h or --help is a [helpRequest].
func flags(name string, args []string, define func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		var b strings.Builder
		fmt.Fprintf(&b, "usage: %s\n\n", synopsis(name))
		fs.SetOutput(&b)
		fs.PrintDefaults()
		return helpRequest{b.String()}
	} else if err != nil {
		return usageError{fmt.Sprintf("%s: %v", name, err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q", name, fs.Arg(0))}
	}
	return nil
}

// synopsis returns the line of usage for the subcommand name, e.g. "checkpoint reset".
func synopsis(name string) string {
	for line := range strings.Lines(usage) {
		if f := strings.Join(strings.Fields(line), " "); strings.HasPrefix(f+" ", "ferry "+name+" ") {
			return f
		}
	}
	return "ferry " + name
}

// lookupEnv is where environment overrides come from, and environ the variables checked
// for misspelt ones (tests replace them).
var (
	lookupEnv = os.LookupEnv
	environ   = os.Environ
)
