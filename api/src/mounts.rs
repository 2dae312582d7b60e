//! What a GraphGateway's pods read from Secrets and ConfigMaps: the operator mounts each
//! referenced object as a directory (not subPath, so the kubelet's updates reach running
//! gateways, which re-read JWKS and persisted documents) and writes the files' paths into
//! the gateway's config.

use std::collections::BTreeMap;

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Files for the gateway, each written into `spec.config` at the key its doc names; that
/// key must then not be set in `spec.config` too.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayMounts {
    /// HTTPS on the listener: a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`) →
    /// `tls.cert_file`, `tls.key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_tls: Option<TlsSecretRef>,
    /// TLS towards every `https://` subgraph → `traffic.tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgraph_tls: Option<SubgraphTlsMounts>,
    /// TLS towards single subgraphs, by subgraph name → `subgraphs.<name>.tls` (key by
    /// key over `subgraphTls`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 256))]
    pub subgraphs_tls: BTreeMap<String, SubgraphTlsMounts>,
    /// JSON Web Key Sets → added to `authentication.jwks` as files (after the URLs set
    /// there), re-read as the kubelet updates them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub jwks: Vec<FileRef>,
    /// The persisted document list → `persisted_documents.path` (its `mode` and
    /// `format` stay in `spec.config.persisted_documents`); reloaded when it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisted_documents: Option<FileRef>,
}

/// A `kubernetes.io/tls` Secret in the GraphGateway's namespace: `tls.crt` and `tls.key`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecretRef {
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: String,
}

/// TLS files towards subgraphs.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubgraphTlsMounts {
    /// A PEM bundle of CA certificates trusted besides the system roots → `ca_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<FileRef>,
    /// The client certificate and key for mTLS (a `kubernetes.io/tls` Secret) →
    /// `client_cert_file`, `client_key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<TlsSecretRef>,
}

/// One key of a Secret or of a ConfigMap in the GraphGateway's namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[x_kube(validation = Rule::new("has(self.secret) != has(self.configMap)")
    .message("set exactly one of secret and configMap"))]
#[serde(rename_all = "camelCase")]
pub struct FileRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectKey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ObjectKey>,
}

/// An object's name and one of its keys.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKey {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    #[schemars(pattern(r"^[-._a-zA-Z0-9]+$"), length(min = 1, max = 253))]
    pub key: String,
}
