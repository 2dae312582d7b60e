#!/usr/bin/env bash
# The main job: builds everything, starts the local Kubernetes control plane with
# its router, subgraph and client node pools, and shows them.
# The cluster keeps running; stop it with: scripts/cluster.sh down
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
t0=$SECONDS

log "pinned tools"
scripts/tools.sh

log "building the workspace (release)"
cargo build --workspace --release --locked

log "local cluster"
scripts/cluster.sh up
scripts/cluster.sh status

log "done in $((SECONDS - t0)) s. kubeconfig: $GF_ROOT/.graphfleet/cluster/kubeconfig"
log "try: KUBECONFIG=.graphfleet/cluster/kubeconfig $(tool_dir kubernetes "$KUBERNETES_VERSION")/kubectl get nodes"
log "stop: scripts/cluster.sh down"
