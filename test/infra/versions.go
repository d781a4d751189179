package infra

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed versions.env
var versionsFile string

// Versions are the releases of the real peers, read from versions.env.
type Versions struct {
	Aeron  string
	Pulsar string
}

// PinnedVersions returns the versions in versions.env. It panics if the embedded file is
// malformed: that is a defect in this repository, caught by its own tests.
func PinnedVersions() Versions {
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(versionsFile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			panic(fmt.Sprintf("assertion failed: versions.env line %q is not KEY=VALUE", line))
		}
		vars[k] = v
	}
	v := Versions{Aeron: vars["AERON_VERSION"], Pulsar: vars["PULSAR_VERSION"]}
	if v.Aeron == "" || v.Pulsar == "" {
		panic("assertion failed: versions.env must set AERON_VERSION and PULSAR_VERSION")
	}
	return v
}

// CacheDir is where fetch.sh keeps the downloaded peers: $FERRYTEST_CACHE, or ~/.cache/ferry.
func CacheDir() string {
	if dir := os.Getenv("FERRYTEST_CACHE"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "ferry-cache")
	}
	return filepath.Join(home, ".cache", "ferry")
}

// ErrNotFetched means the peers are not in the cache; `make deps` (test/infra/fetch.sh)
// fetches them.
var ErrNotFetched = errors.New("infra: real peers not fetched; run `make deps` (test/infra/fetch.sh)")

// AeronJar is the path of the cached aeron-all jar. It returns [ErrNotFetched] if the jar is
// missing.
func AeronJar() (string, error) {
	jar := filepath.Join(CacheDir(), "aeron-all-"+PinnedVersions().Aeron+".jar")
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("%w: %s is missing", ErrNotFetched, jar)
	}
	return jar, nil
}

// PulsarHome is the path of the unpacked Pulsar distribution. It returns [ErrNotFetched] if
// it is missing.
func PulsarHome() (string, error) {
	home := filepath.Join(CacheDir(), "apache-pulsar-"+PinnedVersions().Pulsar)
	if _, err := os.Stat(filepath.Join(home, "bin", "pulsar")); err != nil {
		return "", fmt.Errorf("%w: %s is missing", ErrNotFetched, home)
	}
	return home, nil
}
