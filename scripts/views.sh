#!/usr/bin/env bash
# What a user opens in a browser after the main job, and a screenshot of each next to its
# report: the operator's web view (fleet, the fed GraphGateway, a LoadTest's report) and
# GraphiQL on the fed gateway. Prints the port-forward commands that open them from a
# workstation; the screenshots are taken by Debian's headless Chromium from inside the
# cluster's network namespace (tools/browser: webview.mjs, graphiql.mjs). The web view's
# port-forward is tried once on loopback, and OUT_DIR/REPORT.md gets a section linking
# the screenshots.
# Usage: scripts/views.sh STATE OUT_DIR SYSTEM_NAMESPACE NAMESPACE LOADTEST
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
STATE=${1:?usage: scripts/views.sh STATE OUT_DIR SYSTEM_NAMESPACE NAMESPACE LOADTEST}
OUT=${2:?OUT_DIR}
SYS=${3:?SYSTEM_NAMESPACE}
NS=${4:?NAMESPACE}
LOADTEST=${5:?LOADTEST}
export PATH="$(tools_path):$PATH"
KC=$STATE/kubeconfig
k() { kubectl --kubeconfig "$KC" "$@"; }
. "$STATE/ids.env"
command -v chromium >/dev/null || scripts/host-packages.sh chromium
mkdir -p "$OUT"

web_svc=$(k -n "$SYS" get services -l app.kubernetes.io/name=graphfleet -o name | grep -- '-web$' | head -1)
[ -n "$web_svc" ] || die "no web view Service in $SYS (chart value web.enabled)"
web_port=$(k -n "$SYS" get "$web_svc" -o jsonpath='{.spec.ports[0].port}')
web_ip=$(k -n "$SYS" get "$web_svc" -o jsonpath='{.spec.clusterIP}')
gw_ip=$(k -n "$NS" get service fed -o jsonpath='{.spec.clusterIP}')
gw_port=$(k -n "$NS" get service fed -o jsonpath='{.spec.ports[0].port}')

log "where to look (from a workstation with this kubeconfig):"
cat <<EOF
  web view:  kubectl --kubeconfig $KC -n $SYS port-forward $web_svc 8081:$web_port
             then open http://localhost:8081/
  GraphiQL:  kubectl --kubeconfig $KC -n $NS port-forward service/fed 4000:$gw_port
             then open http://localhost:4000/graphql
  Grafana:   the chart's dashboards are ConfigMaps labelled grafana_dashboard=1 in $SYS
EOF

# The printed port-forward works: one through it on loopback, bounded in time.
pf_log=$(mktemp)
k -n "$SYS" port-forward "$web_svc" 18081:"$web_port" --address 127.0.0.1 >"$pf_log" 2>&1 &
pf=$!
ok=
for _ in $(seq 1 40); do
  if curl -sf --max-time 5 http://127.0.0.1:18081/ | grep -q 'graphfleet operator'; then ok=1; break; fi
  sleep 0.5
done
kill "$pf" 2>/dev/null || true
wait "$pf" 2>/dev/null || true
[ -n "$ok" ] || die "kubectl port-forward to $web_svc did not serve the web view: $(cat "$pf_log")"
rm -f "$pf_log"
log "kubectl port-forward $web_svc: the web view answered through it"

# Installed out here: the cluster's network namespace has no route to a registry.
scripts/node-tool.sh --dir browser >/dev/null
in_ns() { nsenter --net="/run/netns/$NETNS" "$@"; }
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
base=http://$web_ip:$web_port
in_ns scripts/node-tool.sh browser/webview.mjs "$shots" \
  "$base/" "#graphgateways-table tr" \
  "$base/graphgateways/$NS/fed" "#revisions-table tr" \
  "$base/loadtests/$NS/$LOADTEST" "#latency-chart img" >"$OUT/web-view.json" ||
  die "the web view screenshots failed (see $OUT/web-view.json)"
python3 - "$OUT/web-view.json" <<'EOF' || die "the web view did not show what it should"
import json, sys
seen = json.load(open(sys.argv[1]))
assert not seen["errors"], seen["errors"]
for page in seen["pages"]:
    assert all(n > 0 for n in page["found"].values()), page["found"]
EOF
cp "$shots/page-0.png" "$OUT/web-view-fleet.png"
cp "$shots/page-1.png" "$OUT/web-view-graphgateway.png"
cp "$shots/page-2.png" "$OUT/web-view-loadtest.png"
in_ns scripts/node-tool.sh browser/graphiql.mjs "http://$gw_ip:$gw_port/graphql" \
  "$(cat bench/sets/fed/queries/query.graphql)" --wait-for topProducts \
  --screenshot "$OUT/graphiql.png" >"$OUT/graphiql.json" ||
  die "the GraphiQL screenshot failed (see $OUT/graphiql.json)"
log "screenshots: $OUT/web-view-fleet.png, web-view-graphgateway.png, web-view-loadtest.png, graphiql.png"
cat >>"$OUT/REPORT.md" <<EOF

## What users look at

The operator's web view (\`kubectl -n $SYS port-forward $web_svc 8081:$web_port\`, then
http://localhost:8081/) and GraphiQL on the gateway (\`kubectl -n $NS port-forward service/fed
4000:$gw_port\`, then http://localhost:4000/graphql), as headless Chromium showed them at the end
of this run:

![web view: the fleet](web-view-fleet.png)
![web view: GraphGateway fed](web-view-graphgateway.png)
![web view: LoadTest $LOADTEST](web-view-loadtest.png)
![GraphiQL on the fed gateway](graphiql.png)
EOF
