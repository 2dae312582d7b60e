//! `spec.mounts`: each referenced Secret or ConfigMap becomes one volume mounted as a
//! directory (the kubelet then updates the files in running pods), and each referenced
//! key a file path written into the gateway config.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, SecretVolumeSource, Volume, VolumeMount};

use super::short_hash;
use graphfleet_api::{FileRef, GraphGateway, SubgraphTlsMounts, TlsSecretRef};

/// Where the referenced objects are mounted: `<MOUNTS_DIR>/<secret|configmap>/<name>/`.
pub const MOUNTS_DIR: &str = "/etc/graphfleet-mounts";

/// What a gateway config key gets from a mounted file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The setting at this key path is the file's path.
    Set(Vec<String>),
    /// A `{file: <path>}` source is added to `authentication.jwks`.
    Jwks,
}

/// The volumes and mounts of a gateway's `spec.mounts`, and the file paths for its config.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mounted {
    pub volumes: Vec<Volume>,
    pub mounts: Vec<VolumeMount>,
    /// Each file's config target and its path in the pods, in `spec.mounts` order.
    pub files: Vec<(Target, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Secret,
    ConfigMap,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Secret => "secret",
            Kind::ConfigMap => "configmap",
        }
    }
}

/// The mounts of `gw` (empty without `spec.mounts`).
pub fn mounted(gw: &GraphGateway) -> Mounted {
    let Some(spec) = &gw.spec.mounts else {
        return Mounted::default();
    };
    let mut files: Vec<(Target, Kind, &str, &str)> = Vec::new();
    let set = |path: &[&str]| Target::Set(path.iter().map(|s| (*s).to_owned()).collect());
    if let Some(tls) = &spec.listener_tls {
        tls_pair(
            &mut files,
            tls,
            set(&["tls", "cert_file"]),
            set(&["tls", "key_file"]),
        );
    }
    if let Some(tls) = &spec.subgraph_tls {
        subgraph_tls(&mut files, tls, &["traffic", "tls"]);
    }
    for (name, tls) in &spec.subgraphs_tls {
        subgraph_tls(&mut files, tls, &["subgraphs", name, "tls"]);
    }
    for source in &spec.jwks {
        file(&mut files, source, Target::Jwks);
    }
    if let Some(docs) = &spec.persisted_documents {
        file(&mut files, docs, set(&["persisted_documents", "path"]));
    }
    let mut objects: BTreeMap<(Kind, &str), ()> = BTreeMap::new();
    let mut out = Mounted::default();
    for (target, kind, name, key) in files {
        objects.insert((kind, name), ());
        out.files
            .push((target, format!("{}/{key}", dir(kind, name))));
    }
    for (kind, name) in objects.into_keys() {
        let volume = volume_name(kind, name);
        out.mounts.push(VolumeMount {
            name: volume.clone(),
            mount_path: dir(kind, name),
            read_only: Some(true),
            ..VolumeMount::default()
        });
        out.volumes.push(match kind {
            Kind::Secret => Volume {
                name: volume,
                secret: Some(SecretVolumeSource {
                    secret_name: Some(name.to_owned()),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            },
            Kind::ConfigMap => Volume {
                name: volume,
                config_map: Some(ConfigMapVolumeSource {
                    name: name.to_owned(),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
        });
    }
    out
}

type Files<'a> = Vec<(Target, Kind, &'a str, &'a str)>;

fn tls_pair<'a>(files: &mut Files<'a>, tls: &'a TlsSecretRef, cert: Target, key: Target) {
    files.push((cert, Kind::Secret, &tls.secret_name, "tls.crt"));
    files.push((key, Kind::Secret, &tls.secret_name, "tls.key"));
}

fn subgraph_tls<'a>(files: &mut Files<'a>, tls: &'a SubgraphTlsMounts, at: &[&str]) {
    let key = |last: &str| {
        let path = at.iter().copied().chain([last]).map(str::to_owned);
        Target::Set(path.collect())
    };
    if let Some(ca) = &tls.ca {
        file(files, ca, key("ca_file"));
    }
    if let Some(client) = &tls.client_certificate {
        tls_pair(
            files,
            client,
            key("client_cert_file"),
            key("client_key_file"),
        );
    }
}

fn file<'a>(files: &mut Files<'a>, source: &'a FileRef, target: Target) {
    // The CRD admits exactly one of the two.
    if let Some(secret) = &source.secret {
        files.push((target, Kind::Secret, &secret.name, &secret.key));
    } else if let Some(config_map) = &source.config_map {
        files.push((target, Kind::ConfigMap, &config_map.name, &config_map.key));
    }
}

fn dir(kind: Kind, name: &str) -> String {
    format!("{MOUNTS_DIR}/{}/{name}", kind.dir())
}

/// A DNS label whatever the object's name (which may be longer or hold dots).
fn volume_name(kind: Kind, name: &str) -> String {
    format!("{}-{}", kind.dir(), &short_hash(name.as_bytes())[..12])
}
