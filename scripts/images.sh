#!/usr/bin/env bash
# Builds graphfleet's container images, and the bench's images of peer gateways, and loads
# them into the real nodes' containerd instances (no registry) or into a kind cluster.
#
#   scripts/images.sh build [name...]          # build what changed; default: all images
#   scripts/images.sh build PEER --binary-dir DIR --version V   # a peer's image; prints its ref
#   scripts/images.sh build --engine docker [--dry-run] [name...]  # docker BuildKit instead
#   scripts/images.sh import SOCKET [name...]  # import into the containerd at SOCKET (ns k8s.io)
#   scripts/images.sh kind-load [--cluster NAME] [--dry-run] [name...]  # docker's, into kind
#   scripts/images.sh list                     # name, tag, archive, size
#
# Images: pause (localhost/pause:3.10, our static tools/go/pause FROM scratch), coredns
# (localhost/coredns:<pinned version>, the tool cache's static CoreDNS FROM scratch), gateway,
# operator, subgraphs, k6, gatling (ghcr.io/graphfleet/graphfleet-<name>:<chart appVersion>).
# The last five come from docker/graphfleet-<name>.Dockerfile, built with podman from
# prebuilt binaries (--build-arg BINARIES=prebuilt) onto a distroless/cc-like base made
# with mmdebstrap from the host's Debian sources (--build-arg RUNTIME_BASE=...), so no
# rust, golang or distroless image is ever pulled; gatling's base adds Debian's headless
# JRE (openjdk-17-jre-headless). The Rust binaries are built here with
# `cargo build --release --locked` unless GRAPHFLEET_PREBUILT=1; k6 is the tool cache's
# (scripts/tools.sh k6); gatling's jars are scripts/gatling.sh's (Maven). Each image is saved as an OCI archive in $GF_CACHE/images/, keyed
# by a hash of everything that goes into it: an unchanged image is neither rebuilt nor
# re-saved, and `import` skips images a node already has at the same digest.
# Podman runs as root with its own storage and containers.conf under $GF_CACHE/images/podman
# (this machine: runc, cgroupfs, no CAP_SYS_RESOURCE); nothing in /etc is changed.
#
# Peers (graphfleet-bench --in-cluster): peer-hive-router (DIR/hive_router) and
# peer-apollo-router (DIR/router), a binary cargo-installed by the bench, onto the same cc
# base with the shared libraries ldd finds outside it, as the nonroot user; tagged
# localhost/graphfleet-bench-<peer>:<V>-<content key>, so a new build supersedes the old
# tags, which build (podman) and import (the node) remove. Not built by default.
#
# --engine docker: the Dockerfiles' own multi-stage builds (rust, golang, maven builders onto
# distroless :nonroot) with docker BuildKit from the repository, tagged as above, for a
# real cluster; kind-load then copies them into kind (cluster "graphfleet" by default).
# --dry-run prints what would be built or loaded and runs nothing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES_DIR=$GF_CACHE/images
REGISTRY=ghcr.io/graphfleet
PAUSE_REF=localhost/pause:3.10
COREDNS_REF=localhost/coredns:$COREDNS_VERSION
ALL=(pause coredns gateway operator subgraphs k6 gatling)
# Built only when named, from a binary the caller has (--binary-dir).
PEERS=(peer-hive-router peer-apollo-router)
# The images with a docker/graphfleet-<name>.Dockerfile: what --engine docker builds.
DOCKERFILES=(gateway operator subgraphs k6 gatling)
# Bump when the way images are assembled changes, so every cached archive is rebuilt.
RECIPE=graphfleet-images-1

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" >&2; exit "${1:-2}"; }

# --- small helpers ---------------------------------------------------------------------

now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }
sha() { sha256sum | cut -d' ' -f1; }
human() { numfmt --to=iec-i --suffix=B --format='%.1f' "$1"; }

app_version() {
  local v
  v=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$GF_ROOT/charts/graphfleet/Chart.yaml")
  [ -n "$v" ] || die "could not read appVersion from charts/graphfleet/Chart.yaml"
  echo "$v"
}

