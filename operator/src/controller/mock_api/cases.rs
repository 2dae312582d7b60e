//! The reconcilers' cases against the mock API server: one test per file under
//! `tests/fixtures/mock-api/<reconciler>/`.

use super::run_case;
use crate::controller::loadtest::reconcile_loadtest;
use crate::controller::subgraph::reconcile_subgraph;

#[tokio::test]
async fn subgraph_inline_sdl() {
    run_case("subgraph/inline-sdl", reconcile_subgraph).await;
}

#[tokio::test]
async fn subgraph_configmap_sdl() {
    run_case("subgraph/configmap-sdl", reconcile_subgraph).await;
}

#[tokio::test]
async fn subgraph_configmap_missing() {
    run_case("subgraph/configmap-missing", reconcile_subgraph).await;
}

#[tokio::test]
async fn subgraph_status_unchanged() {
    run_case("subgraph/status-unchanged", reconcile_subgraph).await;
}

#[tokio::test]
async fn subgraph_status_conflict() {
    run_case("subgraph/status-conflict", reconcile_subgraph).await;
}

#[tokio::test]
async fn loadtest_first_reconcile() {
    run_case("loadtest/first-reconcile", reconcile_loadtest).await;
}

#[tokio::test]
async fn loadtest_job_already_exists() {
    run_case("loadtest/job-already-exists", reconcile_loadtest).await;
}

#[tokio::test]
async fn loadtest_configmap_apply_fails() {
    run_case("loadtest/configmap-apply-fails", reconcile_loadtest).await;
}

#[tokio::test]
async fn loadtest_zero_duration() {
    run_case("loadtest/zero-duration", reconcile_loadtest).await;
}

#[tokio::test]
async fn loadtest_finished() {
    run_case("loadtest/finished", reconcile_loadtest).await;
}

#[tokio::test]
#[should_panic(expected = "harness/unexpected-call: an unexpected call: PATCH")]
async fn harness_fails_an_unexpected_call() {
    run_case("harness/unexpected-call", reconcile_subgraph).await;
}

#[tokio::test]
#[should_panic(
    expected = "call 2 (GET /api/v1/namespaces/shop/configmaps/products-sdl): \
                           the reconcile made no more calls"
)]
async fn harness_fails_a_missing_call() {
    run_case("harness/missing-call", reconcile_subgraph).await;
}

#[tokio::test]
async fn gateway_invalid_config() {
    run_case(
        "gateway/invalid-config",
        crate::controller::gateway::reconcile_gateway,
    )
    .await;
}

#[tokio::test]
async fn gateway_canary_loadtest_created() {
    run_case(
        "gateway/canary-loadtest-created",
        crate::controller::gateway::reconcile_gateway,
    )
    .await;
}

#[tokio::test]
async fn gateway_canary_loadtest_missed_thresholds() {
    run_case(
        "gateway/canary-loadtest-missed-thresholds",
        crate::controller::gateway::reconcile_gateway,
    )
    .await;
}

#[tokio::test]
async fn gateway_pod_monitor() {
    run_case(
        "gateway/pod-monitor",
        crate::controller::gateway::reconcile_gateway,
    )
    .await;
}
