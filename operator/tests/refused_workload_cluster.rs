//! A GraphGateway whose spec the CRD accepts but whose Deployment the API server refuses
//! (422: a volume name that is not a DNS label) is reported in status at once — Ready and
//! Degraded say `WorkloadRefused` with the API server's words — instead of only being
//! logged and retried; fixing the spec rolls out.

mod common;

use std::time::Duration;

use common::stand_in::inline_shop;
use common::{Operator, cluster_client, wait_for};
use graphfleet_testkit::TestNamespace;
use kube::api::{Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_deployment_is_reported_in_status_and_a_fixed_spec_rolls_out() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-refused").await;
    let operator = Operator::start(&client, ns.name());
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "volumes": [{ "name": "Not_A_Label", "emptyDir": {} }],
    });
    let (_subgraphs, gateways) = inline_shop(&client, ns.name(), spec).await;
    let condition = |gw: &graphfleet_api::GraphGateway, type_: &str| {
        let status = gw.status.as_ref()?;
        let c = status.conditions.iter().find(|c| c.type_ == type_)?;
        Some((c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let (ready, degraded) = wait_for("the refusal in status", WAIT, || async {
        let gw = gateways.get("shop").await.ok()?;
        let ready = condition(&gw, "Ready")?;
        (ready.1 == "WorkloadRefused").then(|| (ready, condition(&gw, "Degraded")))
    })
    .await;
    assert_eq!(ready.0, "False");
    assert!(
        ready
            .2
            .contains("the API server refused the gateway's objects")
            && ready.2.contains("Not_A_Label"),
        "{}",
        ready.2
    );
    let degraded = degraded.expect("a Degraded condition");
    assert_eq!(
        (degraded.0.as_str(), degraded.1.as_str()),
        ("True", "WorkloadRefused")
    );

    let fix = json!({ "spec": { "volumes": [{ "name": "scratch", "emptyDir": {} }] } });
    gateways
        .patch("shop", &PatchParams::default(), &Patch::Merge(&fix))
        .await
        .expect("patch the spec");
    wait_for("the fixed spec applied", WAIT, || async {
        let gw = gateways.get("shop").await.ok()?;
        let ready = condition(&gw, "Ready")?;
        let applied = gw.status.as_ref()?.observed_generation == gw.metadata.generation;
        (applied && ready.1 != "WorkloadRefused").then_some(())
    })
    .await;
    operator.stop().await;
}