image_ref() {
  case $1 in
    pause) echo "$PAUSE_REF" ;;
    coredns) echo "$COREDNS_REF" ;;
    *) echo "$REGISTRY/graphfleet-$1:$(app_version)" ;;
  esac
}

check_names() {
  local n
  for n in "$@"; do
    case " ${ALL[*]} ${PEERS[*]} " in
      *" $n "*) ;;
      *) die "unknown image '$n' (images: ${ALL[*]}; peers: ${PEERS[*]})" ;;
    esac
  done
}

is_peer() { case " ${PEERS[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# The project Dockerfile of an image (relative to the repository); 1 if it has none.
dockerfile() {
  case " ${DOCKERFILES[*]} " in *" $1 "*) echo "docker/graphfleet-$1.Dockerfile" ;; *) return 1 ;; esac
}

# The record of the newest archive of one image: ref, archive, digest (of its manifest), key.
record() { echo "$IMAGES_DIR/$1.current"; }
read_record() { # NAME -> sets rec_ref rec_archive rec_digest rec_key; 1 if none
  local f k v; f=$(record "$1")
  rec_ref='' rec_archive='' rec_digest='' rec_key=''
  [ -f "$f" ] || return 1
  while IFS='=' read -r k v; do
    case $k in
      ref) rec_ref=$v ;; archive) rec_archive=$v ;; digest) rec_digest=$v ;; key) rec_key=$v ;;
    esac
  done <"$f"
  [ -n "$rec_archive" ] && [ -f "$rec_archive" ]
}

# --- podman, configured for this machine, with storage of its own ----------------------

podman_setup() {
  [ "$(id -u)" = 0 ] || die "building images needs root (rootful podman with its own storage)"
  "$GF_ROOT/scripts/host-packages.sh" podman runc mmdebstrap
  local dir=$IMAGES_DIR/podman
  # Run-time state (locks, mounts) belongs on /run, one directory per storage.
  local run; run=/run/graphfleet-podman/$(printf %s "$dir" | sha | cut -c1-12)
  mkdir -p "$dir/storage" "$run/storage" "$run/tmp"
  # Written whole and renamed: another build may be reading them.
  cat >"$dir/containers.conf.$$" <<EOF
# Written by scripts/images.sh. No CAP_SYS_RESOURCE here: rlimits cannot be raised above
# the current hard limits; crun refuses this machine's cgroup layout, runc works.
[containers]
default_ulimits = ["nproc=32768:32768", "nofile=20000:20000"]
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
tmp_dir = "$run/tmp"
EOF
  cat >"$dir/storage.conf.$$" <<EOF
# Written by scripts/images.sh: graphfleet's image builds keep to their own storage.
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$run/storage"
EOF
  mv "$dir/containers.conf.$$" "$dir/containers.conf"
  mv "$dir/storage.conf.$$" "$dir/storage.conf"
  export CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf
}

# --- the runtime base: distroless/cc-like, from Debian packages -------------------------

