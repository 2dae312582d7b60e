//! What every object of the run shares: labels, names, ports, images, pool placement, the
//! restricted security context and the small builders of metadata, env, probes, Services.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, Probe, SeccompProfile, SecurityContext, Service, ServicePort,
    ServiceSpec, TCPSocketAction, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

pub const POOL_LABEL: &str = "graphfleet.dev/pool";
pub const ROLE_LABEL: &str = "graphfleet.dev/bench-role";
pub const GATEWAY_LABEL: &str = "graphfleet.dev/bench-gateway";
/// The set a Subgraph and the GraphGateway selecting it belong to.
pub(super) const SET_LABEL: &str = "graphfleet.dev/bench-set";
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "graphfleet-bench");
/// Port every peer gateway listens on in its pod (Service port too).
pub const GATEWAY_PORT: i32 = 4000;
/// Port of a GraphGateway's Service (the operator's).
pub const FLEET_SERVICE_PORT: i32 = 80;
/// Port of the subgraph pods.
pub const SUBGRAPH_PORT: i32 = 4200;
pub(super) const SUPERGRAPH_DIR: &str = "/etc/graphfleet";
/// A ConfigMap holds at most 1 MiB; a bigger expected answer is checked by its hash only.
pub const MAX_EXPECTED_IN_CONFIGMAP: usize = 900 * 1024;

/// Images of one in-cluster run (k6's is the operator's: the LoadTest runs it).
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    pub gateway: String,
    pub subgraphs: String,
}

impl Images {
    pub fn defaults(tag: &str) -> Images {
        Images {
            gateway: format!("ghcr.io/graphfleet/graphfleet-gateway:{tag}"),
            subgraphs: format!("ghcr.io/graphfleet/graphfleet-subgraphs:{tag}"),
        }
    }
}

pub(super) fn labels(role: &str, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (MANAGED_BY.0.to_owned(), MANAGED_BY.1.to_owned()),
        (ROLE_LABEL.to_owned(), role.to_owned()),
    ]);
    for (k, v) in extra {
        l.insert((*k).to_owned(), (*v).to_owned());
    }
    l
}

pub(super) fn meta(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
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

pub(super) fn pool_placement(pool: &str) -> (BTreeMap<String, String>, Vec<Toleration>) {
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

/// The operator's pod security context (the images' nonroot user, the runtime's seccomp
/// profile); containers without its read-only root filesystem (peers' images may write there).
pub(super) fn security() -> (PodSecurityContext, SecurityContext) {
    (
        PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(65532),
            run_as_group: Some(65532),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_owned(),
                ..SeccompProfile::default()
            }),
            ..PodSecurityContext::default()
        },
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

pub(super) fn tcp_ready(port: i32) -> Probe {
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

pub(super) fn service(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    port: i32,
) -> Service {
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

/// CPU as a Kubernetes quantity: whole cores as "1", else millicores.
pub fn cpu_quantity(cpus: f64) -> String {
    let milli = (cpus * 1000.0).round() as i64;
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// What each gateway pod gets: `cpus` cores as its limit (the CFS quota the kubelet sets,
/// the budget the benchmark compares at) and `memory` requested and limited. Its CPU
/// request is the budget shared by the `gateways` of the run, so they all fit the router
/// node side by side (only one is ever loaded at a time).
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub cpus: f64,
    pub memory: String,
    pub gateways: usize,
}

impl Budget {
    pub fn resources(&self) -> serde_json::Value {
        let request = self.cpus / self.gateways.max(1) as f64;
        serde_json::json!({
            "requests": { "cpu": cpu_quantity(request), "memory": self.memory },
            "limits": { "cpu": cpu_quantity(self.cpus), "memory": self.memory },
        })
    }
}
