#!/usr/bin/env bash
# Builds graphfleet's Gatling simulation (bench/gatling) with Maven into the cache, keyed
# by the Gatling version its pom pins and a hash of the project: lib/ holds Gatling's jars
# (from Maven Central, kept in $GF_CACHE/m2) and graphfleet-gatling.jar. An unchanged project
# is not rebuilt (well under a second). Each build runs the simulation's self-check
# (SelfCheck: the histogram buckets and durations against bench/k6/testdata, the summary).
#
#   scripts/gatling.sh          # build if needed; print the directory (its lib/ is the class path)
#   scripts/gatling.sh --dir    # print the directory without building
#
# Run a segment by hand (bench/gatling/README.md lists the variables):
#   GF_URL=... GF_PAYLOAD=... java -cp "$(scripts/gatling.sh)/lib/*" dev.graphfleet.gatling.Main
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

PROJECT=$GF_ROOT/bench/gatling
# Bump when the way the build is assembled changes.
RECIPE=graphfleet-gatling-1

gatling_version() {
  local v
  v=$(sed -n 's|.*<gatling.version>\(.*\)</gatling.version>.*|\1|p' "$PROJECT/pom.xml")
  [ -n "$v" ] || die "no <gatling.version> in $PROJECT/pom.xml"
  echo "$v"
}

project_key() {
  (cd "$PROJECT" && { echo "$RECIPE"; find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } \
    | sha256sum | cut -c1-16)
}

dir=$GF_CACHE/gatling/$(gatling_version)-$(project_key)
if [ "${1:-}" = "--dir" ]; then echo "$dir"; exit 0; fi
[ $# -eq 0 ] || die "usage: scripts/gatling.sh [--dir]"

if [ -s "$dir/lib/graphfleet-gatling.jar" ]; then
  log "gatling $(gatling_version): cached ($dir)"
  echo "$dir"
  exit 0
fi
command -v java >/dev/null && command -v mvn >/dev/null \
  || "$GF_ROOT/scripts/host-packages.sh" openjdk-17-jdk-headless maven
mkdir -p "$GF_CACHE/gatling/logs"
logf=$GF_CACHE/gatling/logs/build-$(basename "$dir").log
build=$dir.partial.$$
rm -rf "$build"
trap 'rm -rf "$build"' EXIT
start=$SECONDS
log "gatling $(gatling_version): mvn package (log: $logf)"
if ! (cd "$PROJECT" && mvn -B --no-transfer-progress -Dstyle.color=never -Dmaven.repo.local="$GF_CACHE/m2" \
  -Dgraphfleet.build="$build/maven" package) >"$logf" 2>&1; then
  tail -n 30 "$logf" >&2
  die "building the Gatling simulation failed; see $logf"
fi
mkdir -p "$build/out/lib"
cp "$build"/maven/lib/*.jar "$build/maven/graphfleet-gatling.jar" "$build/out/lib/"
if ! java -cp "$build/out/lib/*" dev.graphfleet.gatling.SelfCheck "$GF_ROOT/bench/k6/testdata" >>"$logf" 2>&1; then
  tail -n 30 "$logf" >&2
  die "the Gatling simulation's self-check failed; see $logf"
fi
rm -rf "$dir"
mv "$build/out" "$dir"
# Older builds of the project are not kept.
find "$GF_CACHE/gatling" -maxdepth 1 -mindepth 1 -type d ! -name "$(basename "$dir")" ! -name logs -exec rm -rf {} +
log "gatling $(gatling_version): built in $((SECONDS - start)) s ($(du -sh "$dir" | cut -f1); $(grep -o "gatling self-check: .*" "$logf"))"
echo "$dir"
