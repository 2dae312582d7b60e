//! The set's subgraphs: one pod + Service each on the subgraph pool, and the `Subgraph`
//! resources naming those Services.

use super::parts::{
    SET_LABEL, SUBGRAPH_PORT, dns_label, labels, meta, pool_placement, security, service, tcp_ready,
};
use std::collections::BTreeMap;

use graphfleet_api::{Subgraph, SubgraphSpec};
use graphfleet_bench_model::sets::SubgraphDef;
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, Service};

/// Name of the pod and Service of one subgraph of a set.
pub fn subgraph_service(set: &str, subgraph: &str) -> String {
    dns_label(&format!("sg-{set}-{subgraph}"))
}

/// The subgraph's GraphQL URL inside the cluster: its Service, its path on the set's server.
pub fn subgraph_url(set: &str, subgraph: &str, namespace: &str) -> String {
    format!(
        "http://{}.{namespace}.svc.cluster.local:{SUBGRAPH_PORT}/{subgraph}",
        subgraph_service(set, subgraph)
    )
}

/// The `Subgraph` resource of one subgraph of a set, its SDL inline as committed: the
/// operator composes the set's Subgraphs for the GraphGateway selecting [`SET_LABEL`].
pub fn subgraph_resource(set: &str, subgraph: &SubgraphDef, namespace: &str) -> Subgraph {
    let mut sg = Subgraph::new(
        subgraph.name,
        SubgraphSpec {
            url: subgraph_url(set, subgraph.name, namespace),
            sdl: Some(subgraph.sdl.to_owned()),
            config_map_ref: None,
            introspection_timeout_ms: None,
        },
    );
    sg.metadata = meta(
        subgraph.name,
        namespace,
        labels("subgraph", &[(SET_LABEL, set)]),
    );
    sg
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
