//! Canary rollouts against a real control plane: a new revision runs on canary pods
//! beside the stable ones, is judged from the pods' own metrics, and is promoted, or
//! rolled back by itself when its requests fail. The API-only cluster's pods run no
//! process: stable pods' admin ports point at one real gateway, canary pods' at another
//! (in-process, real HTTP, real metrics from real requests).

mod common;

use std::time::Duration;

use common::stand_in::{StandIn, inline_shop, set_sdl, status_of};
use common::{Operator, cluster_client, fixture_sdl, wait_for};
use graphfleet_api::{CanaryPhase, RevisionOutcome};
use graphfleet_operator::controller::Settings;
use graphfleet_operator::gateway_probe::AdminAddress;
use graphfleet_operator::resources;
use graphfleet_testkit::TestNamespace;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event;
use kube::api::ListParams;
use kube::{Api, Client};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_is_promoted_when_healthy_and_rolled_back_when_its_requests_fail() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-canary").await;
    let ns = ns.name().to_owned();
    let (stable, canary) = (StandIn::start().await, StandIn::start().await);
    let settings = Settings {
        admin_address: AdminAddress::Tracks {
            stable: stable.admin,
            canary: canary.admin,
        },
        ..Settings::default()
    };
    let operator = Operator::start_with(&client, settings, &ns);
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "rollout": {
            "strategy": "Canary",
            "canary": { "steps": [{ "weight": 50, "pause": "1s" }], "minRequests": 5 },
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
