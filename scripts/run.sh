#!/usr/bin/env bash
# The main job, end to end on this machine's real nodes:
#   1. build the workspace (release) and the pinned tools; start the local cluster: a
#      control plane and three real nodes (router-0, subgraph-0, client-0) running real
#      containers in a network namespace with no route out; build the images here and
#      import them into every node;
#   2. `helm install` the chart: the operator runs as a pod;
#   3. the fed benchmark subgraphs as Deployments + Services on the subgraph pool, their
#      Subgraph resources read by introspection over cluster DNS, and a GraphGateway whose
#      pods run on router-0 under a 1-CPU limit and turn Ready through their probes;
#   4. a LoadTest: k6 Jobs on client-0, open model, results in the LoadTest's status;
#   5. a second LoadTest while a Subgraph's SDL changes (the operator composes and rolls
#      the gateway out) and while the Deployment is restarted: zero failed requests;
#   6. safe schema delivery under load: checks against the served operations, canary
#      steps, an automatic rollback and a pinned revision (deploy-tests/tests/real_delivery.rs);
#   7. every benchmark scenario in the cluster (graphfleet-bench --in-cluster: per set the
#      Subgraphs and a GraphGateway the operator composes, GRAPHFLEET_PEERS as Deployments
#      serving the same supergraph, all on router-0 under the same CPU limit; per scenario a
#      LoadTest with every gateway a target, at the scenario's rate);
#   8. the report (REPORT.md, SVG charts) from those results, and the timings;
#   9. where to open the operator's web view and GraphiQL, with a screenshot of each
#      next to REPORT.md (scripts/views.sh).
# Environment: GRAPHFLEET_RATE (req/s, default 100), GRAPHFLEET_DURATION (seconds of the
# first LoadTest, default 30), GRAPHFLEET_PEERS (gateways to measure side by side with
# graphfleet as pods on router-0, e.g. "hive-router apollo-router"; default none; the
# peers are built once into the tool cache, ~15 min each), GRAPHFLEET_STATE (the
# cluster's state directory, default .graphfleet/cluster), GRAPHFLEET_SCENARIOS (the
# scenarios of step 6, space-separated; default every one graphfleet-bench knows), GRAPHFLEET_BENCH_DURATION (seconds per scenario and
# gateway in step 6, default 20).
# The cluster keeps running afterwards; stop it with: scripts/cluster.sh down
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
t0=$SECONDS
export PATH="$(tools_path):$PATH"
NS=graphfleet-demo
SYS=graphfleet-system
RUN=$GF_ROOT/.graphfleet/run
STATE=${GRAPHFLEET_STATE:-$GF_ROOT/.graphfleet/cluster}
KC=$STATE/kubeconfig
RATE=${GRAPHFLEET_RATE:-100}
DURATION=${GRAPHFLEET_DURATION:-30}
PEERS=${GRAPHFLEET_PEERS-}
SCENARIOS=${GRAPHFLEET_SCENARIOS-}
BENCH_DURATION=${GRAPHFLEET_BENCH_DURATION:-20}
k() { kubectl --kubeconfig "$KC" "$@"; }
timing() { echo "$1: $2" >>"$RUN/timings.txt"; log "$1: $2"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
since_s() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f s", (b - a) / 1000 }'; }

log "pinned tools"
scripts/tools.sh
# gateway/build.rs installs GraphiQL's pinned npm packages into the gateway binary.
command -v npm >/dev/null || scripts/host-packages.sh nodejs npm

log "building the workspace (release)"
cargo build --workspace --release --locked

log "local cluster on real nodes"
scripts/cluster.sh up --state "$STATE"
scripts/cluster.sh status --state "$STATE"
rm -rf "$RUN"; mkdir -p "$RUN"
. "$STATE/ids.env"

log "images (built here, imported into every node)"
t=$SECONDS
GRAPHFLEET_PREBUILT=1 scripts/cluster.sh images --state "$STATE" gateway operator subgraphs k6
timing "images built and imported" "$((SECONDS - t)) s"

log "helm install: the operator as a pod"
t=$SECONDS
helm --kubeconfig "$KC" upgrade --install graphfleet charts/graphfleet --namespace "$SYS" --create-namespace \
  --set-json 'nodeSelector={"graphfleet.dev/pool":"client"}' \
  --set-json 'tolerations=[{"key":"graphfleet.dev/pool","operator":"Equal","value":"client","effect":"NoSchedule"}]' \
  --set image.pullPolicy=Never --wait --timeout 120s >"$RUN/helm.log" ||
  { cat "$RUN/helm.log" >&2; k -n "$SYS" get pods -o wide >&2 || true; die "helm install did not finish (see $RUN/helm.log)"; }
timing "helm install → operator Available" "$((SECONDS - t)) s"
k -n "$SYS" get pods -o wide

log "fed subgraphs on subgraph-0 (Subgraph schemas by introspection over cluster DNS)"
k create namespace "$NS" --dry-run=client -o yaml | k apply -f - >/dev/null
# The same manifest users apply, minus the ConfigMap schema source: the operator asks
# each subgraph for `_service { sdl }` through its Service.
sed '/^  configMapRef:/,+2d' manifests/fed-subgraphs.yaml | k -n "$NS" apply -f - >/dev/null
k -n "$NS" rollout status deployment/accounts deployment/inventory deployment/products deployment/reviews --timeout=120s >/dev/null ||
  die "the fed subgraphs did not become available (kubectl -n $NS describe pods)"

log "GraphGateway fed on router-0 (1 CPU)"
t_apply=$(now_ms)
k -n "$NS" apply -f manifests/graphgateway.yaml >/dev/null
k -n "$NS" wait graphgateway/fed --for=condition=Ready --timeout=180s >/dev/null || {
  k -n "$NS" get graphgateway fed -o yaml >&2
  k -n "$SYS" logs deployment/graphfleet --tail=30 >&2 || true
  die "the GraphGateway did not become Ready"
}
timing "GraphGateway apply → Ready (real pods, readiness probes)" "$(since_s "$t_apply")"
k -n "$NS" get subgraphs,graphgateways
k -n "$NS" get pods -o wide

# loadtest NAME SECONDS: a LoadTest of the query scenario against `fed`, as in
# manifests/loadtest.yaml, at $RATE req/s.
loadtest() {
  cat <<YAML | k -n "$NS" apply -f - >/dev/null
apiVersion: graphfleet.dev/v1alpha1
kind: LoadTest
metadata: {name: $1, labels: {graphfleet.dev/set: fed}}
spec:
  target: {gatewayRef: {name: fed}}
  scenario: query
  rate: $RATE
  duration: ${2}s
  vus: 50
  maxVus: 500
  parallelism: 1
  placement:
    nodeSelector: {graphfleet.dev/pool: client}
    tolerations: [{key: graphfleet.dev/pool, operator: Equal, value: client, effect: NoSchedule}]
YAML
}

# wait_loadtest NAME: until it has finished; its status goes to $RUN/NAME.json.
wait_loadtest() {
  local phase i
  for ((i = 0; i < 600; i++)); do
    phase=$(k -n "$NS" get loadtest "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    case $phase in Succeeded | Failed | Aborted) break ;; esac
    sleep 1
  done
  k -n "$NS" get loadtest "$1" -o json >"$RUN/$1.json"
  [ "$phase" = Succeeded ] || die "LoadTest $1 ended $phase: $(k -n "$NS" get loadtest "$1" -o jsonpath='{.status.message}')"
}

log "LoadTest fed-query: $RATE req/s for $DURATION s from client-0"
k -n "$NS" delete loadtest fed-query fed-query-rollout --ignore-not-found >/dev/null
loadtest fed-query "$DURATION"
target/release/graphfleet-bench sample-pods --kubeconfig "$KC" --namespace "$NS" \
  --selector app.kubernetes.io/instance=fed --seconds "$((DURATION + 15))" \
  --out "$RUN/fed-query.resources.json" >"$RUN/sampler.log" 2>&1 &
sampler=$!
wait_loadtest fed-query
wait "$sampler" || log "pod sampling failed (see $RUN/sampler.log)"
k -n "$NS" get loadtest fed-query

log "LoadTest fed-query-rollout: a Subgraph's SDL changes and the Deployment rolls under load"
roll_seconds=$((DURATION > 60 ? DURATION : 60))
loadtest fed-query-rollout "$roll_seconds"
target/release/graphfleet-bench sample-pods --kubeconfig "$KC" --namespace "$NS" \
  --selector app.kubernetes.io/instance=fed --seconds "$((roll_seconds + 15))" \
  --out "$RUN/fed-query-rollout.resources.json" >"$RUN/sampler-rollout.log" 2>&1 &
sampler=$!
until [ "$(k -n "$NS" get loadtest fed-query-rollout -o jsonpath='{.status.phase}')" = Running ]; do sleep 0.5; done
sleep 8
# The SDL change: the reviews subgraph's schema gains a description (a new supergraph,
# served once every gateway pod has it). From introspection to inline SDL.
sdl=$(k -n "$NS" get subgraph reviews -o jsonpath='{.status.sdl}' 2>/dev/null || true)
[ -n "$sdl" ] || sdl=$(sed -n '/^  reviews.graphql: |$/,/^[^ ]/p' manifests/fed-subgraphs.yaml | sed '1d;$d;s/^    //')
marker="Reviews, changed at $(date +%s)"
new_sdl=$(printf '%s\n' "$sdl" | sed "s/^type Review @key/\"$marker\"\ntype Review @key/")
t_sdl=$(now_ms)
k -n "$NS" patch subgraph reviews --type merge -p "$(python3 -c 'import json,sys; print(json.dumps({"spec":{"sdl":sys.argv[1]}}))' "$new_sdl")" >/dev/null
# Every Ready gateway pod answers with the new description (asked inside the cluster's
# namespace); old pods turn unready as soon as they start draining.
served_by_all() {
  local ips ip
  ips=$(k -n "$NS" get pods -l app.kubernetes.io/instance=fed -o jsonpath='{range .items[?(@.status.containerStatuses[0].ready==true)]}{.status.podIP}{" "}{end}')
  [ -n "$ips" ] || return 1
  for ip in $ips; do
    nsenter --net="/run/netns/$NETNS" curl -fsS --max-time 2 "http://$ip:4000/graphql" \
      -H 'content-type: application/json' -d '{"query":"{ __type(name: \"Review\") { description } }"}' |
      grep -q "$marker" || return 1
  done
}
for ((i = 0; i < 1200; i++)); do served_by_all && break; sleep 0.1; done
served_by_all || die "the new supergraph was not served by every gateway pod after 120 s"
timing "Subgraph SDL change → new supergraph served by every gateway pod" "$(since_s "$t_sdl")"
t=$SECONDS
k -n "$NS" rollout restart deployment/fed >/dev/null
k -n "$NS" rollout status deployment/fed --timeout=120s >/dev/null
timing "rollout restart → new pods Ready, old pods draining" "$((SECONDS - t)) s"
wait_loadtest fed-query-rollout
wait "$sampler" || log "pod sampling failed (see $RUN/sampler-rollout.log)"
k -n "$NS" get loadtest fed-query-rollout
failed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"]["results"]["failures"])' "$RUN/fed-query-rollout.json")
[ "$failed" = 0 ] || die "$failed requests failed during the SDL change and rollout (results: $RUN/fed-query-rollout.json)"
timing "failed requests during SDL change + rollouts" "$failed"

log "safe schema delivery under load (deploy-tests/tests/real_delivery.rs, in its own namespace)"
# A compatible change through canary steps, a breaking one blocked by the served traffic
# and an unused one shipped, a failing canary rolled back, a revision pinned back; each
# timing goes to timings.txt (and so to the report).
t=$SECONDS
GRAPHFLEET_TEST_REAL_STATE=$STATE GRAPHFLEET_TIMINGS=$RUN/timings.txt \
  cargo test --release --locked -p graphfleet-deploy-tests --test real_delivery -- --nocapture >"$RUN/delivery.log" 2>&1 ||
  { tail -60 "$RUN/delivery.log" >&2; die "safe schema delivery failed (see $RUN/delivery.log)"; }
grep -E '^(TIMING|canary at|blocked:|rolled back:)' "$RUN/delivery.log" || true
timing "safe schema delivery (checks, canary, rollback, pin) under load" "$((SECONDS - t)) s"

log "every scenario in the cluster: graphfleet${PEERS:+ and $PEERS} as pods on router-0"
gateways=(--gateway graphfleet)
for p in $PEERS; do gateways+=(--gateway "$p"); done
scenarios=()
for s in $SCENARIOS; do scenarios+=(--scenario "$s"); done
t=$SECONDS
target/release/graphfleet-bench --in-cluster --kubeconfig "$KC" "${scenarios[@]}" "${gateways[@]}" \
  --duration "$BENCH_DURATION" --out "$RUN/scenarios"
timing "benchmark scenarios in the cluster (${SCENARIOS:-all})" "$((SECONDS - t)) s"

log "report"
target/release/graphfleet-bench report --loadtest "$RUN/fed-query.json" --loadtest "$RUN/fed-query-rollout.json" \
  --resources "$RUN/fed-query.resources.json" --resources "$RUN/fed-query-rollout.resources.json" --timings "$RUN/timings.txt" --out "$RUN/report"
cat "$RUN/report/REPORT.md"
cat "$RUN/scenarios/REPORT.md"
cat "$RUN/timings.txt"

log "what users look at: the web view and GraphiQL (port-forward commands; screenshots next to REPORT.md)"
scripts/views.sh "$STATE" "$RUN/report" "$SYS" "$NS" fed-query
log "done in $((SECONDS - t0)) s. Reports: $RUN/report/REPORT.md, $RUN/scenarios/REPORT.md"
log "cluster: KUBECONFIG=$KC kubectl -n $NS get graphgateways,loadtests   (stop: scripts/cluster.sh down)"
