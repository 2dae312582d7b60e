//! The GraphGateway's `authentication` and `authorization` in the gateway config file's
//! key names, and the volumes that bring JWKS Secrets and ConfigMaps into the pods.

use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, PodSpec, SecretVolumeSource, Volume, VolumeMount,
};
use serde_json::{Map, Value};

use crate::crd::{GatewayConfig, GraphGateway};

/// JWKS source `i` from a Secret or ConfigMap is mounted at `JWKS_DIR/<i>/` (a directory
/// mount, not subPath, so the kubelet's updates reach the gateway, which re-reads it).
pub const JWKS_DIR: &str = "/etc/graphfleet-jwks";

fn volume_name(i: usize) -> String {
    format!("jwks-{i}")
}

/// Add the authentication and authorization settings `c` sets to the gateway config.
pub(super) fn auth_sections(root: &mut Map<String, Value>, c: &GatewayConfig) {
    if let Some(authn) = &c.authentication {
        let mut section = Map::new();
        let jwks: Vec<Value> = authn
            .jwks
            .iter()
            .enumerate()
            .map(|(i, source)| {
                let mut out = Map::new();
                let key = source
                    .secret
                    .as_ref()
                    .map(|s| &s.key)
                    .or(source.config_map.as_ref().map(|c| &c.key));
                if let Some(key) = key {
                    out.insert("file".into(), format!("{JWKS_DIR}/{i}/{key}").into());
                }
                if let Some(url) = &source.url {
                    out.insert("url".into(), url.clone().into());
                }
                if let Some(secs) = source.refresh_interval_seconds {
                    out.insert("refresh_interval".into(), format!("{secs}s").into());
                }
                Value::Object(out)
            })
            .collect();
        section.insert("jwks".into(), Value::from(jwks));
        for (key, list) in [
            ("issuers", &authn.issuers),
            ("audiences", &authn.audiences),
            ("algorithms", &authn.algorithms),
        ] {
            if !list.is_empty() {
                section.insert(key.into(), Value::from(list.clone()));
            }
        }
        if let Some(secs) = authn.leeway_seconds {
            section.insert("leeway".into(), format!("{secs}s").into());
        }
        let mut header = Map::new();
        if let Some(name) = &authn.header_name {
            header.insert("name".into(), name.clone().into());
        }
        if let Some(prefix) = &authn.header_prefix {
            header.insert("prefix".into(), prefix.clone().into());
        }
        if !header.is_empty() {
            section.insert("header".into(), Value::Object(header));
        }
        if let Some(cookie) = &authn.cookie {
            section.insert("cookie".into(), cookie.clone().into());
        }
        if let Some(required) = authn.require_authentication {
            section.insert("require_authentication".into(), required.into());
        }
        root.insert("authentication".into(), Value::Object(section));
    }
    if let Some(authz) = &c.authorization {
        let mut section = Map::new();
        if let Some(enabled) = authz.enabled {
            section.insert("enabled".into(), enabled.into());
        }
        if let Some(reject) = authz.reject_unauthorized {
            section.insert("reject_unauthorized".into(), reject.into());
        }
        if let Some(claim) = &authz.scope_claim {
            section.insert("scope_claim".into(), claim.clone().into());
        }
        if !authz.policies.is_empty() {
            let policies: Map<String, Value> = authz
                .policies
                .iter()
                .map(|(name, rule)| {
                    let mut out = Map::new();
                    out.insert("claim".into(), rule.claim.clone().into());
                    if let Some(v) = &rule.equals {
                        out.insert("equals".into(), v.clone().into());
                    }
                    if let Some(v) = &rule.contains {
                        out.insert("contains".into(), v.clone().into());
                    }
                    (name.clone(), Value::Object(out))
                })
                .collect();
            section.insert("policies".into(), Value::Object(policies));
        }
        if !section.is_empty() {
            root.insert("authorization".into(), Value::Object(section));
        }
    }
}