BASE_SUITE=bookworm # distroless cc-debian12
BASE_PACKAGES=libc6,libgcc-s1,ca-certificates,base-files,netbase,tzdata
# Runs on the extracted tree ($1); --variant=extract runs no maintainer scripts, so the
# users, /tmp and the CA bundle that distroless ships are made here. An --extract-hook:
# with --variant=extract, mmdebstrap (1.3) never runs --customize-hook commands.
# shellcheck disable=SC2016 # expanded by the hook's shell, not here
BASE_HOOK='set -eu
r=$1
printf "%s\n" "root:x:0:0:root:/root:/sbin/nologin" "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin" "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin" >"$r/etc/passwd"
printf "%s\n" "root:x:0:" "nobody:x:65534:" "nonroot:x:65532:" >"$r/etc/group"
mkdir -p "$r/root" "$r/home/nonroot" "$r/tmp" "$r/etc/ssl/certs"
chmod 0700 "$r/root"
chown 65532:65532 "$r/home/nonroot"
chmod 1777 "$r/tmp"
cat "$r"/usr/share/ca-certificates/*/*.crt >"$r/etc/ssl/certs/ca-certificates.crt"'
BASE_CHANGES=("USER 65532:65532" "WORKDIR /home/nonroot"
  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")

# The host's configured Debian sources (deb822 or one-line), pasted into mmdebstrap.
base_sources() {
  if [ -n "${GRAPHFLEET_APT_SOURCES:-}" ]; then
    echo "$GRAPHFLEET_APT_SOURCES"
  elif [ -s /etc/apt/sources.list.d/debian.sources ]; then
    echo /etc/apt/sources.list.d/debian.sources
  elif grep -qs '^deb ' /etc/apt/sources.list; then
    echo /etc/apt/sources.list
  else
    die "no Debian apt sources configured (looked at /etc/apt/sources.list.d/debian.sources and /etc/apt/sources.list); set GRAPHFLEET_APT_SOURCES to a sources file"
  fi
}

# The JRE flavour (the gatling image): Debian's headless OpenJDK 17 on top of the cc base.
# Extracted, not installed: no update-alternatives, so /usr/bin/java is linked here; what
# only a JDK or a desktop uses (javac's ct.sym, the no-compressed-oops CDS archive, docs)
# is left out.
JRE_PACKAGES=$BASE_PACKAGES,openjdk-17-jre-headless
JRE_HOME=/usr/lib/jvm/java-17-openjdk-amd64
# shellcheck disable=SC2016 # expanded by the hook's shell, not here
JRE_HOOK="$BASE_HOOK"'
ln -sf '"$JRE_HOME"'/bin/java "$r/usr/bin/java"
rm -rf "$r/usr/share/doc" "$r/usr/share/man" "$r/usr/share/locale" \
  "$r'"$JRE_HOME"'/lib/ct.sym" "$r'"$JRE_HOME"'/lib/server/classes_nocoops.jsa"'

# base_packages / base_hook FLAVOUR: what goes into the cc or jre base.
base_packages() { if [ "${1:-cc}" = jre ]; then echo "$JRE_PACKAGES"; else echo "$BASE_PACKAGES"; fi; }
base_hook() { if [ "${1:-cc}" = jre ]; then echo "$JRE_HOOK"; else echo "$BASE_HOOK"; fi; }

base_key() { # [FLAVOUR], default cc
  local sources; sources=$(base_sources)
  { echo "$RECIPE $BASE_SUITE extract $(base_packages "${1:-cc}")"; base_hook "${1:-cc}"
    printf '%s\n' "${BASE_CHANGES[@]}"; cat "$sources"; } | sha | cut -c1-16
}

# Prints the local base image of FLAVOUR (cc, the default, or jre), making it (cc: rootfs
# ~5 s, import ~2 s; jre: ~15 s, 230 MB) if it is not there.
ensure_base() {
  local flavour=${1:-cc} key; key=$(base_key "$flavour")
  local ref=localhost/graphfleet-base:$flavour-$key tarball=$IMAGES_DIR/base/$flavour-$key.tar
  if podman image exists "$ref"; then echo "$ref"; return 0; fi
  local start; start=$(now)
  mkdir -p "$IMAGES_DIR/base"
  if [ ! -s "$tarball" ]; then
    local logf=$IMAGES_DIR/base/$flavour-$key.log sources packages; sources=$(base_sources)
    packages=$(base_packages "$flavour")
    log "base: mmdebstrap $BASE_SUITE ($packages) from $sources (log: $logf)"
    if ! mmdebstrap --format=tar --variant=extract --include="$packages" --extract-hook="$(base_hook "$flavour")" \
      "$BASE_SUITE" "$tarball.partial" "$sources" >"$logf" 2>&1; then
      tail -n 20 "$logf" >&2; rm -f "$tarball.partial"
      die "base image: mmdebstrap failed; see $logf"
    fi
    mv "$tarball.partial" "$tarball"
    find "$IMAGES_DIR/base" -name "$flavour-*.tar" ! -name "$flavour-$key.tar" -delete
  fi
  local changes=() c
  for c in "${BASE_CHANGES[@]}"; do changes+=(--change "$c"); done
  podman import --quiet "${changes[@]}" "$tarball" "$ref" >/dev/null \
    || die "base image: podman import $tarball failed"
  log "base: $ref built in $(since "$start") s ($(human "$(stat -c %s "$tarball")") rootfs)"
  echo "$ref"
}

# --- inputs of each image ---------------------------------------------------------------

# rust_binary NAME -> "package binary"
rust_binary() {
  case $1 in
    gateway) echo "graphfleet-gateway graphfleet-gateway" ;;
    operator) echo "graphfleet-operator graphfleet-operator" ;;
    subgraphs) echo "graphfleet-bench-subgraphs graphfleet-subgraphs" ;;
  esac
}

# The cargo profile whose binaries go into the images: release, or debug for tests
# (GRAPHFLEET_IMAGE_PROFILE=debug: fast to build, slow to run).
profile() {
  case ${GRAPHFLEET_IMAGE_PROFILE:-release} in
    release | debug) echo "${GRAPHFLEET_IMAGE_PROFILE:-release}" ;;
    *) die "GRAPHFLEET_IMAGE_PROFILE is release or debug, not '$GRAPHFLEET_IMAGE_PROFILE'" ;;
  esac
}

# Puts the binary in place (cargo decides whether anything needs compiling).
cargo_build() {
  local pkg=$1 bin=$2 path
  path=$GF_ROOT/target/$(profile)/$2
  if [ "${GRAPHFLEET_PREBUILT:-0}" = 1 ]; then
    [ -x "$path" ] || die "GRAPHFLEET_PREBUILT=1 but $path does not exist"
    return 0
  fi
  local start logf=$IMAGES_DIR/logs/cargo-$bin.log; start=$(now)
  mkdir -p "$IMAGES_DIR/logs"
  local flags=(--locked); [ "$(profile)" = release ] && flags+=(--release)
  if ! (cd "$GF_ROOT" && cargo build "${flags[@]}" -p "$pkg" --bin "$bin") >"$logf" 2>&1; then
    tail -n 30 "$logf" >&2
    die "cargo build ${flags[*]} -p $pkg --bin $bin failed; see $logf"
  fi
  log "$bin: cargo build ${flags[*]} in $(since "$start") s"
}

k6_binary() {
  local dir
  dir=$("$GF_ROOT/scripts/tools.sh" --path | tr ':' '\n' | grep "/k6-$K6_VERSION\$" || true)
  [ -n "$dir" ] || die "scripts/tools.sh --path names no k6-$K6_VERSION directory"
  if [ ! -x "$dir/k6" ]; then
    "$GF_ROOT/scripts/tools.sh" k6 >&2
  fi
  [ -x "$dir/k6" ] || die "no k6 at $dir/k6 after scripts/tools.sh k6"
  echo "$dir/k6"
}

# stage NAME CTX: fills the build context CTX with exactly what goes into the image and
# a Containerfile (the project's Dockerfile, copied unchanged, so no .dockerignore next to
# it applies to this context).
stage() {
  local name=$1 ctx=$2
  rm -rf "$ctx"; mkdir -p "$ctx"
  case $name in
    pause)
      # -buildvcs=false: the checkout's commit and dirt must not change the bytes (and key).
      (cd "$GF_ROOT/tools/go/pause" && CGO_ENABLED=0 GOWORK=off GOFLAGS="-trimpath -buildvcs=false" \
        go build -ldflags="-s -w" -o "$ctx/pause" .) || die "pause: go build failed"
      # Ours, not a project Dockerfile: the sandbox holder, uid 65535 as upstream's pause.
      printf '%s\n' 'FROM scratch' 'COPY pause /pause' 'USER 65535:65535' \
        'ENTRYPOINT ["/pause"]' >"$ctx/Containerfile"
      ;;
    coredns)
      local dir
      dir=$("$GF_ROOT/scripts/tools.sh" --path | tr ':' '\n' | grep "/coredns-$COREDNS_VERSION\$" || true)
      [ -x "$dir/coredns" ] || "$GF_ROOT/scripts/tools.sh" coredns >&2
      [ -x "$dir/coredns" ] || die "no coredns at $dir/coredns after scripts/tools.sh coredns"
      install -m 0755 "$dir/coredns" "$ctx/coredns"
      # Ours: the cluster DNS of the local real nodes (static, so FROM scratch).
      printf '%s\n' 'FROM scratch' 'COPY coredns /coredns' 'USER 65532:65532' \
        'ENTRYPOINT ["/coredns"]' >"$ctx/Containerfile"
      ;;
    gateway | operator | subgraphs)
      local pkg bin
      read -r pkg bin <<<"$(rust_binary "$name")"
      cargo_build "$pkg" "$bin"
      install -m 0755 "$GF_ROOT/target/$(profile)/$bin" "$ctx/$bin"
      cp "$GF_ROOT/$(dockerfile "$name")" "$ctx/Containerfile"
      ;;
    k6)
      install -m 0755 "$(k6_binary)" "$ctx/k6"
      mkdir -p "$ctx/bench"
      cp -r "$GF_ROOT/bench/k6" "$GF_ROOT/bench/sets" "$ctx/bench/"
      cp "$GF_ROOT/$(dockerfile k6)" "$ctx/Containerfile"
      ;;
    gatling)
      local dir
      dir=$("$GF_ROOT/scripts/gatling.sh") || die "gatling: scripts/gatling.sh failed"
      cp -r "$dir/lib" "$ctx/lib"
      mkdir -p "$ctx/bench"
      cp -r "$GF_ROOT/bench/sets" "$ctx/bench/"
      cp "$GF_ROOT/$(dockerfile gatling)" "$ctx/Containerfile"
      ;;
  esac
}

# Hash of a directory tree: every path, type, mode and file content.
tree_hash() {
  (cd "$1" && find . -printf '%y %m %p\n' | LC_ALL=C sort \
    && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha
}

# --- build ------------------------------------------------------------------------------

build_one() {
  local name=$1 ref; ref=$(image_ref "$name")
  local start; start=$(now)
  local ctx=$IMAGES_DIR/context/$name
  stage "$name" "$ctx"
  local base='' flavour=cc args=()
  [ "$name" != gatling ] || flavour=jre
  if [ "$name" != pause ] && [ "$name" != coredns ]; then
    base=localhost/graphfleet-base:$flavour-$(base_key "$flavour")
    args=(--build-arg BINARIES=prebuilt --build-arg "RUNTIME_BASE=$base")
  fi
  local key
  key=$({ echo "$RECIPE $ref"; printf '%s\n' "${args[@]}"; tree_hash "$ctx"; } | sha)
  if read_record "$name" && [ "$rec_key" = "$key" ] && [ "$rec_ref" = "$ref" ]; then
    rm -rf "$ctx"
    log "$name: $ref cached ($(since "$start") s; $(basename "$rec_archive"), $(human "$(stat -c %s "$rec_archive")"))"
    return 0
  fi
  [ -z "$base" ] || ensure_base "$flavour" >/dev/null
  build_save "$name" "$ref" "$key" "$ctx" "$start" "${args[@]}"
}

# build_save NAME REF KEY CTX START [BUILD ARG...]: podman build of CTX as REF, saved as the
# OCI archive and record of NAME (older archives of NAME removed).
build_save() {
  local name=$1 ref=$2 key=$3 ctx=$4 start=$5; shift 5
  local bstart logf=$IMAGES_DIR/logs/build-$name.log; bstart=$(now)
  mkdir -p "$IMAGES_DIR/logs"
  # --pull=never: every FROM the build uses is local (or scratch); nothing is fetched.
  if ! podman build --pull=never --network=none -f "$ctx/Containerfile" \
    "$@" -t "$ref" "$ctx" >"$logf" 2>&1; then
    tail -n 20 "$logf" >&2
    die "image $name: podman build failed; see $logf"
  fi
  local archive=$IMAGES_DIR/$name-${key:0:16}.tar
  rm -f "$archive.partial"
  podman save --quiet --format oci-archive -o "$archive.partial" "$ref" \
    || die "image $name: podman save failed"
  local digest
  digest=$(tar -xOf "$archive.partial" index.json | grep -o '"digest":"sha256:[0-9a-f]*"' | head -n1 | cut -d'"' -f4)
  [ -n "$digest" ] || die "image $name: no manifest digest in $archive.partial"
  mv "$archive.partial" "$archive"
  printf 'ref=%s\narchive=%s\ndigest=%s\nkey=%s\n' "$ref" "$archive" "$digest" "$key" >"$(record "$name").new"
  mv "$(record "$name").new" "$(record "$name")"
  find "$IMAGES_DIR" -maxdepth 1 -name "$name-*.tar" ! -name "$(basename "$archive")" -delete
  rm -rf "$ctx"
  log "$name: $ref built in $(since "$start") s (podman build + save $(since "$bstart") s; $(basename "$archive"), $(human "$(stat -c %s "$archive")"))"
}

# --- peers: a gateway binary from elsewhere onto the cc base ----------------------------

peer_binary() { case $1 in peer-hive-router) echo hive_router ;; peer-apollo-router) echo router ;; esac; }
peer_repo() { echo "localhost/graphfleet-bench-${1#peer-}"; }

# Libraries the cc base has (Debian libc6 and libgcc-s1), so a binary's other shared
# libraries must travel with it.
IN_BASE="linux-vdso.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 libc.so.6 libm.so.6
libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libresolv.so.2 libgcc_s.so.1"
PEER_LIB_DIR=/usr/local/lib/graphfleet-peer

# ldd's output on stdin -> the host paths of the libraries the base lacks, one a line.
extra_libs() {
  awk -v base="$IN_BASE" 'BEGIN { n = split(base, b, /[ \n]+/); for (i = 1; i <= n; i++) have[b[i]] = 1 }
    $2 == "=>" && !($1 in have) && $3 ~ /^\// { print $3 }'
}

# peer_containerfile BASE BINARY [LIBRARY...]: the base, the binary, its extra libraries;
# the base's nonroot user.
peer_containerfile() {
  local base=$1 bin=$2; shift 2
  printf '%s\n' "FROM $base" "COPY $bin /usr/local/bin/$bin"
  [ $# -eq 0 ] || printf '%s\n' "COPY lib/ $PEER_LIB_DIR/" "ENV LD_LIBRARY_PATH=$PEER_LIB_DIR"
  printf '%s\n' 'USER 65532:65532' 'WORKDIR /tmp' "ENTRYPOINT [\"/usr/local/bin/$bin\"]"
}

# build_peer NAME DIR VERSION: prints the image's ref (its tag names its content).
build_peer() {
  local name=$1 dir=$2 version=$3 bin; bin=$(peer_binary "$name")
  local start; start=$(now)
  [ -x "$dir/$bin" ] || die "$name: no executable $dir/$bin"
  local base; base=localhost/graphfleet-base:cc-$(base_key cc)
  local ctx=$IMAGES_DIR/context/$name libs=() lib
  rm -rf "$ctx"; mkdir -p "$ctx"
  install -m 0755 "$dir/$bin" "$ctx/$bin"
  # A static binary makes ldd fail ("not a dynamic executable"): nothing to add then.
  mapfile -t libs < <(ldd "$dir/$bin" 2>/dev/null | extra_libs || true)
  for lib in "${libs[@]}"; do
    # install copies the content (ldd's path may be a symlink) under the name asked for.
    mkdir -p "$ctx/lib"; install -m 0644 "$lib" "$ctx/lib/${lib##*/}"
  done
  peer_containerfile "$base" "$bin" "${libs[@]##*/}" >"$ctx/Containerfile"
  local key ref
  key=$({ echo "$RECIPE $name $version"; tree_hash "$ctx"; } | sha)
  ref=$(peer_repo "$name"):$version-${key:0:12}
  if read_record "$name" && [ "$rec_key" = "$key" ] && [ "$rec_ref" = "$ref" ]; then
    rm -rf "$ctx"
    log "$name: $ref cached ($(since "$start") s; $(basename "$rec_archive"), $(human "$(stat -c %s "$rec_archive")"))"
  else
    ensure_base cc >/dev/null
    [ ${#libs[@]} -eq 0 ] || log "$name: with ${libs[*]##*/}"
    build_save "$name" "$ref" "$key" "$ctx" "$start"
  fi
  local old
  for old in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$(peer_repo "$name")"); do
    [ "$old" = "$ref" ] || podman rmi --force "$old" >/dev/null 2>&1 || true
  done
  echo "$ref"
}

# --- docker: the Dockerfiles' own multi-stage builds -------------------------------------

# run_or_print DRY CMD...: CMD, or (DRY=1) CMD printed on stdout.
run_or_print() {
  local dry=$1; shift
  if [ "$dry" = 1 ]; then printf '%s\n' "$*"; else "$@"; fi
}

docker_names() { # NAME... (default: every Dockerfile) -> checked names, one a line
  local n
  [ $# -gt 0 ] || set -- "${DOCKERFILES[@]}"
  for n in "$@"; do
    dockerfile "$n" >/dev/null || die "image '$n' has no Dockerfile (docker builds: ${DOCKERFILES[*]})"
    echo "$n"
  done
}

docker_build() { # DRY NAME...
  local dry=$1 names n; shift
  names=$(docker_names "$@")
  [ "$dry" = 1 ] || command -v docker >/dev/null || die "docker is not installed"
  cd "$GF_ROOT"
  for n in $names; do
    [ "$dry" = 1 ] || log "$n: docker build $(image_ref "$n")"
    run_or_print "$dry" env DOCKER_BUILDKIT=1 docker build -f "$(dockerfile "$n")" -t "$(image_ref "$n")" . \
      || die "image $n: docker build failed"
  done
}

cmd_kind_load() {
  local dry=0 cluster=${KIND_CLUSTER:-graphfleet} names=() n
  while [ $# -gt 0 ]; do
    case $1 in
      --cluster) [ $# -ge 2 ] || usage; cluster=$2; shift 2 ;;
      --dry-run) dry=1; shift ;;
      -*) die "unknown option '$1' (kind-load: --cluster NAME, --dry-run)" ;;
      *) names+=("$1"); shift ;;
    esac
  done
  local list; list=$(docker_names "${names[@]}")
  [ "$dry" = 1 ] || command -v kind >/dev/null || die "kind is not installed"
  for n in $list; do
    [ "$dry" = 1 ] || log "$n: loading $(image_ref "$n") into kind cluster $cluster"
    run_or_print "$dry" kind load docker-image "$(image_ref "$n")" --name "$cluster" \
      || die "image $n: kind load failed"
  done
}

