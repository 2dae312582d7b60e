use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ConfigMapKeyRef;

/// A federated subgraph: where it is served and where its schema comes from.
///
/// The schema comes from exactly one source: inline `sdl`, a `configMapRef`, or (when neither
/// is given) introspection of the running subgraph's `_service { sdl }`.
// Each `printcolumn(...)` repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "graphfleet.dev",
    version = "v1alpha1",
    kind = "Subgraph",
    namespaced,
    status = "SubgraphStatus",
    shortname = "sg",
    category = "graphfleet",
    printcolumn(name = "URL", type_ = "string", json_path = ".spec.url"),
    printcolumn(
        name = "Loaded",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"SchemaLoaded\")].status"
    ),
    printcolumn(name = "Schema", type_ = "string", json_path = ".status.schemaHash"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(validation = Rule::new("!(has(self.sdl) && has(self.configMapRef))")
    .message("set at most one schema source: sdl or configMapRef (neither means introspection)"))]
#[serde(rename_all = "camelCase")]
pub struct SubgraphSpec {
    /// GraphQL endpoint of the subgraph (the gateway's routing URL).
    #[x_kube(validation = Rule::new("self.matches('^https?://[^/?#\\\\s]+')")
        .message("url must be an absolute http:// or https:// URL"))]
    #[schemars(length(min = 8, max = 2048))]
    pub url: String,
    /// Inline Federation v2 SDL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub sdl: Option<String>,
    /// SDL stored under a key of a ConfigMap in this namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<ConfigMapKeyRef>,
    /// Timeout of one `_service { sdl }` introspection request, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000))]
    pub introspection_timeout_ms: Option<u32>,
}

/// Observed state of a Subgraph.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubgraphStatus {
    /// Generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Short SHA-256 of the loaded SDL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_hash: Option<String>,
    /// `SchemaLoaded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
