#!/usr/bin/env bash
# The main job, end to end on this machine:
#   1. build everything (release) and the pinned tools;
#   2. start the local Kubernetes control plane with its router, subgraph and client pools;
#   3. serve the `fed` benchmark subgraphs on loopback and describe them as Subgraph
#      resources (schema by introspection of `_service { sdl }`), plus a GraphGateway;
#   4. run the operator, which composes the supergraph in-process, stores it in a
#      ConfigMap and rolls the gateway Deployment out on the router pool (kwok);
#   5. serve that supergraph with graphfleet-gateway under a 1-core CPU limit, next to
#      its peers, and measure each with open-model k6 load; print the report.
# Environment: GRAPHFLEET_PEERS (default "hive-router apollo-router hive-gateway"; the
# routers are built once into the tool cache, ~15 min each), GRAPHFLEET_DURATION
# (seconds per measured run, default 30), GRAPHFLEET_CAPACITY=0 to skip the capacity search.
# The cluster keeps running afterwards; stop it with: scripts/cluster.sh down
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
t0=$SECONDS
export PATH="$(tools_path):$PATH"
NS=graphfleet-demo
RUN=$GF_ROOT/.graphfleet/run
KC=$GF_ROOT/.graphfleet/cluster/kubeconfig
PEERS=${GRAPHFLEET_PEERS-hive-router apollo-router hive-gateway}
DURATION=${GRAPHFLEET_DURATION:-30}
k() { kubectl --kubeconfig "$KC" "$@"; }

log "pinned tools"
scripts/tools.sh

log "building the workspace (release)"
cargo build --workspace --release --locked

log "local cluster"
scripts/cluster.sh up
scripts/cluster.sh status

rm -rf "$RUN"; mkdir -p "$RUN"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

log "fed subgraphs on 127.0.0.1:4200"
target/release/graphfleet-subgraphs --set fed --listen 127.0.0.1:4200 >"$RUN/subgraphs.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -fsS http://127.0.0.1:4200/stats >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS http://127.0.0.1:4200/stats >/dev/null || die "the fed subgraphs did not start (see $RUN/subgraphs.log)"

log "operator (namespace $NS)"
k apply --server-side --force-conflicts -f crds/ >/dev/null
k create namespace "$NS" --dry-run=client -o yaml | k apply -f - >/dev/null
ops_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
KUBECONFIG=$KC WATCH_NAMESPACE=$NS GRAPHFLEET_OPS_ADDR=127.0.0.1:$ops_port POD_NAMESPACE=$NS \
  target/release/graphfleet-operator >"$RUN/operator.log" 2>&1 &
pids+=($!)

log "Subgraph and GraphGateway resources"
for sg in accounts inventory products reviews; do
  cat <<YAML
---
apiVersion: graphfleet.dev/v1alpha1
kind: Subgraph
metadata: {name: $sg, labels: {graphfleet.dev/set: fed}}
spec: {url: "http://127.0.0.1:4200/$sg"}
YAML
done | k -n "$NS" apply -f -
k -n "$NS" apply -f manifests/graphgateway.yaml
t_apply=$SECONDS
k -n "$NS" wait graphgateway/fed --for=condition=Ready --timeout=120s ||
  { tail -n 30 "$RUN/operator.log" >&2; die "the GraphGateway did not become Ready (operator log: $RUN/operator.log)"; }
log "GraphGateway Ready $((SECONDS - t_apply)) s after apply"
k -n "$NS" get subgraphs,graphgateways
k -n "$NS" get deployments,pods -o wide
k -n "$NS" get configmap fed-supergraph -o jsonpath='{.data.supergraph\.graphql}' >"$RUN/supergraph.graphql"
[ -s "$RUN/supergraph.graphql" ] || die "the operator's ConfigMap fed-supergraph holds no supergraph"
log "the operator's supergraph: $RUN/supergraph.graphql ($(wc -c <"$RUN/supergraph.graphql") bytes)"
cleanup; pids=()

log "load test: graphfleet${PEERS:+ and $PEERS}, 1 CPU each, open model"
gateways=(--gateway graphfleet)
for p in $PEERS; do gateways+=(--gateway "$p"); done
capacity=(--capacity); [ "${GRAPHFLEET_CAPACITY:-1}" = 0 ] && capacity=()
target/release/graphfleet-bench --supergraph "$RUN/supergraph.graphql" \
  --scenario query --scenario deduplication "${gateways[@]}" "${capacity[@]}" \
  --duration "$DURATION" --out "$RUN/report"
cat "$RUN/report/REPORT.md"

log "done in $((SECONDS - t0)) s. Report: $RUN/report/REPORT.md"
log "cluster: KUBECONFIG=$KC kubectl -n $NS get graphgateways   (stop: scripts/cluster.sh down)"
