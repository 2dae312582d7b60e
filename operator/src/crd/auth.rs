//! The GraphGateway's authentication (JWT validation against JWKS) and authorization
//! (`@authenticated`, `@requiresScopes`, `@policy` enforcement) settings.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMapKeySelector, SecretKeySelector};
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// JWT validation; off unless `jwks` names a key set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationSpec {
    /// Where the verification keys come from; Secrets and ConfigMaps are mounted into
    /// the pods (and re-read as the kubelet updates them), URLs are fetched.
    #[schemars(length(min = 1, max = 16))]
    pub jwks: Vec<JwksSpec>,
    /// Accepted `iss` values; empty accepts any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issuers: Vec<String>,
    /// Accepted `aud` values; empty skips the check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audiences: Vec<String>,
    /// Accepted signing algorithms; default RS256-512, PS256-512, ES256, ES384.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(
        pattern = r"^(RS256|RS384|RS512|PS256|PS384|PS512|ES256|ES384|EdDSA)$"
    )))]
    pub algorithms: Vec<String>,
    /// Clock leeway for `exp` and `nbf`, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leeway_seconds: Option<u32>,
    /// The header carrying the token; default `Authorization` with prefix `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_name: Option<String>,
    /// What precedes the token in the header (empty: the whole value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_prefix: Option<String>,
    /// A cookie carrying the token when the header is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub cookie: Option<String>,
    /// Refuse requests without a token (401) instead of running them unauthenticated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_authentication: Option<bool>,
}

/// One JSON Web Key Set: exactly one of `secret`, `configMap` and `url`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "[has(self.secret), has(self.configMap), has(self.url)].filter(x, x).size() == 1"
).message("set exactly one of secret, configMap and url"))]
#[serde(rename_all = "camelCase")]
pub struct JwksSpec {
    /// A key of a Secret in the GraphGateway's namespace holding the JWKS JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretKeySelector>,
    /// A key of a ConfigMap in the GraphGateway's namespace holding the JWKS JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapKeySelector>,
    /// An `http://` or `https://` URL serving the JWKS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^https?://[^/?#\s]+"))]
    pub url: Option<String>,
    /// How often the keys are read again, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub refresh_interval_seconds: Option<u32>,
}

/// Enforcement of the supergraph's authorization directives.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationSpec {
    /// Enforce `@authenticated`, `@requiresScopes` and `@policy` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Refuse a request selecting any unauthorized field, instead of answering those
    /// fields with null and an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_unauthorized: Option<bool>,
    /// The claim holding the scopes (default `scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub scope_claim: Option<String>,
    /// `@policy` names and the claim rule granting each; a policy not listed is never
    /// granted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub policies: BTreeMap<String, PolicyRuleSpec>,
}

/// A policy granted when claim `claim` (a dot-separated path) equals `equals`, or is an
/// array or space-separated string containing `contains`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.equals) != has(self.contains)")
    .message("set exactly one of equals and contains"))]
#[serde(rename_all = "camelCase")]
pub struct PolicyRuleSpec {
    #[schemars(length(min = 1))]
    pub claim: String,
    /// The claim's value, as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
}
