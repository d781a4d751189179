#!/usr/bin/env bash
# Fetches the real peers ferry's tests run against (versions in versions.env) from Maven
# Central into the cache (FERRYTEST_CACHE, default ~/.cache/ferry), checking first that Java 17+
# and Maven are present. Idempotent: what is already cached is not fetched again.
# Exits non-zero within seconds, naming what is missing and how to get it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${FERRYTEST_CACHE:-$HOME/.cache/ferry}

fail() { echo "fetch: $*" >&2; exit 1; }

# tmps are the temporary files and directories this run made and has not removed yet (a
# copy or unpacking of some 250 MB, apt's and mvn's logs): removed however it ends, Ctrl-C
# included. A fetch killed outright leaves its own, which the next fetch removes (below).
tmps=()
remove_tmps() { if [ ${#tmps[@]} -gt 0 ]; then rm -rf "${tmps[@]}"; fi; }
trap remove_tmps EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Java 17 or newer, by the package name each Debian or Ubuntu release has: trixie no longer
# ships openjdk-17; default-jdk-headless is whatever the release calls its default.
jdk_packages="openjdk-17-jdk-headless openjdk-21-jdk-headless default-jdk-headless"

# can_install: this runs as root on a machine with apt (CI, a fresh developer machine of this
# project's kind), so what is missing is installed instead of only named.
can_install() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

# apt_install PACKAGE…: install with apt-get, its package lists updated once per run (an
# update that failed is not tried again: every later apt_install fails with its status). apt's
# output goes to a temporary log, whose tail is printed on failure: a package the release
# does not have, an unreachable mirror and a dpkg lock held by another apt look alike
# otherwise. Returns apt-get's status.
apt_update_status=""
apt_install() {
  local log status=0
  log=$(mktemp)
  tmps+=("$log")
  echo "fetch: installing $* with apt-get"
  if [ -z "$apt_update_status" ]; then
    apt-get update -qq >"$log" 2>&1 || status=$?
    apt_update_status=$status
  elif [ "$apt_update_status" != 0 ]; then
    echo "fetch: not installing $*: apt-get update failed above" >&2
    rm -f "$log"
    return "$apt_update_status"
  fi
  if [ "$status" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >>"$log" 2>&1 || status=$?
  fi
  if [ "$status" != 0 ]; then
    echo "fetch: apt-get failed (exit $status) for $*; the end of its output:" >&2
    tail -n 15 "$log" | sed 's/^/    /' >&2
  fi
  rm -f "$log"
  return "$status"
}

# install PACKAGE…: install what is missing if this machine allows (see can_install).
install() {
  can_install || return 0
  apt_install "$@" || fail "apt-get install $* failed (apt's output above); install it by hand"
}

# install_java: the first of jdk_packages that installs wins.
install_java() {
  can_install || return 0
  local pkg
  for pkg in $jdk_packages; do
    apt_install "$pkg" && return 0
  done
  fail "no JDK installed (tried $jdk_packages; apt's output above). Install Java 17 or newer by hand"
}

command -v java >/dev/null 2>&1 || install_java
command -v mvn >/dev/null 2>&1 || install maven
# go test -race needs cgo, so a C compiler.
command -v gcc >/dev/null 2>&1 || install gcc libc6-dev
command -v gcc >/dev/null 2>&1 ||
  fail "gcc not found. The tests run with -race, which needs cgo and a C compiler: apt-get install gcc"

command -v java >/dev/null 2>&1 ||
  fail "java not found. ferry's tests run the real Aeron archive and Pulsar, which need Java 17 or newer: apt-get install one of $jdk_packages"
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[ "${java_major:-0}" -ge 17 ] 2>/dev/null ||
  fail "java is version '${java_major:-unknown}', Aeron $AERON_VERSION and Pulsar $PULSAR_VERSION need 17 or newer: apt-get install one of $jdk_packages"
command -v mvn >/dev/null 2>&1 ||
  fail "mvn not found. Maven fetches Aeron and Pulsar from Maven Central: apt-get install maven"

mkdir -p "$cache"

# One fetch into a cache at a time (two clones' make, a test's nested make demo): the next
# waits, then finds what the first fetched. Holding the lock, this fetch is the only one,
# so any copy.* or unpack.* directory in the cache is a leftover of one killed before it
# could remove it (SIGKILL, a CI job's hard end), and is removed. Without flock only those
# a day old are taken for leftovers: another fetch may be filling a newer one.
leftover_age=()
if command -v flock >/dev/null 2>&1; then
  lock_wait=2000 # longer than a fetch of both artifacts may take (mvn_timeout each)
  exec 9>"$cache/.fetch.lock"
  if ! flock -n 9; then
    echo "fetch: waiting for another fetch into $cache to finish"
    flock -w "$lock_wait" 9 ||
      fail "another fetch has held $cache/.fetch.lock for $lock_wait s; if none runs, find what holds it: fuser -v $cache/.fetch.lock"
  fi
else
  leftover_age=(-mmin +1440)
fi
find "$cache" -mindepth 1 -maxdepth 1 -type d \( -name 'copy.*' -o -name 'unpack.*' \) "${leftover_age[@]}" \
  -print -exec rm -rf {} + 2>/dev/null | sed 's/^/fetch: removed the leftover of an interrupted fetch: /' || true

# mvn_timeout bounds each artifact's fetch, in seconds.
mvn_timeout=900
# m2_repo is Maven's local repository: its default, as this script sets none (a
# localRepository of settings.xml is not looked up).
m2_repo=$HOME/.m2/repository

# get ARTIFACT DEST: copy one artifact (group:artifact:version[:type[:classifier]]) into the
# cache. Maven keeps its own copy in ~/.m2, so a second clone on this machine fetches nothing.
get() {
  local artifact=$1 dest=$2 log
  [ -s "$dest" ] && return 0
  log=$(mktemp)
  tmps+=("$log")
  echo "fetch: $artifact from Maven Central"
  # Copied into a temporary directory and moved into place, so an interrupted copy never
  # leaves a truncated file that a later run would take for a complete one.
  local tmp
  tmp=$(mktemp -d "$cache/copy.XXXXXX")
  tmps+=("$tmp")
  local status=0
  # -C: a download whose checksum does not match fails, rather than be kept in ~/.m2 with a
  # warning and copied from there on every run. --foreground: timeout stays in this
  # script's process group, so that a Ctrl-C reaches Maven and ends the fetch at once, not
  # once the download is done (mvn execs java, and java starts no process to time out).
  timeout --foreground "$mvn_timeout" mvn -B -q -C org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact="$artifact" -DoutputDirectory="$tmp" >"$log" 2>&1 || status=$?
  if [ "$status" = 124 ]; then
    rm -rf "$tmp"
    tail -n 5 "$log" >&2
    rm -f "$log"
    fail "fetching $artifact did not finish within $mvn_timeout s and was stopped: a slow or stalled download. Run it again (Maven keeps what it completed in ~/.m2); to watch it: mvn -B dependency:get -Dartifact=$artifact"
  fi
  if [ "$status" != 0 ]; then
    rm -rf "$tmp"
    grep -m1 -o 'Could not [^:]*: [^ ]*\|Failed to execute goal.*' "$log" >&2 || tail -5 "$log" >&2
    rm -f "$log"
    fail "could not fetch $artifact. Is Maven Central reachable (try: mvn -B dependency:get -Dartifact=$artifact)? If that version is not served, change it in test/infra/versions.env."
  fi
  rm -f "$log"
  mv "$tmp/$(basename "$dest")" "$dest" 2>/dev/null || { rm -rf "$tmp"; fail "Maven reported success but $(basename "$dest") is missing"; }
  rm -rf "$tmp"
}

get "io.aeron:aeron-all:$AERON_VERSION" "$cache/aeron-all-$AERON_VERSION.jar"

pulsar_home="$cache/apache-pulsar-$PULSAR_VERSION"
if [ ! -x "$pulsar_home/bin/pulsar" ]; then
  tarball="$cache/pulsar-server-distribution-$PULSAR_VERSION-bin.tar.gz"
  get "org.apache.pulsar:pulsar-server-distribution:$PULSAR_VERSION:tar.gz:bin" "$tarball"
  echo "fetch: unpacking Pulsar $PULSAR_VERSION"
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  tmps+=("$tmp")
  if ! tar xzf "$tarball" -C "$tmp"; then
    # Maven does not check again what its local repository holds: its copy must go too, or
    # the next run copies the same bytes.
    rm -rf "$tmp" "$tarball"
    m2_copy=$m2_repo/org/apache/pulsar/pulsar-server-distribution/$PULSAR_VERSION
    if [ -d "$m2_copy" ]; then
      rm -rf "$m2_copy"
      fail "could not unpack $tarball (a corrupt download?). Removed it and Maven's copy, $m2_copy: run make deps again to download it anew"
    fi
    fail "could not unpack $tarball (a corrupt download?). Removed it, but Maven's copy is not in $m2_repo: delete org/apache/pulsar/pulsar-server-distribution/$PULSAR_VERSION from the local repository your Maven uses, then run make deps again"
  fi
  rm -rf "$pulsar_home"
  mv "$tmp/apache-pulsar-$PULSAR_VERSION" "$pulsar_home"
  rm -rf "$tmp" "$tarball"
fi
echo "fetch: Aeron $AERON_VERSION and Pulsar $PULSAR_VERSION ready in $cache"
