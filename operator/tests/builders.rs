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
            "podMonitor": resources::gateway_monitor::pod_monitor(&gw),
            "canaryService": resources::gateway_canary::canary_service(&gw),
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
fn defaults_set_no_node_pool_and_limit_the_cpu() {
    let (_, gw) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "minimal")
        .expect("minimal fixture");
    let pods = gateway::GatewayPods::of(&gw).expect("a valid fixture");
    let deploy = gateway::deployment(&gw, &pods, "h", DEFAULT_GATEWAY_IMAGE);
    let pod = deploy.spec.expect("spec").template.spec.expect("pod spec");
    // An ordinary cluster has no graphfleet pools: the benchmark's manifests name them.
    assert_eq!(pod.node_selector, None);
    assert_eq!(pod.tolerations, None);
    let limits = pod.containers[0]
        .resources
        .clone()
        .expect("resources")
        .limits
        .expect("limits");
    assert_eq!(limits["cpu"].0, "1");
}

#[test]
fn user_labels_never_replace_the_selector_nor_user_env_the_operators() {
    let (_, mut gw) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "knobs")
        .expect("knobs fixture");
    let pods = gateway::GatewayPods::of(&gw).expect("a valid fixture");
    let deploy = gateway::deployment(&gw, &pods, "h", DEFAULT_GATEWAY_IMAGE);
    let spec = deploy.spec.expect("spec");
    let labels = spec
        .template
        .metadata
        .expect("metadata")
        .labels
        .expect("labels");
    for (k, v) in spec.selector.match_labels.expect("selector") {
        assert_eq!(labels.get(&k), Some(&v), "{k}");
    }
    let env = spec.template.spec.expect("pod").containers[0]
        .env
        .clone()
        .expect("env");
    assert_eq!(
        env[0].name, "GRAPHFLEET_CONFIG",
        "the operator's variable first"
    );
    // An API server without the CRD's rules: refused by the operator, the field named.
    gw.spec.pod.pod_labels =
        Some([("app.kubernetes.io/instance".to_owned(), "other".to_owned())].into());
    gw.spec.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
        name: "GRAPHFLEET_SUPERGRAPH__WATCH".to_owned(),
        value: Some("true".to_owned()),
        ..Default::default()
    }]);
    let problems = gateway::GatewayPods::of(&gw).expect_err("refused");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("spec.podLabels: app.kubernetes.io/instance"));
    assert!(problems[1].starts_with("spec.env: GRAPHFLEET_SUPERGRAPH__WATCH"));
}
