#!/usr/bin/env bash
# Builds graphfleet's container images and loads them into a kind cluster.
#
#   docker/build-images.sh                 # build all five, load into kind cluster "graphfleet"
#   docker/build-images.sh --no-load       # build only
#   KIND_CLUSTER=dev TAG=0.1.0 docker/build-images.sh gateway operator
#
# Images are ghcr.io/graphfleet/<name>:<TAG>, TAG defaulting to the chart's appVersion,
# which is what charts/graphfleet and manifests/ refer to. Needs docker (BuildKit) and,
# unless --no-load, kind. The Rust images take a while on first build (release, fat LTO).
# Without docker or a registry, scripts/images.sh builds the same Dockerfiles with podman
# from local release binaries onto a Debian-made base, and imports them into containerd.
set -euo pipefail

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(dirname "$(dirname "$self")")
cd "$root"

registry=${REGISTRY:-ghcr.io/graphfleet}
tag=${TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/graphfleet/Chart.yaml)}
cluster=${KIND_CLUSTER:-graphfleet}
load=1

all=(gateway operator subgraphs k6 gatling)
wanted=()
for arg in "$@"; do
  case $arg in
    --no-load) load=0 ;;
    -h|--help) sed -n '2,12p' "$self"; exit 0 ;;
    gateway|operator|subgraphs|k6|gatling) wanted+=("$arg") ;;
    *) echo "unknown argument: $arg (images: ${all[*]}; flags: --no-load)" >&2; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=("${all[@]}")
[ -n "$tag" ] || { echo "could not read appVersion from charts/graphfleet/Chart.yaml" >&2; exit 1; }

command -v docker >/dev/null || { echo "docker is not installed" >&2; exit 1; }
if [ "$load" = 1 ]; then
  command -v kind >/dev/null || { echo "kind is not installed (or pass --no-load)" >&2; exit 1; }
fi

for name in "${wanted[@]}"; do
  image=$registry/graphfleet-$name:$tag
  echo "==> building $image"
  DOCKER_BUILDKIT=1 docker build -f "docker/graphfleet-$name.Dockerfile" -t "$image" .
  if [ "$load" = 1 ]; then
    echo "==> loading $image into kind cluster $cluster"
    kind load docker-image "$image" --name "$cluster"
  fi
done
