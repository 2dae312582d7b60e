#!/usr/bin/env bash
# Builds graphfleet's container images on this machine, without any registry, and imports
# them into the real nodes' containerd instances.
#
#   scripts/images.sh build [name...]          # build what changed; default: all images
#   scripts/images.sh import SOCKET [name...]  # import into the containerd at SOCKET (ns k8s.io)
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
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

IMAGES_DIR=$GF_CACHE/images
REGISTRY=ghcr.io/graphfleet
PAUSE_REF=localhost/pause:3.10
COREDNS_REF=localhost/coredns:$COREDNS_VERSION
ALL=(pause coredns gateway operator subgraphs k6 gatling)
# Bump when the way images are assembled changes, so every cached archive is rebuilt.
RECIPE=graphfleet-images-1

usage() { sed -n '2,8p' "$0" >&2; exit "${1:-2}"; }

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
    case " ${ALL[*]} " in *" $n "*) ;; *) die "unknown image '$n' (images: ${ALL[*]})" ;; esac
  done
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
      cp "$GF_ROOT/docker/graphfleet-$name.Dockerfile" "$ctx/Containerfile"
      ;;
    k6)
      install -m 0755 "$(k6_binary)" "$ctx/k6"
      mkdir -p "$ctx/loadtest"
      cp -r "$GF_ROOT/bench/k6" "$GF_ROOT/bench/sets" "$ctx/bench/"
      cp "$GF_ROOT/docker/graphfleet-k6.Dockerfile" "$ctx/Containerfile"
      ;;
    gatling)
      local dir
      dir=$("$GF_ROOT/scripts/gatling.sh") || die "gatling: scripts/gatling.sh failed"
      cp -r "$dir/lib" "$ctx/lib"
      mkdir -p "$ctx/loadtest"
      cp -r "$GF_ROOT/bench/sets" "$ctx/bench/"
      cp "$GF_ROOT/docker/graphfleet-gatling.Dockerfile" "$ctx/Containerfile"
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
  local bstart logf=$IMAGES_DIR/logs/build-$name.log; bstart=$(now)
  mkdir -p "$IMAGES_DIR/logs"
  # --pull=never: every FROM the build uses is local (or scratch); nothing is fetched.
  if ! podman build --pull=never --network=none -f "$ctx/Containerfile" \
    "${args[@]}" -t "$ref" "$ctx" >"$logf" 2>&1; then
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

cmd_build() {
  local names=("$@")
  [ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
  check_names "${names[@]}"
  podman_setup
  mkdir -p "$IMAGES_DIR"
  exec 9>"$IMAGES_DIR/.lock"
  flock 9 || die "could not lock $IMAGES_DIR/.lock"
  local n
  for n in "${names[@]}"; do build_one "$n"; done
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
}

case ${1:-} in
  build) shift; cmd_build "$@" ;;
  import) shift; cmd_import "$@" ;;
  list) shift; cmd_list ;;
  -h | --help | help) usage 0 ;;
  *) usage ;;
esac
