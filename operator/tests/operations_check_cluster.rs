//! The operations check against a real control plane: the operator reads what the
//! gateway pods have served from their admin listener and keeps a composition that
//! breaks a served operation from the pods, while a breaking change no served operation
//! uses goes through. The API-only cluster's pods run no process, so every pod's admin
//! address points at one real gateway (in-process, real HTTP) that serves each revision
//! the operator rolls out, as the pods would.

mod common;

use std::time::Duration;

use common::stand_in::{StandIn, inline_shop, set_sdl, status_of};
use common::{Operator, cluster_client, fixture_sdl, wait_for};
use graphfleet_api::{GraphGateway, RevisionOutcome};
use graphfleet_operator::controller::Settings;
use graphfleet_operator::gateway_probe::AdminAddress;
use graphfleet_operator::resources;
use graphfleet_testkit::TestNamespace;
use k8s_openapi::api::apps::v1::Deployment;
use kube::{Api, Client};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
/// Served by the fleet: selects `User.username`.
const NAMES: &str = "query Names { me { id username } }";

fn condition<'s>(
    status: &'s graphfleet_api::GraphGatewayStatus,
    type_: &str,
) -> Option<&'s k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// Wait until `shop` serves a revision other than `not`, and the stand-in serves it too.
async fn next_served(
    fleet: &StandIn,
    client: &Client,
    ns: &str,
    gateways: &Api<GraphGateway>,
    not: Option<&str>,
) -> String {
    let hash = wait_for("a new revision served", WAIT, || async {
        let hash = status_of(gateways).await?.supergraph_hash?;
        (Some(hash.as_str()) != not).then_some(hash)
    })
    .await;
    fleet.serve_revision(client, ns, &hash).await;
    wait_for("the pods report it", WAIT, || async {
        let status = status_of(gateways).await?;
        let ready = condition(&status, "Ready")?;
        (ready.status == "True"
            && ready
                .message
                .contains(&format!("2/2 pods serve supergraph {hash}")))
        .then_some(())
    })
    .await;
    hash
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composition_breaking_a_served_operation_never_reaches_the_pods() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-operations").await;
    let ns = ns.name().to_owned();
    let fleet = StandIn::start().await;
    let settings = Settings {
        admin_address: AdminAddress::Fixed(fleet.admin),
        ..Settings::default()
    };
    let operator = Operator::start_with(&client, settings, &ns);
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "delivery": { "checks": { "breakingChanges": "Block", "usageWindow": "1h" } },
    });
    let (subgraphs, gateways) = inline_shop(&client, &ns, spec).await;
    let first = next_served(&fleet, &client, &ns, &gateways, None).await;
    let status = status_of(&gateways).await.expect("status");
    let ready = condition(&status, "Ready").expect("Ready");
    assert!(
        !ready.message.contains("by their template"),
        "every pod answered for itself: {}",
        ready.message
    );

    // Traffic: `Names` is served; `nickname` arrives later and nobody asks for it.
    fleet.send(NAMES, 3).await;
    let with_nickname =
        fixture_sdl("accounts").replace("username: String", "username: String\n  nickname: String");
    set_sdl(&subgraphs, "accounts", &with_nickname).await;
    let second = next_served(&fleet, &client, &ns, &gateways, Some(&first)).await;

    // Breaking (nickname removed) but unused by what the fleet serves: goes through even
    // under `breakingChanges: Block`.
    let with_email =
        fixture_sdl("accounts").replace("username: String", "username: String\n  email: String");
    set_sdl(&subgraphs, "accounts", &with_email).await;
    let third = next_served(&fleet, &client, &ns, &gateways, Some(&second)).await;
    let status = status_of(&gateways).await.expect("status");
    let revision = &status.revisions[0];
    assert_eq!(revision.hash, third);
    assert_eq!(revision.outcome, RevisionOutcome::Serving);
    assert!(revision.breaking_changes[0].starts_with("User.nickname:"));
    assert_eq!(revision.operations_checked, 1);

    // Breaking a served operation: `username` removed. Blocked before any pod changes,
    // naming the operation, its share and its client.
    let without_username = with_email.replace("  username: String\n", "");
    set_sdl(&subgraphs, "accounts", &without_username).await;
    let status = wait_for("OperationsBlocked", WAIT, || async {
        let status = status_of(&gateways).await?;
        (condition(&status, "Composed")?.reason == "OperationsBlocked").then_some(status)
    })
    .await;
    assert_eq!(status.supergraph_hash.as_deref(), Some(third.as_str()));
    let error = &status.composition_errors[0];
    assert_eq!(error.code, "INVALID_OPERATION");
    assert!(
        error.message.starts_with("Names (id ")
            && error.message.contains("100.0% of requests")
            && error.message.contains("clients storefront")
            && error.message.contains("`username`"),
        "{}",
        error.message
    );
    let blocked = &status.revisions[0];
    assert_eq!(blocked.outcome, RevisionOutcome::Blocked);
    assert_eq!(
        blocked.invalid_operations,
        std::slice::from_ref(&error.message)
    );
    let deployment = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("shop")
        .await
        .expect("the Deployment");
    let template = deployment
        .spec
        .expect("spec")
        .template
        .metadata
        .expect("metadata");
    assert_eq!(
        template.annotations.expect("annotations")[resources::gateway::SUPERGRAPH_HASH_ANNOTATION],
        third,
        "no pod changed"
    );
    operator.stop().await;
}
