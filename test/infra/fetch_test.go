package infra

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests run fetch.sh against made-up java, mvn, gcc and apt-get: nothing is
// downloaded or installed, and the real cache and ~/.m2 are not touched.

// fakeMvn stands for `mvn … dependency:copy -Dartifact=… -DoutputDirectory=…` as Maven does
// it: it "downloads" an artifact into the local repository ($HOME/.m2/repository) unless it
// is there already, and copies it from there. The Pulsar tarball it downloads is
// $FAKE_PULSAR (the aeron jar is made up). Each command line is appended to $MVN_LOG.
const fakeMvn = `#!/usr/bin/env bash
set -eu
echo "$*" >>"$MVN_LOG"
for arg; do
  case $arg in
    -Dartifact=*) artifact=${arg#-Dartifact=} ;;
    -DoutputDirectory=*) out=${arg#-DoutputDirectory=} ;;
  esac
done
IFS=: read -r group id version type classifier <<<"$artifact"
file=$id-$version${classifier:+-$classifier}.${type:-jar}
local=$HOME/.m2/repository/${group//.//}/$id/$version
if [ ! -e "$local/$file" ]; then
  mkdir -p "$local"
  case $id in
    pulsar-server-distribution) cp "$FAKE_PULSAR" "$local/$file" ;;
    *) echo jar >"$local/$file" ;;
  esac
fi
${FAKE_MVN_BEFORE_COPY:-:}
cp "$local/$file" "$out/$file"
`

// fetchEnv is a made-up machine for fetch.sh: a home, a cache, and a PATH whose java, mvn,
// gcc and apt-get are fakes (apt-get fails: fetch.sh must install nothing here).
type fetchEnv struct {
	home, cache, mvnLog string
	env                 []string
}

func newFetchEnv(t *testing.T) *fetchEnv {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	f := &fetchEnv{home: filepath.Join(dir, "home"), cache: filepath.Join(dir, "cache"), mvnLog: filepath.Join(dir, "mvn.log")}
	for name, script := range map[string]string{
		"java":    "#!/bin/sh\necho '    java.specification.version = 17' >&2\n",
		"mvn":     fakeMvn,
		"gcc":     "#!/bin/sh\n",
		"apt-get": "#!/bin/sh\necho 'apt-get: not here' >&2\nexit 100\n",
	} {
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(f.home, 0o755); err != nil {
		t.Fatal(err)
	}
	f.env = []string{
		"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + f.home, "FERRYTEST_CACHE=" + f.cache,
		"MVN_LOG=" + f.mvnLog, "LC_ALL=C",
	}
	return f
}

// run runs fetch.sh with extra variables and returns its output and error.
func (f *fetchEnv) run(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "fetch.sh")
	cmd.Env = append(f.env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pulsarTarball writes a Pulsar distribution tarball holding bin/pulsar to path.
func pulsarTarball(t *testing.T, path string) {
	t.Helper()
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	gz := gzip.NewWriter(file)
	tw := tar.NewWriter(gz)
	script := []byte("#!/bin/sh\n")
	if err := tw.WriteHeader(&tar.Header{Name: "apache-pulsar-" + PinnedVersions().Pulsar + "/bin/pulsar", Mode: 0o755, Size: int64(len(script))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(script); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// A corrupt Pulsar download does not stay stuck: Maven's copy in its local repository is
// removed with the cache's, so the next run downloads it anew rather than copy the same
// bytes again (Maven does not check what its local repository holds). Maven runs with
// strict checksums, so that a download whose checksum does not match fails rather than
// being kept.
func TestACorruptPulsarDownloadIsFetchedAnewOnTheNextRun(t *testing.T) {
	f := newFetchEnv(t)
	dir := t.TempDir()
	corrupt, good := filepath.Join(dir, "corrupt.tar.gz"), filepath.Join(dir, "good.tar.gz")
	if err := os.WriteFile(corrupt, []byte("half a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	pulsarTarball(t, good)
	v := PinnedVersions().Pulsar
	m2Copy := filepath.Join(f.home, ".m2", "repository", "org", "apache", "pulsar", "pulsar-server-distribution", v)

	out, err := f.run(t, "FAKE_PULSAR="+corrupt)
	if err == nil {
		t.Fatalf("fetch.sh with a corrupt tarball succeeded:\n%s", out)
	}
	if !strings.Contains(out, "Removed it and Maven's copy, "+m2Copy) {
		t.Errorf("fetch.sh does not say it removed Maven's copy %s:\n%s", m2Copy, out)
	}
	if exists(t, m2Copy) {
		t.Errorf("Maven's copy of the corrupt tarball is still in %s", m2Copy)
	}

	// Maven Central serves the right bytes this time.
	if out, err := f.run(t, "FAKE_PULSAR="+good); err != nil {
		t.Fatalf("fetch.sh after a corrupt download: %v\n%s", err, out)
	}
	if !exists(t, filepath.Join(f.cache, "apache-pulsar-"+v, "bin", "pulsar")) {
		t.Errorf("Pulsar was not unpacked into the cache on the second run")
	}
	log, err := os.ReadFile(f.mvnLog)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(log)) {
		if !strings.Contains(" "+line, " -C ") {
			t.Errorf("mvn ran without strict checksums (-C): %s", line)
		}
	}
}
