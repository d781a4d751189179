// Package architecture enforces the shape of the tree (../shared/reference/architecture.md
// §1): dependencies point inward. It reads the real import graph with `go list -deps`.
package architecture

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ferry-bridge/ferry"

// rule says which of ferry's own packages a package (matched by path prefix, relative to
// the module) may depend on, directly or transitively. The first matching rule applies.
type rule struct {
	pkg   string
	allow []string
}

// rules is the architecture in code. A package that no rule matches fails the test: add it
// here, deliberately, when you create it.
var rules = []rule{
	{"messages", nil},                                                  // generated; protobuf only
	{"aeron", []string{"aeron"}},                                       // the Aeron client knows nothing of ferry
	{"progress", []string{"messages"}},                                 // the pure core
	{"config", []string{"messages", "aeron/channel"}},                  // channel URIs are checked with the client's own parser
	{"store", []string{"store", "messages", "progress"}},               // checkpoint stores and their contract suite
	{"supervisor", []string{"messages", "progress", "store", "aeron"}}, // classifies the store's and the archive's errors
	{"observe", []string{"messages", "progress", "store"}},             // HTTP status, metrics, health
	{"pulsaradmin", nil},                                               // the broker's admin API; the standard library only
	{"actors", []string{"actors", "messages", "progress", "config", "store", "supervisor", "observe", "aeron"}},
	{"cmd", []string{"cmd", "actors", "messages", "progress", "config", "store", "supervisor", "observe", "aeron", "pulsaradmin"}},
	{"test", []string{""}}, // tests may use everything
}

func TestDependenciesPointInward(t *testing.T) {
	graph := importGraph(t)
	if len(graph) == 0 {
		t.Fatal("go list found no packages")
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestRulesCatchAnOutwardDependency shows the check can fail: an Aeron package that
// imports the pipeline, and a package no rule covers.
func TestRulesCatchAnOutwardDependency(t *testing.T) {
	graph := map[string][]string{
		"aeron/internal/cnc": {"aeron/internal/shm", "actors"},
		"progress":           {"messages"},
		"gadgets":            nil,
	}
	got := violations(graph)
	if len(got) != 2 || !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, "aeron/internal/cnc depends on actors") }) ||
		!slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, "package gadgets is covered by no rule") }) {
		t.Fatalf("violations = %q, want one for aeron/internal/cnc -> actors and one for the unknown package gadgets", got)
	}
}

// importGraph maps each of the module's packages (relative path) to the module's packages
// it depends on, transitively.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, ok := own(fields[0])
		if !ok {
			continue
		}
		graph[pkg] = nil
		for _, dep := range fields[1:] {
			if d, ok := own(dep); ok {
				graph[pkg] = append(graph[pkg], d)
			}
		}
	}
	return graph
}

// own returns the module-relative path of one of ferry's packages.
func own(importPath string) (string, bool) {
	if importPath == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}

func violations(graph map[string][]string) []string {
	var out []string
	for pkg, deps := range graph {
		r, ok := ruleFor(pkg)
		if !ok {
			out = append(out, "package "+pkg+" is covered by no rule in architecture_test.go: decide where it sits and add one")
			continue
		}
		for _, dep := range deps {
			if !allowed(r, dep) {
				out = append(out, pkg+" depends on "+dep+": dependencies must point inward (architecture.md §1)")
			}
		}
	}
	return out
}

func ruleFor(pkg string) (rule, bool) {
	for _, r := range rules {
		if under(pkg, r.pkg) {
			return r, true
		}
	}
	return rule{}, false
}

func allowed(r rule, dep string) bool {
	for _, a := range r.allow {
		if a == "" || under(dep, a) {
			return true
		}
	}
	return false
}

// under reports whether pkg is prefix or below it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}
