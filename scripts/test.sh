#!/usr/bin/env bash
# Runs every test: formatting, lints, the whole workspace's tests, and the
# integration tests on a real local control plane started for this run.
# The pinned tools are built into the tool cache first (seconds once cached).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$GF_ROOT"
t0=$SECONDS
# One-shot builds gain nothing from incremental state; it only costs disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

log "pinned tools"
scripts/tools.sh

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "local cluster for the integration tests"
state=$GF_ROOT/target/test-run-cluster
scripts/cluster.sh up --state "$state"
trap 'scripts/cluster.sh down --state "$state" >/dev/null 2>&1 || true' EXIT
export GRAPHFLEET_TEST_KUBECONFIG=$state/kubeconfig

log "cargo test"
cargo test --workspace --locked

log "benchmark smoke: every scenario through graphfleet-gateway under k6, answers equal to the monoliths"
cargo build --workspace --bins --locked
target/debug/graphfleet-bench --smoke --gateway graphfleet \
  --gateway-bin target/debug/graphfleet-gateway --subgraphs-bin target/debug/graphfleet-subgraphs \
  --out target/bench-smoke

log "all tests passed in $((SECONDS - t0)) s"
