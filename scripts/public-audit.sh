#!/usr/bin/env bash
# Runs the public federation gateway audit (graphql-hive/federation-gateway-audit) against
# graphfleet-gateway, with the audit's own subgraphs (graphql-js + @apollo/subgraph): the
# independent check behind gateway/tests/audit. Optionally runs Hive Router through it too
# and rewrites gateway/tests/audit/REFERENCE_REQUESTS from its per-case subgraph requests.
#
#   scripts/public-audit.sh AUDIT_DIR [--gateway BIN] [--reference HIVE_ROUTER_BIN]
#   (AUDIT_REV=<commit> names the audit revision when AUDIT_DIR is not a git checkout)
#
# AUDIT_DIR is a checkout (or `git archive`) of the audit repository; the audit is not
# published to npm, so it is not fetched here. Its npm dependencies are installed into
# a copy under $GF_CACHE (the audit's gateway-specific dev dependencies are left out).
# Results: <copy>/gateways/graphfleet/results.txt and logs/. Needs node and npm.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || die "usage: scripts/public-audit.sh AUDIT_DIR [--gateway BIN] [--reference HIVE_ROUTER_BIN]"
src=$(cd "$1" && pwd)
shift
gateway=$GF_ROOT/target/release/graphfleet-gateway
reference=""
while [ $# -gt 0 ]; do
  case $1 in
    --gateway) gateway=$2; shift 2 ;;
    --reference) reference=$2; shift 2 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -x "$gateway" ] || die "no gateway binary at $gateway (cargo build --release -p graphfleet-gateway)"
gateway=$(cd "$(dirname "$gateway")" && pwd)/$(basename "$gateway")
[ -z "$reference" ] || reference=$(cd "$(dirname "$reference")" && pwd)/$(basename "$reference")
# Which audit revision the results belong to: its git commit, or AUDIT_REV for an export.
rev=${AUDIT_REV:-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "of unknown revision")}
[ -f "$src/src/cli.ts" ] || die "$src does not look like the audit repository (no src/cli.ts)"

# A copy keyed by the audit's package.json, so its node_modules are installed once.
key=$(sha256sum "$src/package.json" | cut -c1-12)
work=$GF_CACHE/public-audit-$key
if [ ! -d "$work/node_modules" ]; then
  log "installing the audit's npm dependencies into $work"
  rm -rf "$work" && mkdir -p "$work"
  (cd "$src" && tar --exclude=node_modules --exclude=gateways -cf - .) | tar -xf - -C "$work"
  # Only what the audit's own server and runner use: tsx and graphql besides its
  # dependencies (the other dev dependencies are gateways under test).
  (cd "$work" && node -e '
    const fs = require("fs"); const p = JSON.parse(fs.readFileSync("package.json"));
    const dev = p.devDependencies || {};
    p.devDependencies = { tsx: dev.tsx || "4.20.6", graphql: dev.graphql || "16.11.0" };
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2));')
  rm -f "$work/package-lock.json"
  (cd "$work" && npm install --no-audit --no-fund >"$work/npm-install.log" 2>&1) \
    || die "npm install failed: $work/npm-install.log"
fi
# Node before 22 lacks Promise.withResolvers, which the audit's server uses.
cat >"$work/polyfill.mjs" <<'EOF'
if (!Promise.withResolvers) {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new Promise((a, b) => { resolve = a; reject = b; });
    return { promise, resolve, reject };
  };
}
EOF
export NODE_OPTIONS="--import $work/polyfill.mjs"

# One gateway folder the audit's runner starts per suite: run.sh gets the suite id.
add_gateway() { # name, command line serving $PWD/supergraph.graphql on 127.0.0.1:4000
  mkdir -p "$work/gateways/$1"
  printf '%s\n' "npm start supergraph -- --cwd ./gateways/$1 --test \$1" "$2" >"$work/gateways/$1/run.sh"
  chmod +x "$work/gateways/$1/run.sh"
  rm -rf "$work/gateways/$1/logs"
}
run_audit() { # name, health URL
  (cd "$work" && npm start -- test --cwd "./gateways/$1" --run-script ./run.sh --reporter dot \
    --graphql http://127.0.0.1:4000/graphql --healthcheck "$2") >"$work/gateways/$1/audit.log" 2>&1 || true
  grep -E '^(Total|Passed|Failed):' "$work/gateways/$1/audit.log" || die "the audit did not finish: $work/gateways/$1/audit.log"
}

add_gateway graphfleet "exec '$gateway' --supergraph supergraph.graphql --listen 127.0.0.1:4000"
log "graphfleet-gateway ($gateway) through the public audit"
run_audit graphfleet http://127.0.0.1:4000/health
grep -h "not ok" "$work"/gateways/graphfleet/logs/*-tests.log | grep -v "^not ok" || true

if [ -n "$reference" ]; then
  add_gateway reference "SUPERGRAPH_FILE_PATH=\$PWD/supergraph.graphql HOST=127.0.0.1 PORT=4000 LOG_LEVEL=info exec '$reference'"
  log "the reference ($reference) through the public audit, counting its subgraph requests"
  run_audit reference http://127.0.0.1:4000/health
  python3 - "$work/gateways/reference/logs" "$GF_ROOT/gateway/tests/audit" "$rev" <<'EOF'
import json, glob, os, sys
logs, audit, rev = sys.argv[1:4]
out = ["# Subgraph requests Hive Router's plan makes for each audit case, measured against the",
       "# public audit's own subgraphs (scripts/public-audit.sh --reference; audit " + rev + ").",
       "# A plan needs no more: tests/audit.rs fails a case whose plan makes more (unless listed",
       "# in KNOWN_FAILURES). `suite/case  requests`."]
for log in sorted(glob.glob(os.path.join(logs, "*-gateway.log"))):
    suite = os.path.basename(log)[: -len("-gateway.log")]
    counts = []
    for line in open(log):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "subgraph_requests" in j and j.get("operation_name") != "ping":
            counts.append(j["subgraph_requests"])
    cases = sorted(glob.glob(os.path.join(audit, suite, "cases", "*.graphql")))
    if len(cases) != len(counts):
        sys.exit(f"{suite}: {len(counts)} requests logged for {len(cases)} local cases")
    out += [f"{suite}/{os.path.basename(c)[:-8]}  {n}" for c, n in zip(cases, counts)]
open(os.path.join(audit, "REFERENCE_REQUESTS"), "w").write("\n".join(out) + "\n")
print(f"wrote {audit}/REFERENCE_REQUESTS")
EOF
fi
