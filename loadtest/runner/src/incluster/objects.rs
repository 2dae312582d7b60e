//! The Kubernetes objects of an in-cluster run, as pure functions of what to run: the
//! set's subgraphs (one pod + Service each, subgraph pool), the supergraph ConfigMap, the
//! gateway pod (router pool, CPU requests = limits) and Service, and the k6 Job (client
//! pool) with its payload ConfigMap. Nothing here talks to a cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, Container, ContainerPort, EnvVar, Pod, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SecurityContext, Service, ServicePort,
    ServiceSpec, TCPSocketAction, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::gateway::{Gateway, Kind};
use crate::k6::Check;
use crate::peers::Peer;
use graphfleet_operator::resources::{config_map_and_tmp, pod_security_context, read_only_and_tmp};

pub const POOL_LABEL: &str = "graphfleet.dev/pool";
pub const ROLE_LABEL: &str = "graphfleet.dev/bench-role";
const GATEWAY_LABEL: &str = "graphfleet.dev/bench-gateway";
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "graphfleet-bench");
/// Port every gateway listens on in its pod (Service port too).
pub const GATEWAY_PORT: i32 = 4000;
/// Port of the subgraph pods.
pub const SUBGRAPH_PORT: i32 = 4200;
/// The committed supergraphs point every subgraph here.
pub const LOCAL_SUBGRAPHS: &str = "http://127.0.0.1:4200";
const SUPERGRAPH_DIR: &str = "/etc/graphfleet";
const SUPERGRAPH_KEY: &str = "supergraph.graphql";
const K6_DIR: &str = "/etc/graphfleet/bench";
/// The scenario script inside the graphfleet-k6 image.
pub const K6_SCRIPT: &str = "/graphfleet/k6/scenario.js";
pub const K6_CONTAINER: &str = "k6";
/// A ConfigMap holds at most 1 MiB; a bigger expected answer is checked by length/hash only.
pub const MAX_EXPECTED_IN_CONFIGMAP: usize = 900 * 1024;

/// Images of one in-cluster run.
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    pub gateway: String,
    pub subgraphs: String,
    pub k6: String,
}

impl Images {
    pub fn defaults(tag: &str) -> Images {
        Images {
            gateway: format!("ghcr.io/graphfleet/graphfleet-gateway:{tag}"),
            subgraphs: format!("ghcr.io/graphfleet/graphfleet-subgraphs:{tag}"),
            k6: format!("ghcr.io/graphfleet/graphfleet-k6:{tag}"),
        }
    }
}

fn labels(role: &str, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
        (ROLE_LABEL.to_owned(), role.to_owned()),
    ]);
    for (k, v) in extra {
        l.insert((*k).to_owned(), (*v).to_owned());
    }
    l
}

fn meta(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

/// A DNS-1035 label: lowercase alphanumerics and '-', starting with a letter, ≤ 63 chars.
pub fn dns_label(s: &str) -> String {
    let mut out: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert(0, 'x');
    }
    out.truncate(63);
    out.trim_end_matches('-').to_owned()
}

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

fn pool_placement(pool: &str) -> (BTreeMap<String, String>, Vec<Toleration>) {
    (
        BTreeMap::from([(POOL_LABEL.to_owned(), pool.to_owned())]),
        vec![Toleration {
            key: Some(POOL_LABEL.to_owned()),
            operator: Some("Equal".to_owned()),
            value: Some(pool.to_owned()),
            effect: Some("NoSchedule".to_owned()),
            ..Toleration::default()
        }],
    )
}

/// The operator's pod security context; containers without its read-only root filesystem
/// (peers' images may write there).
fn security() -> (PodSecurityContext, SecurityContext) {
    (
        pod_security_context(),
        SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        },
    )
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn tcp_ready(port: i32) -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(port),
            ..TCPSocketAction::default()
        }),
        period_seconds: Some(1),
        failure_threshold: Some(120),
        ..Probe::default()
    }
}

