//! A peer gateway's container, Deployment (router pool, CPU requests = limits) and Service.
//! graphfleet itself runs as a GraphGateway (see `fleet`).

use super::parts::{
    Budget, GATEWAY_LABEL, GATEWAY_PORT, SUPERGRAPH_DIR, dns_label, labels, meta, pool_placement,
    security, service, tcp_ready,
};
use std::collections::BTreeMap;

use graphfleet_api::SUPERGRAPH_KEY;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;

use crate::gateway::{Gateway, Kind};
use crate::peers::Peer;

/// How one gateway runs in a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayContainer {
    pub image: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The container of a peer gateway, or why it cannot run in the cluster. `peer_image` is the
/// image built for a Rust peer (see `incluster::images`).
pub fn peer_container(
    gateway: &Gateway,
    peer_image: Option<&str>,
    threads: u32,
) -> Result<GatewayContainer, String> {
    let supergraph = format!("{SUPERGRAPH_DIR}/{SUPERGRAPH_KEY}");
    let listen = format!("0.0.0.0:{GATEWAY_PORT}");
    let peer = |p: Peer| {
        peer_image
            .map(str::to_owned)
            .ok_or_else(|| format!("no image for {}", p.name()))
    };
    match &gateway.kind {
        Kind::Graphfleet => Err("graphfleet runs as a GraphGateway, not as a peer".to_owned()),
        Kind::Peer(p @ Peer::HiveRouter) => Ok(GatewayContainer {
            image: peer(*p)?,
            args: vec![],
            env: vec![
                ("SUPERGRAPH_FILE_PATH".into(), supergraph),
                ("HOST".into(), "0.0.0.0".into()),
                ("PORT".into(), GATEWAY_PORT.to_string()),
                ("ROUTER_HTTP_WORKERS".into(), threads.to_string()),
                ("LOG_LEVEL".into(), "warn".into()),
            ],
        }),
        Kind::Peer(p @ Peer::ApolloRouter) => Ok(GatewayContainer {
            image: peer(*p)?,
            args: vec!["--supergraph".into(), supergraph, "--listen".into(), listen],
            env: vec![("APOLLO_TELEMETRY_DISABLED".into(), "true".into())],
        }),
        Kind::Peer(p @ (Peer::HiveGateway | Peer::ApolloGateway)) => Err(format!(
            "not available in-cluster: {} is a Node.js gateway (Node ≥ 20); the local images are made from Debian bookworm packages, whose nodejs is 18",
            p.name()
        )),
        Kind::Custom { .. } => Err(
            "not available in-cluster: a --gateway-command runs on this machine only".to_owned(),
        ),
    }
}

pub fn gateway_name(gateway: &str) -> String {
    dns_label(&format!("gw-{gateway}"))
}

fn gateway_labels(gateway: &str) -> BTreeMap<String, String> {
    labels("gateway", &[(GATEWAY_LABEL, gateway)])
}

/// A peer gateway's Deployment on the router pool, serving the supergraph the operator
/// composed for graphfleet (the revision ConfigMap `supergraph_config_map`), under the same
/// `budget` as the GraphGateway's pod.
pub fn peer_deployment(
    gateway: &str,
    namespace: &str,
    container: &GatewayContainer,
    supergraph_config_map: &str,
    budget: &Budget,
) -> Deployment {
    let name = gateway_name(gateway);
    let (node_selector, tolerations) = pool_placement("router");
    let (pod_security, container_security) = security();
    let env: Vec<serde_json::Value> = container
        .env
        .iter()
        .map(|(k, v)| serde_json::json!({ "name": k, "value": v }))
        .collect();
    let labels = gateway_labels(gateway);
    serde_json::from_value(serde_json::json!({
        "metadata": meta(&name, namespace, labels.clone()),
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "nodeSelector": node_selector,
                    "tolerations": tolerations,
                    "securityContext": pod_security,
                    "terminationGracePeriodSeconds": 1,
                    "enableServiceLinks": false,
                    "containers": [{
                        "name": "gateway",
                        "image": container.image,
                        "imagePullPolicy": "Never",
                        "args": container.args,
                        "env": env,
                        "ports": [{ "containerPort": GATEWAY_PORT }],
                        "readinessProbe": tcp_ready(GATEWAY_PORT),
                        "resources": budget.resources(),
                        "securityContext": container_security,
                        "volumeMounts": [
                            { "name": "supergraph", "mountPath": SUPERGRAPH_DIR, "readOnly": true },
                            { "name": "tmp", "mountPath": "/tmp" },
                        ],
                    }],
                    "volumes": [
                        { "name": "supergraph", "configMap": { "name": supergraph_config_map } },
                        { "name": "tmp", "emptyDir": {} },
                    ],
                },
            },
        },
    }))
    .expect("the peer Deployment is a valid Deployment")
}

pub fn gateway_svc(gateway: &str, namespace: &str) -> Service {
    service(
        &gateway_name(gateway),
        namespace,
        gateway_labels(gateway),
        GATEWAY_PORT,
    )
}

/// The gateway's GraphQL URL inside the cluster.
pub fn gateway_url(gateway: &str, namespace: &str, path: &str) -> String {
    format!(
        "http://{}.{namespace}.svc.cluster.local:{GATEWAY_PORT}{path}",
        gateway_name(gateway)
    )
}