/// `pod` with the JWKS Secrets and ConfigMaps as volumes, mounted read-only into the
/// gateway container.
pub fn with_jwks_volumes(gw: &GraphGateway, mut pod: PodSpec) -> PodSpec {
    let (volumes, mounts) = jwks_volumes(gw);
    if volumes.is_empty() {
        return pod;
    }
    pod.volumes.get_or_insert_with(Vec::new).extend(volumes);
    let gateway = pod
        .containers
        .iter_mut()
        .find(|c| c.name == super::gateway::GATEWAY_CONTAINER)
        .expect("the gateway pod has the gateway container");
    gateway
        .volume_mounts
        .get_or_insert_with(Vec::new)
        .extend(mounts);
    pod
}

/// The volumes and read-only mounts of the JWKS Secrets and ConfigMaps.
pub fn jwks_volumes(gw: &GraphGateway) -> (Vec<Volume>, Vec<VolumeMount>) {
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let Some(authn) = &gw.spec.config.authentication else {
        return (volumes, mounts);
    };
    for (i, source) in authn.jwks.iter().enumerate() {
        let volume = if let Some(secret) = &source.secret {
            Volume {
                name: volume_name(i),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(secret.name.clone()),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            }
        } else if let Some(config_map) = &source.config_map {
            Volume {
                name: volume_name(i),
                config_map: Some(ConfigMapVolumeSource {
                    name: config_map.name.clone(),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            }
        } else {
            continue;
        };
        volumes.push(volume);
        mounts.push(VolumeMount {
            name: volume_name(i),
            mount_path: format!("{JWKS_DIR}/{i}"),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    (volumes, mounts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{AuthenticationSpec, AuthorizationSpec, JwksSpec, PolicyRuleSpec};
    use crate::resources::gateway::tests::{gateway, load_in_container};
    use crate::resources::gateway::{deployment, gateway_config_json};
    use graphfleet_gateway::config as gateway_config;
    use k8s_openapi::api::core::v1::{ConfigMapKeySelector, SecretKeySelector};
    use std::path::PathBuf;
    use std::time::Duration;

    fn spec() -> GatewayConfig {
        let policies = [
            (
                "admin".to_owned(),
                PolicyRuleSpec {
                    claim: "roles".to_owned(),
                    equals: None,
                    contains: Some("admin".to_owned()),
                },
            ),
            (
                "eu".to_owned(),
                PolicyRuleSpec {
                    claim: "org.region".to_owned(),
                    equals: Some("eu".to_owned()),
                    contains: None,
                },
            ),
        ];
        GatewayConfig {
            authentication: Some(AuthenticationSpec {
                jwks: vec![
                    JwksSpec {
                        secret: Some(SecretKeySelector {
                            name: "idp-keys".to_owned(),
                            key: "jwks.json".to_owned(),
                            optional: None,
                        }),
                        ..JwksSpec::default()
                    },
                    JwksSpec {
                        config_map: Some(ConfigMapKeySelector {
                            name: "public-keys".to_owned(),
                            key: "keys.json".to_owned(),
                            optional: None,
                        }),
                        refresh_interval_seconds: Some(30),
                        ..JwksSpec::default()
                    },
                    JwksSpec {
                        url: Some("https://idp.example.com/.well-known/jwks.json".to_owned()),
                        refresh_interval_seconds: Some(300),
                        ..JwksSpec::default()
                    },
                ],
                issuers: vec!["https://idp.example.com/".to_owned()],
                audiences: vec!["graphfleet".to_owned()],
                algorithms: vec!["ES256".to_owned(), "RS256".to_owned()],
                leeway_seconds: Some(10),
                header_name: Some("x-token".to_owned()),
                header_prefix: Some(String::new()),
                cookie: Some("session".to_owned()),
                require_authentication: Some(true),
            }),
            authorization: Some(AuthorizationSpec {
                enabled: Some(true),
                reject_unauthorized: Some(true),
                scope_claim: Some("scp".to_owned()),
                policies: policies.into_iter().collect(),
            }),
            ..GatewayConfig::default()
        }
    }

    #[test]
    fn jwks_secrets_and_config_maps_are_mounted_as_directories() {
        let gw = gateway(spec());
        let pod = deployment(&gw, "hash", "img")
            .spec
            .expect("spec")
            .template
            .spec
            .expect("pod");
        let volumes = pod.volumes.expect("volumes");
        let secret = volumes.iter().find(|v| v.name == "jwks-0").expect("jwks-0");
        let secret = secret.secret.as_ref().expect("a Secret volume");
        assert_eq!(secret.secret_name.as_deref(), Some("idp-keys"));
        let config_map = volumes.iter().find(|v| v.name == "jwks-1").expect("jwks-1");
        let config_map = config_map.config_map.as_ref().expect("a ConfigMap volume");
        assert_eq!(config_map.name, "public-keys");
        assert!(
            !volumes.iter().any(|v| v.name == "jwks-2"),
            "a URL needs no volume"
        );
        let mounts = pod.containers[0].volume_mounts.clone().expect("mounts");
        for (i, name) in ["jwks-0", "jwks-1"].iter().enumerate() {
            let mount = mounts
                .iter()
                .find(|m| &m.name == name)
                .expect("the JWKS mount");
            assert_eq!(mount.mount_path, format!("{JWKS_DIR}/{i}"));
            assert_eq!(mount.read_only, Some(true));
            // A subPath mount would never see a rotated key.
            assert_eq!(mount.sub_path, None);
        }
        let plain = deployment(&gateway(GatewayConfig::default()), "hash", "img");
        let pod = plain.spec.expect("spec").template.spec.expect("pod");
        assert!(
            !pod.volumes
                .expect("volumes")
                .iter()
                .any(|v| v.name.starts_with("jwks"))
        );
    }

    #[test]
    fn the_gateway_accepts_the_rendered_keys() {
        let gw = gateway(spec());
        let config = load_in_container(&gw)
            .unwrap_or_else(|e| panic!("the gateway refuses {}: {e}", gateway_config_json(&gw)));
        let authn = &config.authentication;
        let sources: Vec<(Option<PathBuf>, Option<String>, Duration)> = authn
            .jwks
            .iter()
            .map(|s| (s.file.clone(), s.url.clone(), s.refresh_interval))
            .collect();
        assert_eq!(
            sources,
            [
                (
                    Some(PathBuf::from(format!("{JWKS_DIR}/0/jwks.json"))),
                    None,
                    Duration::from_secs(60)
                ),
                (
                    Some(PathBuf::from(format!("{JWKS_DIR}/1/keys.json"))),
                    None,
                    Duration::from_secs(30)
                ),
                (
                    None,
                    Some("https://idp.example.com/.well-known/jwks.json".to_owned()),
                    Duration::from_secs(300)
                ),
            ]
        );
        assert_eq!(authn.issuers, ["https://idp.example.com/"]);
        assert_eq!(authn.audiences, ["graphfleet"]);
        assert_eq!(authn.algorithms, ["ES256", "RS256"]);
        assert_eq!(authn.leeway, Duration::from_secs(10));
        assert_eq!(authn.header.name, "x-token");
        assert_eq!(authn.header.prefix, "");
        assert_eq!(authn.cookie.as_deref(), Some("session"));
        assert!(authn.require_authentication);
        let authz = &config.authorization;
        assert!(authz.enabled && authz.reject_unauthorized);
        assert_eq!(authz.scope_claim, "scp");
        assert_eq!(
            authz.policies["admin"],
            gateway_config::PolicyRule {
                claim: "roles".to_owned(),
                equals: None,
                contains: Some("admin".to_owned()),
            }
        );
        assert_eq!(
            authz.policies["eu"].equals,
            Some(serde_json::Value::from("eu"))
        );
    }
}
