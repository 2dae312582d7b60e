//! The set's subgraphs (one pod + Service each, subgraph pool) and the supergraph
//! ConfigMap, its URLs pointed at those Services.

use super::parts::{
    LOCAL_SUBGRAPHS, SUBGRAPH_PORT, SUPERGRAPH_KEY, dns_label, labels, meta, pool_placement,
    security, service, tcp_ready,
};
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, ContainerPort, Pod, PodSpec, Service};

/// The subgraphs of a supergraph that the runner serves: the first path segment of every
/// `url: "http://127.0.0.1:4200/<name>"`, in order of appearance, without repeats.
pub fn subgraph_names(supergraph: &str) -> Vec<String> {
    let needle = format!("url: \"{LOCAL_SUBGRAPHS}/");
    let mut out: Vec<String> = Vec::new();
    let mut rest = supergraph;
    // Bounded by the text: each iteration moves past one match.
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| !matches!(c, '"' | '/' | '?'))
            .collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Name of the pod and Service of one subgraph of a set.
pub fn subgraph_service(set: &str, subgraph: &str) -> String {
    dns_label(&format!("sg-{set}-{subgraph}"))
}

/// The Service's cluster DNS name and port as a base URL.
fn subgraph_base_url(set: &str, subgraph: &str, namespace: &str) -> String {
    format!(
        "http://{}.{namespace}.svc.cluster.local:{SUBGRAPH_PORT}",
        subgraph_service(set, subgraph)
    )
}

/// Points every `http://127.0.0.1:4200/<subgraph>` URL at that subgraph's Service.
pub fn rewrite_supergraph(supergraph: &str, set: &str, namespace: &str) -> String {
    let mut out = supergraph.to_owned();
    for name in subgraph_names(supergraph) {
        out = out.replace(
            &format!("url: \"{LOCAL_SUBGRAPHS}/{name}"),
            &format!("url: \"{}/{name}", subgraph_base_url(set, &name, namespace)),
        );
    }
    out
}

fn subgraph_labels(set: &str, subgraph: &str) -> BTreeMap<String, String> {
    labels(
        "subgraph",
        &[
            ("graphfleet.dev/set", set),
            ("graphfleet.dev/subgraph", subgraph),
        ],
    )
}

/// One subgraph's pod on the subgraph pool: `graphfleet-subgraphs --set <set>` (it serves
/// every subgraph of the set; its Service sends it one subgraph's traffic), one worker
/// thread as in the host mode.
pub fn subgraph_pod(set: &str, subgraph: &str, namespace: &str, image: &str) -> Pod {
    let name = subgraph_service(set, subgraph);
    let (node_selector, tolerations) = pool_placement("subgraph");
    let (pod_security, container_security) = security();
    Pod {
        metadata: meta(&name, namespace, subgraph_labels(set, subgraph)),
        spec: Some(PodSpec {
            node_selector: Some(node_selector),
            tolerations: Some(tolerations),
            security_context: Some(pod_security),
            termination_grace_period_seconds: Some(1),
            enable_service_links: Some(false),
            containers: vec![Container {
                name: "subgraphs".to_owned(),
                image: Some(image.to_owned()),
                image_pull_policy: Some("Never".to_owned()),
                args: Some(vec![
                    "--set".to_owned(),
                    set.to_owned(),
                    "--listen".to_owned(),
                    format!("0.0.0.0:{SUBGRAPH_PORT}"),
                    "--threads".to_owned(),
                    "1".to_owned(),
                ]),
                ports: Some(vec![ContainerPort {
                    container_port: SUBGRAPH_PORT,
                    ..ContainerPort::default()
                }]),
                readiness_probe: Some(tcp_ready(SUBGRAPH_PORT)),
                security_context: Some(container_security),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: None,
    }
}

pub fn subgraph_svc(set: &str, subgraph: &str, namespace: &str) -> Service {
    service(
        &subgraph_service(set, subgraph),
        namespace,
        subgraph_labels(set, subgraph),
        SUBGRAPH_PORT,
    )
}

pub fn supergraph_config_map_name(set: &str) -> String {
    dns_label(&format!("supergraph-{set}"))
}

pub fn supergraph_config_map(set: &str, namespace: &str, supergraph: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(
            &supergraph_config_map_name(set),
            namespace,
            labels("supergraph", &[("graphfleet.dev/set", set)]),
        ),
        data: Some(BTreeMap::from([(
            SUPERGRAPH_KEY.to_owned(),
            supergraph.to_owned(),
        )])),
        ..ConfigMap::default()
    }
}
