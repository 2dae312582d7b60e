#!/usr/bin/env bash
# Runs every test: formatting, lints, the whole workspace's tests, and the
# integration tests on real local clusters started for this run: an API-only one
# (kwok nodes) and one whose three real nodes run graphfleet's images as pods.
# The pinned tools are built into the tool cache first (seconds once cached).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
t0=$SECONDS
# One-shot builds gain nothing from incremental state; it only costs disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

log "pinned tools"
scripts/tools.sh
# The generated operations' differential test compares every answer with Hive Router's.
scripts/tools.sh hive-router-dev
# The composition oracle (@apollo/composition) runs on Node.js, and gateway/build.rs
# installs GraphiQL's pinned npm packages into the gateway.
command -v node >/dev/null && command -v npm >/dev/null || scripts/host-packages.sh nodejs npm
# GraphiQL is tested in a real headless browser, the dashboards against a real Prometheus.
command -v chromium >/dev/null || scripts/host-packages.sh chromium
command -v prometheus >/dev/null || scripts/host-packages.sh prometheus
# Fleet-wide rate limiting is tested against a real Redis.
command -v redis-server >/dev/null || scripts/host-packages.sh redis-server

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "debug build of every binary (the real nodes' images, the smoke run)"
cargo build --workspace --bins --locked

log "local clusters for the integration tests: API-only (kwok) and real nodes"
state=$GF_ROOT/target/test-run-cluster
real_state=$GF_ROOT/target/test-run-real-cluster
trap 'scripts/cluster.sh down --state "$state" >/dev/null 2>&1 || true
      scripts/cluster.sh down --state "$real_state" || true' EXIT
scripts/cluster.sh up --nodes kwok --state "$state"
export GRAPHFLEET_TEST_KUBECONFIG=$state/kubeconfig
scripts/cluster.sh up --state "$real_state"
GRAPHFLEET_IMAGE_PROFILE=debug GRAPHFLEET_PREBUILT=1 scripts/cluster.sh images --state "$real_state"
export GRAPHFLEET_TEST_REAL_STATE=$real_state

log "cargo test"
cargo test --workspace --locked --no-fail-fast

log "benchmark smoke: every scenario through graphfleet-gateway under k6, answers equal to the monoliths"
target/debug/graphfleet-bench --smoke --gateway graphfleet \
  --gateway-bin target/debug/graphfleet-gateway --subgraphs-bin target/debug/graphfleet-subgraphs \
  --out target/bench-smoke

log "all tests passed in $((SECONDS - t0)) s"
