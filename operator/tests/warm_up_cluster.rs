//! Plan warm-up fed by the operator, against a real control plane: the operations the
//! gateway pods serve reach the `<gateway>-usage` ConfigMap every pod mounts (optional)
//! and names in `usage.warm_up_file`, and a change of usage changes no pod template, so
//! it neither rolls the pods nor starts a canary. The API-only cluster's pods run no
//! process: every pod's admin port points at one real gateway (in-process, real HTTP)
//! that records the requests sent to it.

mod common;

use std::time::Duration;

use common::stand_in::{StandIn, inline_shop, status_of};
use common::{Operator, cluster_client, wait_for};
use graphfleet_admin_api::UsageReport;
use graphfleet_operator::controller::Settings;
use graphfleet_operator::gateway_probe::AdminAddress;
use graphfleet_operator::resources::gateway_canary::TEMPLATE_HASH_ANNOTATION;
use graphfleet_operator::resources::gateway_revisions::CONFIG_KEY;
use graphfleet_operator::resources::gateway_usage::{USAGE_KEY, warm_up_file};
use graphfleet_testkit::TestNamespace;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const NAMES: &str = "query Names { me { id username } }";
const TOP: &str = "query Top { topProducts { upc } }";

/// The operations in the usage ConfigMap's report, in warm-up order, once it holds
/// `count` of them.
async fn usage_names(config_maps: &Api<ConfigMap>, count: usize) -> Option<Vec<String>> {
    let cm = config_maps.get_opt("shop-usage").await.ok()??;
    let text = cm.data?.remove(USAGE_KEY)?;
    let report: UsageReport = serde_json::from_str(&text).expect("the gateway's report format");
    let names: Vec<String> = report
        .operations
        .into_iter()
        .filter_map(|o| o.name)
        .collect();
    (names.len() == count).then_some(names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_operations_reach_the_usage_config_map_without_touching_the_pods() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "gw-warm-up").await;
    let ns = ns.name().to_owned();
    let fleet = StandIn::start().await;
    let settings = Settings {
        admin_address: AdminAddress::Fixed(fleet.admin),
        usage_refresh: Duration::from_secs(1),
        ..Settings::default()
    };
    let operator = Operator::start_with(&client, settings, &ns);
    // A canary would start for any new pod template: none must.
    let spec = json!({
        "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        "replicas": 2,
        "rollout": { "strategy": "Canary", "canary": { "steps": [{ "weight": 50, "pause": "1s" }] } },
    });
    let (_subgraphs, gateways) = inline_shop(&client, &ns, spec).await;
    let hash = wait_for("a served revision", WAIT, || async {
        status_of(&gateways).await?.supergraph_hash
    })
    .await;
    fleet.serve_revision(&client, &ns, &hash).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let before = deployments.get("shop").await.expect("the Deployment");
    let template_hash = before.metadata.annotations.as_ref().expect("annotations")
        [TEMPLATE_HASH_ANNOTATION]
        .clone();

    // Every pod mounts the usage ConfigMap, optionally, where its config says.
    let pod = before.spec.as_ref().expect("spec").template.spec.as_ref();
    let volume = pod
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| {
            v.iter()
                .find_map(|v| v.config_map.as_ref()?.name.eq("shop-usage").then_some(v))
        })
        .expect("a volume of the usage ConfigMap");
    assert_eq!(
        volume.config_map.as_ref().and_then(|c| c.optional),
        Some(true)
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let config_name = pod
        .and_then(|p| p.volumes.as_ref())
        .and_then(|v| v.iter().find(|v| v.name == "config"))
        .and_then(|v| Some(v.config_map.as_ref()?.name.clone()))
        .expect("the config volume");
    let config = config_maps
        .get(&config_name)
        .await
        .expect("the config ConfigMap");
    let config: serde_json::Value =
        serde_json::from_str(&config.data.expect("data")[CONFIG_KEY]).expect("JSON config");
    assert_eq!(config["usage"]["warm_up_file"], json!(warm_up_file()));

    // No traffic yet: nothing is written (refreshes run every second meanwhile).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        config_maps
            .get_opt("shop-usage")
            .await
            .expect("get")
            .is_none(),
        "written before any operation was served"
    );

    fleet.send(NAMES, 3).await;
    let names = wait_for("the served operation in shop-usage", WAIT, || {
        usage_names(&config_maps, 1)
    })
    .await;
    assert_eq!(names, ["Names"]);
    let usage = config_maps.get("shop-usage").await.expect("shop-usage");
    let labels = usage.metadata.labels.expect("labels");
    assert_eq!(labels["app.kubernetes.io/instance"], "shop");
    assert_eq!(labels["app.kubernetes.io/component"], "fleet-usage");
    let owner = &usage.metadata.owner_references.expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("GraphGateway", "shop")
    );

    // More traffic, another operation now the most requested: it comes first.
    fleet.send(TOP, 20).await;
    let names = wait_for("the new operation in shop-usage", WAIT, || {
        usage_names(&config_maps, 2)
    })
    .await;
    assert_eq!(names, ["Top", "Names"]);

    // The pods never changed: same template, same Deployment spec, no canary.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = deployments.get("shop").await.expect("the Deployment");
    assert_eq!(
        after.metadata.annotations.as_ref().expect("annotations")[TEMPLATE_HASH_ANNOTATION],
        template_hash
    );
    assert_eq!(after.metadata.generation, before.metadata.generation);
    assert!(
        deployments
            .get_opt("shop-canary")
            .await
            .expect("get")
            .is_none()
    );
    let status = status_of(&gateways).await.expect("status");
    assert!(status.canary.is_none(), "{:?}", status.canary);
    operator.stop().await;
}