fn service(name: &str, namespace: &str, labels: BTreeMap<String, String>, port: i32) -> Service {
    Service {
        metadata: meta(name, namespace, labels.clone()),
        spec: Some(ServiceSpec {
            selector: Some(labels),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port,
                target_port: Some(IntOrString::Int(port)),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
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

/// The k6 inputs of one (scenario, gateway): the POST body and, when it fits, the answer
/// to compare bodies that differ in bytes with.
pub fn k6_config_map(
    name: &str,
    namespace: &str,
    payload: &str,
    expected: Option<&str>,
) -> ConfigMap {
    let mut data = BTreeMap::from([("payload.json".to_owned(), payload.to_owned())]);
    if let Some(e) = expected.filter(|e| e.len() <= MAX_EXPECTED_IN_CONFIGMAP) {
        data.insert("expected.json".to_owned(), e.to_owned());
    }
    ConfigMap {
        metadata: meta(name, namespace, labels("k6", &[])),
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// What one k6 run does: scenario.js's environment, as the host mode sets it.
#[derive(Debug, Clone, PartialEq)]
pub struct K6Run {
    pub url: String,
    pub check: Check,
    pub expected_len: usize,
    pub expected_sha256: String,
    /// Whether the ConfigMap holds expected.json.
    pub expected_file: bool,
    pub rate: u32,
    pub vus: u32,
    pub max_vus: u32,
    pub duration_s: u32,
    /// A no-cache scenario's nonce (scenario.js's `GF_UNIQUE`).
    pub unique: Option<u32>,
}

fn check_str(c: Check) -> &'static str {
    match c {
        Check::None => "none",
        Check::Length => "length",
        Check::Full => "full",
    }
}

/// The k6 Job on the client pool; scenario.js writes its JSON summary to the termination
/// message, where the runner reads it.
pub fn k6_job(name: &str, namespace: &str, image: &str, config_map: &str, run: &K6Run) -> Job {
    let (node_selector, tolerations) = pool_placement("client");
    let (pod_security, container_security) = security();
    let mut vars = vec![
        env("GF_URL", run.url.clone()),
        env("GF_PAYLOAD", format!("{K6_DIR}/payload.json")),
        env("GF_CHECK", check_str(run.check)),
        env("GF_EXPECTED_LEN", run.expected_len.to_string()),
        env("GF_EXPECTED_SHA256", run.expected_sha256.clone()),
        env("GF_EXECUTOR", "constant-arrival-rate"),
        env("GF_RATE", run.rate.to_string()),
        env("GF_VUS", run.vus.to_string()),
        env("GF_MAX_VUS", run.max_vus.to_string()),
        env("GF_DURATION", format!("{}s", run.duration_s)),
        env("GF_SUMMARY", "/dev/termination-log"),
        env("K6_NO_USAGE_REPORT", "true"),
    ];
    if run.expected_file {
        vars.push(env("GF_EXPECTED_FILE", format!("{K6_DIR}/expected.json")));
    }
    if let Some(nonce) = run.unique {
        vars.push(env("GF_UNIQUE", nonce.to_string()));
    }
    let labels = labels("k6", &[]);
    Job {
        metadata: meta(name, namespace, labels.clone()),
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            completions: Some(1),
            parallelism: Some(1),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    restart_policy: Some("Never".to_owned()),
                    node_selector: Some(node_selector),
                    tolerations: Some(tolerations),
                    security_context: Some(pod_security),
                    enable_service_links: Some(false),
                    containers: vec![Container {
                        name: K6_CONTAINER.to_owned(),
                        image: Some(image.to_owned()),
                        image_pull_policy: Some("Never".to_owned()),
                        args: Some(vec![
                            "run".to_owned(),
                            "--quiet".to_owned(),
                            "--no-color".to_owned(),
                            K6_SCRIPT.to_owned(),
                        ]),
                        env: Some(vars),
                        termination_message_path: Some("/dev/termination-log".to_owned()),
                        termination_message_policy: Some("File".to_owned()),
                        security_context: Some(container_security),
                        volume_mounts: Some(read_only_and_tmp("inputs", K6_DIR)),
                        ..Container::default()
                    }],
                    volumes: Some(config_map_and_tmp("inputs", config_map)),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}

/// How a k6 pod ended.
#[derive(Debug, Clone, PartialEq)]
pub enum K6End {
    /// Still running (or not started).
    Running,
    /// Exited; its termination message (the summary), exit code and run window (Unix s).
    Done {
        message: String,
        exit_code: i32,
        started: Option<f64>,
        finished: Option<f64>,
    },
}

/// The k6 container's state from its pod.
pub fn k6_end(pod: &Pod) -> K6End {
    let terminated = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == K6_CONTAINER))
        .and_then(|c| c.state.as_ref()?.terminated.clone());
    match terminated {
        None => K6End::Running,
        Some(t) => K6End::Done {
            message: t.message.unwrap_or_default(),
            exit_code: t.exit_code,
            started: t.started_at.map(|s| s.0.as_millisecond() as f64 / 1000.0),
            finished: t.finished_at.map(|s| s.0.as_millisecond() as f64 / 1000.0),
        },
    }
}

#[cfg(test)]
mod tests;
