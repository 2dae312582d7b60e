#!/usr/bin/env bash
# Installs the Debian packages the real-node cluster and the local image builds need,
# only those not installed yet (a second run installs nothing and takes well under a
# second). Usage: scripts/host-packages.sh [package...]   (default: all of them)
#
#   containerd runc containernetworking-plugins conntrack iptables nftables socat iproute2
#                                      the nodes (scripts/cluster.sh)
#   podman buildah mmdebstrap          the images (scripts/images.sh)
#   nodejs npm                         the composition oracle (scripts/test.sh)
#   redis-server                       the fleet-wide rate limit tests (scripts/test.sh)
#   chromium prometheus                the GraphiQL browser test and the dashboards test
#                                      (scripts/test.sh; only when named)
#
# Needs root (or sudo) and the machine's configured apt sources; nothing else.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

all=(containerd runc containernetworking-plugins conntrack iptables nftables socat
  podman buildah mmdebstrap iproute2 nodejs npm redis-server)
want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${all[@]}")

missing=()
for p in "${want[@]}"; do
  # `dpkg -s` also lists removed-but-configured packages; only "install ok installed" counts.
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0

sudo=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "installing ${missing[*]} needs root (sudo not found)"
  sudo=(sudo)
fi
log "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
  # A stale package index is the usual cause; refresh it once and retry.
  "${sudo[@]}" apt-get update >&2 || die "apt-get update failed"
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2 \
    || die "could not install Debian packages: ${missing[*]}"
fi
