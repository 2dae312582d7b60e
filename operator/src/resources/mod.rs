//! Pure builders: a resource's spec → the objects the operator applies for it. No Kubernetes
//! I/O here (the controllers apply what these return), so every object is unit-tested and
//! snapshotted without a cluster. One file per resource kind; the pieces they share are here.

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, SeccompProfile, SecurityContext,
};
use sha2::{Digest, Sha256};

pub mod gateway;
pub mod gateway_canary;
pub mod gateway_config;
pub mod gateway_extras;
pub mod gateway_meta;
pub mod gateway_monitor;
pub mod gateway_mounts;
pub mod gateway_revisions;
pub mod gateway_usage;
pub mod loadtest;
pub mod pod_options;

/// Field manager of every server-side apply, and the `managed-by` label of what it creates.
pub const MANAGER: &str = "graphfleet-operator";

/// Short, stable content hash (first 16 hex digits of SHA-256).
pub fn short_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Non-root, read-only root filesystem, no capabilities (gateway and k6 containers).
pub(crate) fn container_security_context() -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(true),
        read_only_root_filesystem: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

/// The distroless images' nonroot user, RuntimeDefault seccomp.
pub fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(65532),
        run_as_group: Some(65532),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".to_owned(),
            ..SeccompProfile::default()
        }),
        ..PodSecurityContext::default()
    }
}

/// `cpu` and `memory` quantities, for container requests and limits.
pub(crate) fn cpu_and_memory(
    cpu: &str,
    memory: &str,
) -> std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    std::collections::BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu.to_owned())),
        ("memory".to_owned(), Quantity(memory.to_owned())),
    ])
}

/// `volume` mounted read-only at `dir`, and a writable /tmp (the root filesystem is
/// read-only).
pub fn read_only_and_tmp(volume: &str, dir: &str) -> Vec<k8s_openapi::api::core::v1::VolumeMount> {
    use k8s_openapi::api::core::v1::VolumeMount;
    vec![
        VolumeMount {
            name: volume.to_owned(),
            mount_path: dir.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "tmp".to_owned(),
            mount_path: "/tmp".to_owned(),
            ..VolumeMount::default()
        },
    ]
}

/// The emptyDir behind /tmp.
pub fn tmp_volume() -> k8s_openapi::api::core::v1::Volume {
    use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, Volume};
    Volume {
        name: "tmp".to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }
}

/// `volume` from the ConfigMap `config_map`, and the emptyDir for /tmp.
pub fn config_map_and_tmp(
    volume: &str,
    config_map: &str,
) -> Vec<k8s_openapi::api::core::v1::Volume> {
    use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, Volume};
    vec![
        Volume {
            name: volume.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map.to_owned(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
        tmp_volume(),
    ]
}

/// The GraphGateway `edge` in `shop` with `spec`, for the builders' unit tests.
#[cfg(test)]
pub(crate) fn test_gateway(spec: serde_json::Value) -> graphfleet_api::GraphGateway {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "GraphGateway",
        "metadata": { "name": "edge", "namespace": "shop", "uid": "u-1" },
        "spec": spec,
    }))
    .expect("valid GraphGateway")
}
