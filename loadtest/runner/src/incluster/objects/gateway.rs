//! A gateway's container, pod (router pool, CPU requests = limits) and Service.

use super::parts::{
    GATEWAY_LABEL, GATEWAY_PORT, Images, SUPERGRAPH_DIR, SUPERGRAPH_KEY, dns_label, env, labels,
    meta, pool_placement, security, service, tcp_ready,
};
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Pod, PodSpec, ResourceRequirements, Service,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::gateway::{Gateway, Kind};
use crate::peers::Peer;
use graphfleet_operator::resources::{config_map_and_tmp, read_only_and_tmp};

/// How one gateway runs in a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayContainer {
    pub image: String,
    pub command: Option<Vec<String>>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The container of a gateway, or why it cannot run in the cluster. `peer_image` is the
/// image built for a Rust peer (see `incluster::images`).
pub fn gateway_container(
    gateway: &Gateway,
    images: &Images,
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
        Kind::Graphfleet => Ok(GatewayContainer {
            image: images.gateway.clone(),
            command: None,
            args: vec!["--supergraph".into(), supergraph, "--listen".into(), listen],
            env: vec![],
        }),
        Kind::Peer(p @ Peer::HiveRouter) => Ok(GatewayContainer {
            image: peer(*p)?,
            command: None,
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
            command: None,
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

/// CPU as a Kubernetes quantity: whole cores as "1", else millicores.
pub fn cpu_quantity(cpus: f64) -> String {
    let milli = (cpus * 1000.0).round() as i64;
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// The gateway's pod on the router pool: requests = limits (Guaranteed QoS), so the
/// kubelet gives it a CFS quota of `cpus` cores, as the host mode's cgroup does.
pub fn gateway_pod(
    gateway: &str,
    namespace: &str,
    container: &GatewayContainer,
    supergraph_config_map: &str,
    cpus: f64,
    memory: &str,
) -> Pod {
    let name = gateway_name(gateway);
    let (node_selector, tolerations) = pool_placement("router");
    let (pod_security, container_security) = security();
    let quantities = BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu_quantity(cpus))),
        ("memory".to_owned(), Quantity(memory.to_owned())),
    ]);
    Pod {
        metadata: meta(&name, namespace, gateway_labels(gateway)),
        spec: Some(PodSpec {
            node_selector: Some(node_selector),
            tolerations: Some(tolerations),
            security_context: Some(pod_security),
            termination_grace_period_seconds: Some(1),
            enable_service_links: Some(false),
            containers: vec![Container {
                name: "gateway".to_owned(),
                image: Some(container.image.clone()),
                image_pull_policy: Some("Never".to_owned()),
                command: container.command.clone(),
                args: (!container.args.is_empty()).then(|| container.args.clone()),
                env: (!container.env.is_empty()).then(|| {
                    container
                        .env
                        .iter()
                        .map(|(k, v)| env(k, v.clone()))
                        .collect()
                }),
                ports: Some(vec![ContainerPort {
                    container_port: GATEWAY_PORT,
                    ..ContainerPort::default()
                }]),
                readiness_probe: Some(tcp_ready(GATEWAY_PORT)),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities.clone()),
                    limits: Some(quantities),
                    ..ResourceRequirements::default()
                }),
                security_context: Some(container_security),
                volume_mounts: Some(read_only_and_tmp("supergraph", SUPERGRAPH_DIR)),
                ..Container::default()
            }],
            volumes: Some(config_map_and_tmp("supergraph", supergraph_config_map)),
            ..PodSpec::default()
        }),
        status: None,
    }
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
