# Shared shell helpers: sourced, never run.
# shellcheck shell=bash
GF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../tools/versions.env
. "$GF_ROOT/tools/versions.env"
GF_CACHE=${GRAPHFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/graphfleet}
GF_TOOLS=$GF_CACHE/tools

# tool_dir NAME VERSION: where one pinned tool's binaries live.
tool_dir() { echo "$GF_TOOLS/$1-$2"; }

# The bin directories of every pinned tool, for PATH.
tools_path() {
  echo "$(tool_dir etcd "$ETCD_VERSION"):$(tool_dir kubernetes "$KUBERNETES_VERSION"):$(tool_dir kubenode "$KUBERNETES_VERSION"):$(tool_dir coredns "$COREDNS_VERSION"):$(tool_dir kwok "$KWOK_VERSION"):$(tool_dir helm "$HELM_VERSION"):$(tool_dir k6 "$K6_VERSION")"
}

log() { printf '\033[1m[graphfleet]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[graphfleet] error:\033[0m %s\n' "$*" >&2; exit 1; }
