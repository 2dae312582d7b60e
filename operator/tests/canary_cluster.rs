//! Canary rollouts against a real control plane: a new revision runs on canary pods
//! beside the stable ones, is judged from the pods' own metrics, and is promoted, or
//! rolled back by itself when its requests fail. The API-only cluster's pods run no
//! process: stable pods' admin ports point at one real gateway, canary pods' at another
//! (in-process, real HTTP, real metrics from real requests). A load-gated canary's
//! LoadTests are run by the operator's own LoadTest controller; no k6 runs either, so the
//! test writes what each k6 pod would have reported and the controller judges it.

mod common;

use std::time::Duration;

use common::stand_in::{StandIn, inline_shop, set_sdl, status_of};
use common::{Operator, cluster_client, fixture_sdl, set_pod_status, summary, wait_for};
use graphfleet_api::{CanaryPhase, GraphGateway, GraphGatewayStatus, LoadTest, RevisionOutcome};
use graphfleet_operator::controller::Settings;
use graphfleet_operator::gateway_probe::AdminAddress;
use graphfleet_operator::resources;
use graphfleet_operator::resources::loadtest::LOADTEST_LABEL;
use graphfleet_testkit::TestNamespace;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod, Service};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(90);

async fn stable_template_revision(client: &Client, ns: &str) -> Option<String> {
    let d = Api::<Deployment>::namespaced(client.clone(), ns)
        .get("shop")
        .await
        .ok()?;
    let annotations = d.spec?.template.metadata?.annotations?;
    annotations
        .get(resources::gateway::SUPERGRAPH_HASH_ANNOTATION)
        .cloned()
}

/// The canary Deployment's pods (0 once it is scaled away; the operator may not delete
/// Deployments, so it is kept).
async fn canary_replicas(client: &Client, ns: &str) -> Option<i32> {
    let canary = Api::<Deployment>::namespaced(client.clone(), ns)
        .get_opt("shop-canary")
        .await
        .ok()?;
    Some(canary.map_or(0, |d| d.spec.and_then(|s| s.replicas).unwrap_or(1)))
}

async fn event_reasons(client: &Client, ns: &str) -> Vec<String> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect()
}

