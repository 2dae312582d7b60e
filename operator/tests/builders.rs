//! Snapshots of every object built for each GraphGateway fixture in `fixtures/gateways/`.

use std::path::PathBuf;

use graphfleet_api::{DEFAULT_GATEWAY_IMAGE, GraphGateway};
use graphfleet_operator::resources::{self, gateway, gateway_revisions};
use kube::ResourceExt;

const SUPERGRAPH: &str = "schema @link(url: \"https://specs.apollo.dev/link/v1.0\") { query: Query }\ntype Query { hello: String }\n";

fn fixtures() -> Vec<(String, GraphGateway)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gateways");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture dir exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let gw: GraphGateway =
                serde_yaml_ng::from_str(&text).expect("fixture is a GraphGateway");
            let stem = path
                .file_stem()
                .expect("file stem")
                .to_string_lossy()
                .into_owned();
            (stem, gw)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

#[test]
fn built_objects_match_snapshots() {
    let hash = resources::short_hash(SUPERGRAPH.as_bytes());
    for (name, gw) in fixtures() {
        let pods = gateway::GatewayPods::of(&gw).expect("a valid fixture");
        let objects = serde_json::json!({
            "supergraphConfigMap": gateway_revisions::supergraph_config_map(&gw, SUPERGRAPH, &hash),
            "configConfigMap": gateway_revisions::config_file_config_map(&gw, &pods.config.text),
            "deployment": gateway::deployment(&gw, &pods, &hash, DEFAULT_GATEWAY_IMAGE),
            "service": gateway::service(&gw),
            "podDisruptionBudget": gateway::pod_disruption_budget(&gw),
            "horizontalPodAutoscaler": gateway::horizontal_pod_autoscaler(&gw),
        });
        insta::assert_yaml_snapshot!(name, objects);
    }
}

#[test]
fn a_new_supergraph_changes_only_the_pod_template_hash() {
    let (_, gw) = fixtures().remove(0);
    let pods = gateway::GatewayPods::of(&gw).expect("a valid fixture");
    let a = gateway::deployment(
        &gw,
        &pods,
        &resources::short_hash(b"one"),
        DEFAULT_GATEWAY_IMAGE,
    );
    let b = gateway::deployment(
        &gw,
        &pods,
        &resources::short_hash(b"two"),
        DEFAULT_GATEWAY_IMAGE,
    );
    assert_ne!(a, b, "a new supergraph must change the pod template");
    let template_annotations = |d: &k8s_openapi::api::apps::v1::Deployment| {
        d.spec
            .as_ref()
            .and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.clone())
    };
    let supergraph_volume = |d: &k8s_openapi::api::apps::v1::Deployment| {
        let pod = d.spec.as_ref()?.template.spec.as_ref()?;
        let volume = pod
            .volumes
            .as_ref()?
            .iter()
            .find(|v| v.name == "supergraph")?;
        Some(volume.config_map.as_ref()?.name.clone())
    };
    let mut b_as_a = b.clone();
    if let Some(spec) = b_as_a.spec.as_mut() {
        let a_template = &a.spec.as_ref().expect("spec").template;
        spec.template.metadata = a_template.metadata.clone();
        spec.template.spec = a_template.spec.clone();
    }
    assert_eq!(a, b_as_a, "only the pod template differs");
    assert_ne!(template_annotations(&a), template_annotations(&b));
    // The pods mount the revision's own immutable ConfigMap.
    assert_eq!(
        supergraph_volume(&b),
        Some(gateway_revisions::supergraph_config_map_name(
            &gw.name_any(),
            &resources::short_hash(b"two")
        ))
    );
}

#[test]
fn defaults_place_pods_on_the_router_pool_with_cpu_limits() {
    let (_, gw) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "minimal")
        .expect("minimal fixture");
    let pods = gateway::GatewayPods::of(&gw).expect("a valid fixture");
    let deploy = gateway::deployment(&gw, &pods, "h", DEFAULT_GATEWAY_IMAGE);
    let pod = deploy.spec.expect("spec").template.spec.expect("pod spec");
    assert_eq!(
        pod.node_selector
            .expect("node selector")
            .get("graphfleet.dev/pool")
            .map(String::as_str),
        Some("router")
    );
    let tol = &pod.tolerations.expect("tolerations")[0];
    assert_eq!(tol.key.as_deref(), Some("graphfleet.dev/pool"));
    assert_eq!(tol.value.as_deref(), Some("router"));
    let limits = pod.containers[0]
        .resources
        .clone()
        .expect("resources")
        .limits
        .expect("limits");
    assert_eq!(limits["cpu"].0, "1");
}
