#!/usr/bin/env bash
# Builds every pinned tool (tools/versions.env) from the Go module proxy into the
# tool cache, outside the clone, keyed by version. Cached tools are skipped, so a
# second run takes seconds. Usage: scripts/tools.sh [tool...]   (default: all)
# Prints the PATH entries to use with: scripts/tools.sh --path
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ "${1:-}" = "--path" ]; then tools_path; exit 0; fi

K8S_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  K8S_LDFLAGS+=" -X $pkg.gitVersion=v$KUBERNETES_VERSION -X $pkg.gitMajor=${KUBERNETES_VERSION%%.*}"
  minor=${KUBERNETES_VERSION#*.}; K8S_LDFLAGS+=" -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
done

# build NAME VERSION BINARIES -- COMMAND...: runs COMMAND with $OUT set to a fresh
# staging dir, then moves it into place only if every binary was produced.
build() {
  local name=$1 version=$2 bins=$3; shift 4
  local dir; dir=$(tool_dir "$name" "$version")
  local missing=0 b
  for b in $bins; do [ -x "$dir/$b" ] || missing=1; done
  if [ $missing = 0 ]; then log "$name $version: cached"; return 0; fi
  mkdir -p "$GF_TOOLS/logs"
  local logf="$GF_TOOLS/logs/$name-$version.log" start=$SECONDS
  export OUT="$dir.partial.$$"
  rm -rf "$OUT"; mkdir -p "$OUT"
  log "$name $version: building (log: $logf)"
  if ! "$@" >"$logf" 2>&1; then
    tail -n 20 "$logf" >&2
    rm -rf "$OUT"
    die "tool $name $version failed to build; see $logf"
  fi
  for b in $bins; do
    [ -x "$OUT/$b" ] || { rm -rf "$OUT"; die "tool $name $version: build produced no '$b'; see $logf"; }
  done
  rm -rf "$dir"; mv "$OUT" "$dir"
  log "$name $version: built in $((SECONDS - start)) s"
}

# go install into $OUT, outside any module so only the pinned version counts.
go_install() { (cd "$GF_TOOLS" && GOWORK=off GOBIN="$OUT" go install -trimpath -ldflags="-s -w ${2:-}" "$1"); }
go_install_static() { (export CGO_ENABLED=0; go_install "$@"); }

# helm reports its own version and assumes this Kubernetes minor offline (helm template, lint).
HELM_LDFLAGS="-X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  HELM_LDFLAGS+=" -X $pkg.k8sVersionMajor=${KUBERNETES_VERSION%%.*} -X $pkg.k8sVersionMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)"
done

command -v go >/dev/null || die "go is required to build the pinned tools (not found on PATH)"
mkdir -p "$GF_TOOLS"

want=${*:-etcd kubernetes kubenode coredns kwok helm k6}
for t in $want; do
  case $t in
    etcd) build etcd "$ETCD_VERSION" "etcd" -- \
      bash -c 'cd "$1" && go build -trimpath -ldflags="-s -w" -o "$OUT/etcd" .' _ "$GF_ROOT/tools/go/etcd" ;;
    kubernetes) build kubernetes "$KUBERNETES_VERSION" "kube-apiserver kube-controller-manager kube-scheduler kubectl" -- \
      bash -c 'cd "$1" && go build -trimpath -ldflags="$2" -o "$OUT/" ./kube-apiserver ./kube-controller-manager ./kube-scheduler ./kubectl' _ "$GF_ROOT/tools/go/k8s" "$K8S_LDFLAGS" ;;
    kubenode) build kubenode "$KUBERNETES_VERSION" "kubelet kube-proxy" -- \
      bash -c 'cd "$1" && go build -trimpath -ldflags="$2" -o "$OUT/" ./kubelet ./kube-proxy' _ "$GF_ROOT/tools/go/kubenode" "$K8S_LDFLAGS" ;;
    # Static (no cgo): it runs as a pod from an image with nothing else in it.
    coredns) build coredns "$COREDNS_VERSION" "coredns" -- \
      go_install_static "github.com/coredns/coredns@v$COREDNS_VERSION" ;;
    kwok) build kwok "$KWOK_VERSION" "kwok" -- go_install "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" ;;
    helm) build helm "$HELM_VERSION" "helm" -- go_install "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" "$HELM_LDFLAGS" ;;
    k6) build k6 "$K6_VERSION" "k6" -- go_install "go.k6.io/k6@v$K6_VERSION" ;;
    # Not in the default list (the test command asks for it): a cargo build of some
    # 600 crates. Its own Cargo.lock (--locked); dev profile, minutes instead of ~20.
    # `graphiql` leaves out the Laboratory UI, whose build runs npm against a package
    # the registry may not serve.
    hive-router-dev) build hive-router-dev "$HIVE_ROUTER_VERSION" "bin/hive_router" -- \
      bash -c 'CARGO_TARGET_DIR="$OUT.target" cargo install "hive-router@$1" --locked --ignore-rust-version --features graphiql --debug --root "$OUT"; s=$?; rm -rf "$OUT.target"; exit $s' _ "$HIVE_ROUTER_VERSION" ;;
    *) die "unknown tool '$t' (known: etcd kubernetes kubenode coredns kwok helm k6 hive-router-dev)" ;;
  esac
done