/// The operator in `ns`, each track's pods answered by a stand-in gateway of its own.
async fn operator_with_tracks(client: &kube::Client, ns: &str) -> (StandIn, StandIn, Operator) {
    let (stable, canary) = (StandIn::start().await, StandIn::start().await);
    let settings = Settings {
        admin_address: AdminAddress::Tracks {
            stable: stable.admin,
            canary: canary.admin,
        },
        ..Settings::default()
    };
    let operator = Operator::start_with(client, settings, ns);
    (stable, canary, operator)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_is_promoted_when_healthy_and_rolled_back_when_its_requests_fail() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-canary").await;
    let ns = ns.name().to_owned();
    let (stable, canary, operator) = operator_with_tracks(&client, &ns).await;
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "rollout": {
            "strategy": "Canary",
            // Judged on error rates: a handful of requests on a busy machine give a p99
            // that is noise (the ratio has its own unit tests).
            "canary": { "steps": [{ "weight": 50, "pause": "1s" }], "minRequests": 5, "maxP99Ratio": 1000 },
        },
    });
    let (subgraphs, gateways) = inline_shop(&client, &ns, spec).await;

    // The first pods get no canary.
    let first = wait_for("the first revision served", WAIT, || async {
        status_of(&gateways).await?.supergraph_hash
    })
    .await;
    stable.serve_revision(&client, &ns, &first).await;
    canary.serve_revision(&client, &ns, &first).await;
    stable.send("{ __typename }", 20).await;
    // What the canary pods will have served when their step is judged: all fine.
    canary.send("{ __typename }", 10).await;

    // A compatible change: canary, judged healthy, promoted.
    let with_nickname =
        fixture_sdl("accounts").replace("username: String", "username: String\n  nickname: String");
    set_sdl(&subgraphs, "accounts", &with_nickname).await;
    let canary_seen = wait_for("the canary running", WAIT, || async {
        let status = status_of(&gateways).await?;
        let c = status.canary.clone()?;
        (c.phase == CanaryPhase::Progressing && c.canary_pods == 2).then_some(status)
    })
    .await;
    let second = canary_seen
        .canary
        .as_ref()
        .expect("canary")
        .revision
        .clone();
    assert_eq!(
        canary_seen.supergraph_hash.as_deref(),
        Some(first.as_str()),
        "stable still serves"
    );
    assert_eq!(canary_seen.phase.as_deref(), Some("Canary"));
    assert_eq!(
        canary_seen.canary.as_ref().expect("canary").share_percent,
        50
    );
    assert_eq!(canary_seen.revisions[0].outcome, RevisionOutcome::Canary);
    wait_for("promoted", WAIT, || async {
        (stable_template_revision(&client, &ns).await? == second).then_some(())
    })
    .await;
    stable.serve_revision(&client, &ns, &second).await;
    wait_for(
        "the canary gone once the stable pods serve",
        WAIT,
        || async {
            let status = status_of(&gateways).await?;
            let canary_pods = canary_replicas(&client, &ns).await?;
            (status.canary.is_none()
                && canary_pods == 0
                && status.supergraph_hash.as_deref() == Some(second.as_str())
                && status.revisions[0].outcome == RevisionOutcome::Serving)
                .then_some(())
        },
    )
    .await;
    let reasons = event_reasons(&client, &ns).await;
    for reason in ["CanaryStarted", "CanaryStepPassed", "CanaryPromoted"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }

    // The canary pods now fail most requests (they fetch from subgraphs that do not
    // answer): the next change is rolled back by itself, and the stable pods stay.
    canary.send("query Me { me { id } }", 40).await;
    let with_email = with_nickname.replace("nickname: String", "nickname: String\n  email: String");
    set_sdl(&subgraphs, "accounts", &with_email).await;
    let rolled_back = wait_for("rolled back", WAIT, || async {
        let status = status_of(&gateways).await?;
        (status.canary.as_ref()?.phase == CanaryPhase::RolledBack).then_some(status)
    })
    .await;
    let verdict = rolled_back.canary.as_ref().expect("canary");
    assert!(
        verdict.message.contains("GraphQL error rate") && verdict.message.contains("is over 1%"),
        "{}",
        verdict.message
    );
    assert_eq!(
        rolled_back.supergraph_hash.as_deref(),
        Some(second.as_str())
    );
    assert_eq!(
        rolled_back.revisions[0].outcome,
        RevisionOutcome::RolledBack
    );
    assert_eq!(
        stable_template_revision(&client, &ns).await,
        Some(second.clone())
    );
    wait_for("the canary pods removed", WAIT, || async {
        (canary_replicas(&client, &ns).await? == 0).then_some(())
    })
    .await;
    assert!(
        event_reasons(&client, &ns)
            .await
            .iter()
            .any(|r| r == "CanaryRolledBack")
    );
    operator.stop().await;
}

/// The pods of LoadTest `name`, once there are `count`.
async fn loadtest_pods(client: &Client, ns: &str, name: &str, count: usize) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("{LOADTEST_LABEL}={name}"));
    wait_for(&format!("{count} pods of {name}"), WAIT, || async {
        let list = pods.list(&params).await.ok()?.items;
        (list.len() == count).then_some(list)
    })
    .await
}

/// Plays the kubelet for the one k6 pod of LoadTest `name`: it ran and printed `summary`.
/// The operator's own LoadTest controller reads it and judges the thresholds.
async fn finish_loadtest(client: &Client, ns: &str, name: &str, summary: &str) {
    let pod = loadtest_pods(client, ns, name, 1).await[0].name_any();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let done = json!({ "terminated": {
        "exitCode": 0, "reason": "Completed", "message": summary,
        "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:06Z",
    }});
    set_pod_status(&pods, &pod, "Succeeded", done).await;
}

/// The step's LoadTest, once the operator made it.
async fn step_loadtest(
    client: &Client,
    ns: &str,
    status: &GraphGatewayStatus,
    step: u32,
) -> LoadTest {
    let template = &status.canary.as_ref().expect("a canary").template;
    let name = format!("shop-canary-{}-{step}", &template[..8]);
    let loadtests: Api<LoadTest> = Api::namespaced(client.clone(), ns);
    wait_for(&format!("LoadTest {name}"), WAIT, || async {
        loadtests.get_opt(&name).await.ok().flatten()
    })
    .await
}