# --- build: options ---------------------------------------------------------------------

cmd_build() {
  local engine=podman dry=0 dir='' version='' names=() n
  while [ $# -gt 0 ]; do
    case $1 in
      --engine) [ $# -ge 2 ] || usage; engine=$2; shift 2 ;;
      --dry-run) dry=1; shift ;;
      --binary-dir) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
      --version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
      -*) die "unknown option '$1' (build: --engine podman|docker, --dry-run, --binary-dir DIR, --version V)" ;;
      *) names+=("$1"); shift ;;
    esac
  done
  case $engine in
    podman) ;;
    docker)
      [ -z "$dir$version" ] || die "--binary-dir and --version are for podman's peer images"
      docker_build "$dry" "${names[@]}"; return 0 ;;
    *) die "--engine is podman or docker, not '$engine'" ;;
  esac
  [ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
  check_names "${names[@]}"
  local peers=0
  for n in "${names[@]}"; do is_peer "$n" && peers=1; done
  if [ "$peers" = 1 ]; then
    if [ -z "$dir" ] || [ -z "$version" ]; then die "peer images need --binary-dir DIR and --version V"; fi
    # The version is part of a tag (128 characters at most, 13 of them the content key).
    [[ $version =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}$ ]] || die "--version '$version' cannot be part of an image tag"
  elif [ -n "$dir$version" ]; then
    die "--binary-dir and --version are for peer images (${PEERS[*]})"
  fi
  if [ "$dry" = 1 ]; then
    for n in "${names[@]}"; do
      if is_peer "$n"; then echo "$n: $(peer_repo "$n"):$version-<key> from $dir/$(peer_binary "$n") onto the cc base"
      elif dockerfile "$n" >/dev/null; then echo "$n: $(image_ref "$n") from $(dockerfile "$n") (BINARIES=prebuilt onto the local base)"
      else echo "$n: $(image_ref "$n") FROM scratch"; fi
    done
    return 0
  fi
  podman_setup
  mkdir -p "$IMAGES_DIR"
  exec 9>"$IMAGES_DIR/.lock"
  flock 9 || die "could not lock $IMAGES_DIR/.lock"
  for n in "${names[@]}"; do
    if is_peer "$n"; then build_peer "$n" "$dir" "$version"; else build_one "$n"; fi
  done
  # Images whose tag moved to a newer build, and the base's old versions: not kept.
  podman image prune --force >/dev/null 2>&1 || true
}

