//! What a GraphGateway adds to its pods beside the operator's own: `spec.env`, `spec.volumes`
//! and `spec.volumeMounts`, and the pod settings (`resources::pod_options`). The operator's
//! parts come first and are never replaced: a user variable named `GRAPHFLEET_*` (the
//! gateway reads those as settings, over the config file the operator checked), a volume
//! named like one of the operator's, or a mount over its directories is refused, so the
//! spec is not applied and the status names the field.

use k8s_openapi::api::core::v1::{EnvVar, Volume, VolumeMount};

use super::gateway_mounts::MOUNTS_DIR;
use graphfleet_api::GraphGateway;

/// The prefix of the gateway's settings variables (gateway/README.md).
const SETTINGS_ENV_PREFIX: &str = "GRAPHFLEET_";
/// The directories of the operator's mounts: the supergraph, config and usage under the
/// first, `spec.mounts` under the second, and the writable /tmp.
const OPERATOR_DIRS: [&str; 3] = ["/etc/graphfleet", MOUNTS_DIR, "/tmp"];

/// Every reason the gateway's extra env, volumes and mounts (and pod labels) cannot be
/// applied: `operator_volumes` are the names of the volumes the operator gives the pods.
pub fn problems(gw: &GraphGateway, operator_volumes: &[String]) -> Vec<String> {
    let spec = &gw.spec;
    let mut out = super::pod_options::problems(&spec.pod);
    for var in spec.env.iter().flatten() {
        if var.name.starts_with(SETTINGS_ENV_PREFIX) {
            out.push(format!(
                "spec.env: {} is a gateway setting; set it in spec.config (GRAPHFLEET_* variables would override the config the operator checked)",
                var.name
            ));
        }
    }
    let volumes: Vec<&str> = spec
        .volumes
        .iter()
        .flatten()
        .map(|v| v.name.as_str())
        .collect();
    for name in &volumes {
        if operator_volumes.iter().any(|o| o == name) {
            out.push(format!(
                "spec.volumes: {name} is the name of a volume the operator mounts; choose another"
            ));
        }
    }
    for mount in spec.volume_mounts.iter().flatten() {
        let path = mount.mount_path.trim_end_matches('/');
        if let Some(dir) = OPERATOR_DIRS
            .iter()
            .find(|d| path == **d || path.starts_with(&format!("{d}/")))
        {
            out.push(format!(
                "spec.volumeMounts: {} is inside {dir}, which the operator mounts",
                mount.mount_path
            ));
        }
        let known =
            volumes.contains(&mount.name.as_str()) || operator_volumes.contains(&mount.name);
        if !known {
            out.push(format!(
                "spec.volumeMounts: {} mounts volume {}, which spec.volumes does not define",
                mount.mount_path, mount.name
            ));
        }
    }
    out
}

/// The gateway container's environment: the operator's variables, then the user's.
pub fn env(gw: &GraphGateway, operator: Vec<EnvVar>) -> Vec<EnvVar> {
    operator
        .into_iter()
        .chain(gw.spec.env.iter().flatten().cloned())
        .collect()
}

/// The user's volumes after the operator's.
pub fn volumes(gw: &GraphGateway, operator: Vec<Volume>) -> Vec<Volume> {
    operator
        .into_iter()
        .chain(gw.spec.volumes.iter().flatten().cloned())
        .collect()
}

/// The user's mounts after the operator's.
pub fn volume_mounts(gw: &GraphGateway, operator: Vec<VolumeMount>) -> Vec<VolumeMount> {
    operator
        .into_iter()
        .chain(gw.spec.volume_mounts.iter().flatten().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resources::test_gateway as gateway;

    #[test]
    fn the_operators_env_volumes_and_dirs_are_kept() {
        let gw = gateway(serde_json::json!({
            "env": [{ "name": "RUST_LOG", "value": "debug" },
                    { "name": "GRAPHFLEET_ADMIN__LISTEN", "value": "0.0.0.0:1" }],
            "volumes": [{ "name": "certs", "emptyDir": {} }, { "name": "config", "emptyDir": {} }],
            "volumeMounts": [{ "name": "certs", "mountPath": "/certs" },
                             { "name": "certs", "mountPath": "/etc/graphfleet/config/" },
                             { "name": "nope", "mountPath": "/tmp/x" }],
        }));
        let operator = ["config".to_owned(), "tmp".to_owned()];
        assert_eq!(
            problems(&gw, &operator),
            [
                "spec.env: GRAPHFLEET_ADMIN__LISTEN is a gateway setting; set it in spec.config (GRAPHFLEET_* variables would override the config the operator checked)",
                "spec.volumes: config is the name of a volume the operator mounts; choose another",
                "spec.volumeMounts: /etc/graphfleet/config/ is inside /etc/graphfleet, which the operator mounts",
                "spec.volumeMounts: /tmp/x is inside /tmp, which the operator mounts",
                "spec.volumeMounts: /tmp/x mounts volume nope, which spec.volumes does not define",
            ]
        );
        let mine = EnvVar {
            name: "GRAPHFLEET_CONFIG".to_owned(),
            value: Some("/etc/graphfleet/config/gateway.json".to_owned()),
            ..EnvVar::default()
        };
        let names: Vec<String> = env(&gw, vec![mine]).into_iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            ["GRAPHFLEET_CONFIG", "RUST_LOG", "GRAPHFLEET_ADMIN__LISTEN"]
        );
        let fine = gateway(serde_json::json!({
            "volumes": [{ "name": "certs", "emptyDir": {} }],
            "volumeMounts": [{ "name": "certs", "mountPath": "/etc/graphfleet-certs" }],
        }));
        assert!(problems(&fine, &operator).is_empty());
    }
}