/// The API server refuses a load gate without thresholds, and a template breaking the
/// LoadTest's own rules (it has them too).
async fn rejected_templates(client: &Client, ns: &str) {
    let gateways: Api<GraphGateway> = Api::namespaced(client.clone(), ns);
    let gated = |name: &str, load_test: serde_json::Value| -> GraphGateway {
        serde_json::from_value(json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "name": name },
            "spec": { "rollout": { "strategy": "Canary", "canary": { "loadTest": load_test } } },
        }))
        .expect("a GraphGateway object")
    };
    let refused = |result: Result<GraphGateway, kube::Error>| match result {
        Err(kube::Error::Api(e)) if e.code == 422 => e.message,
        other => panic!("expected the API server to refuse it, got {other:?}"),
    };
    let ungated = gated(
        "ungated",
        json!({ "scenario": "query", "rate": 10, "duration": "30s" }),
    );
    let msg = refused(gateways.create(&PostParams::default(), &ungated).await);
    assert!(msg.contains("canary.loadTest needs thresholds"), "{msg}");
    let two_sources = gated(
        "twosources",
        json!({ "scenario": "query", "script": { "inline": "export default () => {}" }, "rate": 10, "duration": "30s", "thresholds": { "maxErrorPercent": 1 } }),
    );
    let msg = refused(gateways.create(&PostParams::default(), &two_sources).await);
    assert!(msg.contains("exactly one of scenario or script"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_gated_canary_goes_on_when_its_loadtest_passes_and_rolls_back_when_one_fails() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-gate").await;
    let ns = ns.name().to_owned();
    let (stable, canary, operator) = operator_with_tracks(&client, &ns).await;
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "rollout": {
            "strategy": "Canary",
            "canary": {
                "steps": [{ "weight": 34, "pause": "1s" }, { "weight": 50, "pause": "1s" }],
                "minRequests": 5,
                "maxP99Ratio": 1000,
                "loadTest": {
                    "scenario": "query", "rate": 100, "duration": "30s",
                    // kwok runs no k6 to resume; the test plays each pod's outcome.
                    "synchronizedStart": false,
                    // No node has this pool: the k6 pods stay unscheduled, so kwok leaves
                    // them to the test.
                    "placement": {
                        "nodeSelector": { "graphfleet.dev/pool": "nowhere" },
                        "tolerations": [{ "operator": "Exists" }],
                    },
                    "thresholds": { "maxErrorPercent": 1, "latency": { "p99": "50ms" } },
                },
            },
        },
    });
    rejected_templates(&client, &ns).await;
    let (subgraphs, gateways) = inline_shop(&client, &ns, spec).await;
    let first = wait_for("the first revision served", WAIT, || async {
        status_of(&gateways).await?.supergraph_hash
    })
    .await;
    stable.serve_revision(&client, &ns, &first).await;
    canary.serve_revision(&client, &ns, &first).await;
    stable.send("{ __typename }", 20).await;
    canary.send("{ __typename }", 10).await;

    let with_nickname =
        fixture_sdl("accounts").replace("username: String", "username: String\n  nickname: String");
    set_sdl(&subgraphs, "accounts", &with_nickname).await;
    let waiting = wait_for("step 1 waiting for its LoadTest", WAIT, || async {
        let status = status_of(&gateways).await?;
        let c = status.canary.as_ref()?;
        (c.step == 0 && c.canary_pods == 1 && c.load_test.is_some()).then_some(status)
    })
    .await;

    // The canary Service selects the canary pods alone, on the gateway Service's port.
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let service = services
        .get("shop-canary")
        .await
        .expect("the canary Service");
    let service_spec = service.spec.expect("spec");
    let selector = service_spec.selector.expect("a selector");
    assert_eq!(
        selector.get("graphfleet.dev/track").map(String::as_str),
        Some("canary")
    );
    assert_eq!(
        selector
            .get("app.kubernetes.io/instance")
            .map(String::as_str),
        Some("shop")
    );
    assert_eq!(service_spec.ports.expect("ports")[0].port, 80);
    let stable_selector = services.get("shop").await.expect("the gateway Service");
    assert!(
        !stable_selector
            .spec
            .expect("spec")
            .selector
            .expect("selector")
            .contains_key("graphfleet.dev/track"),
        "the gateway Service still selects every pod"
    );

    // Step 1's LoadTest loads that Service, owned by the gateway; the step waits for it.
    let lt0 = step_loadtest(&client, &ns, &waiting, 0).await;
    assert_eq!(
        lt0.spec.target.as_ref().and_then(|t| t.url.as_deref()),
        Some(format!("http://shop-canary.{ns}.svc:80/graphql").as_str())
    );
    assert_eq!(
        lt0.labels()
            .get("graphfleet.dev/canary-of")
            .map(String::as_str),
        Some("shop")
    );
    let owner = &lt0.metadata.owner_references.clone().expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("GraphGateway", "shop")
    );
    assert_eq!(
        waiting
            .canary
            .as_ref()
            .expect("canary")
            .load_test
            .as_deref(),
        Some(lt0.name_any().as_str())
    );
    let still = wait_for("the step held while its LoadTest runs", WAIT, || async {
        let status = status_of(&gateways).await?;
        let c = status.canary.clone()?;
        c.message
            .contains(&format!("LoadTest {}", lt0.name_any()))
            .then_some(c)
    })
    .await;
    assert_eq!(still.step, 0, "{}", still.message);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = status_of(&gateways)
        .await
        .and_then(|s| s.canary)
        .expect("canary");
    assert_eq!(
        (held.step, held.phase),
        (0, CanaryPhase::Progressing),
        "{}",
        held.message
    );

    // It passes: the canary goes on to step 2, which gets its own LoadTest.
    finish_loadtest(&client, &ns, &lt0.name_any(), &summary("segment-0.json")).await;
    let step_two = wait_for("step 2", WAIT, || async {
        let status = status_of(&gateways).await?;
        (status.canary.as_ref()?.step == 1).then_some(status)
    })
    .await;
    let passed = step_two.canary.as_ref().expect("canary");
    assert!(
        passed
            .message
            .contains(&format!("LoadTest {} passed: ", lt0.name_any()))
            && passed
                .message
                .contains("error rate 0.067% (2 of 3000) < 1%"),
        "{}",
        passed.message
    );

    // Step 2's LoadTest misses its error-rate bound: rolled back, naming it and the numbers.
    let lt1 = step_loadtest(&client, &ns, &step_two, 1).await;
    let mut failing: serde_json::Value =
        serde_json::from_str(&summary("segment-0.json")).expect("JSON");
    failing["ok"] = json!(2625);
    failing["failures"] = json!(375);
    finish_loadtest(&client, &ns, &lt1.name_any(), &failing.to_string()).await;
    let rolled_back = wait_for("rolled back", WAIT, || async {
        let status = status_of(&gateways).await?;
        (status.canary.as_ref()?.phase == CanaryPhase::RolledBack).then_some(status)
    })
    .await;
    let verdict = rolled_back.canary.as_ref().expect("canary");
    let expected = format!(
        "step 2 (50%) failed, canary removed: LoadTest {} missed its thresholds: error rate 12.500% (375 of 3000) >= 1%",
        lt1.name_any()
    );
    assert!(
        verdict.message.starts_with(&expected),
        "{}",
        verdict.message
    );
    let condition = rolled_back
        .conditions
        .iter()
        .find(|c| c.type_ == "Canary")
        .expect("a Canary condition");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "RolledBack")
    );
    assert_eq!(condition.message, verdict.message);
    assert_eq!(rolled_back.supergraph_hash.as_deref(), Some(first.as_str()));
    assert_eq!(
        rolled_back.revisions[0].outcome,
        RevisionOutcome::RolledBack
    );
    wait_for("the canary pods removed", WAIT, || async {
        (canary_replicas(&client, &ns).await? == 0).then_some(())
    })
    .await;
    let reasons = event_reasons(&client, &ns).await;
    for reason in [
        "CanaryLoadTestStarted",
        "CanaryStepPassed",
        "CanaryRolledBack",
    ] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    operator.stop().await;
}