# --- import -----------------------------------------------------------------------------

# The digest the tag REF has in the containerd at SOCKET, if any.
node_digest() {
  ctr -a "$1" -n k8s.io images ls "name==$2" 2>/dev/null | awk -v r="$2" '$1 == r { print $3 }'
}

cmd_import() {
  [ $# -ge 1 ] || usage
  local sock=$1; shift
  local names=("$@")
  [ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
  check_names "${names[@]}"
  "$GF_ROOT/scripts/host-packages.sh" containerd
  [ -S "$sock" ] || die "no containerd socket at $sock"
  ctr -a "$sock" version >/dev/null 2>&1 || die "containerd at $sock does not answer (ctr -a $sock version)"
  local n start have
  for n in "${names[@]}"; do
    read_record "$n" || die "no archive for image '$n'; run: scripts/images.sh build $n"
    start=$(now)
    have=$(node_digest "$sock" "$rec_ref")
    if [ "$have" = "$rec_digest" ] \
      && ctr -a "$sock" -n k8s.io images check "name==$rec_ref" 2>/dev/null | grep -q 'complete.*true$'; then
      log "$n: $rec_ref already in $sock (${rec_digest:7:12})"
      prune_node "$sock" "$n"
      continue
    fi
    local out
    if ! out=$(ctr -a "$sock" -n k8s.io images import "$rec_archive" 2>&1); then
      printf '%s\n' "$out" >&2
      die "importing image $n ($rec_ref, $rec_archive) into the containerd at $sock failed"
    fi
    have=$(node_digest "$sock" "$rec_ref")
    [ "$have" = "$rec_digest" ] \
      || die "imported image $n into $sock, but $rec_ref there has digest '${have:-none}', not $rec_digest"
    log "$n: $rec_ref imported into $sock in $(since "$start") s"
    prune_node "$sock" "$n"
  done
}

# prune_node SOCKET NAME: a peer's tags name their content, so each new build leaves the
# old tags on the node; they go (the record's ref stays).
prune_node() {
  is_peer "$2" || return 0
  local old
  for old in $(ctr -a "$1" -n k8s.io images ls -q 2>/dev/null); do
    case $old in
      "$(peer_repo "$2")":*) [ "$old" = "$rec_ref" ] || ctr -a "$1" -n k8s.io images rm "$old" >/dev/null 2>&1 || true ;;
    esac
  done
}

# --- list -------------------------------------------------------------------------------

cmd_list() {
  local n
  printf '%-10s %-50s %-8s %s\n' NAME TAG SIZE ARCHIVE
  for n in "${ALL[@]}"; do
    if read_record "$n"; then
      printf '%-10s %-50s %-8s %s\n' "$n" "$rec_ref" "$(human "$(stat -c %s "$rec_archive")")" "$rec_archive"
    else
      printf '%-10s %-50s %-8s %s\n' "$n" "$(image_ref "$n")" - "(not built: scripts/images.sh build $n)"
    fi
  done
  for n in "${PEERS[@]}"; do
    if read_record "$n"; then
      printf '%-10s %-50s %-8s %s\n' "$n" "$rec_ref" "$(human "$(stat -c %s "$rec_archive")")" "$rec_archive"
    fi
  done
}

# Sourced (the deploy tests call single functions): define only.
(return 0 2>/dev/null) && return 0

case ${1:-} in
  build) shift; cmd_build "$@" ;;
  import) shift; cmd_import "$@" ;;
  kind-load) shift; cmd_kind_load "$@" ;;
  list) shift; cmd_list ;;
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac
