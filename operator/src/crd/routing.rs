//! How the gateway's requests reach subgraphs: header rules and progressive override.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// A header rule for subgraph requests: exactly one of `propagate`, `insert` and
/// `remove`. Rules run in order.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "[has(self.propagate), has(self.insert), has(self.remove)].filter(x, x).size() == 1"
).message("set exactly one of propagate, insert and remove"))]
#[serde(rename_all = "camelCase")]
pub struct HeaderRuleSpec {
    /// Copy client headers (every value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate: Option<PropagateHeaderSpec>,
    /// Set a header, replacing what earlier rules set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert: Option<InsertHeaderSpec>,
    /// Drop headers earlier rules set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<RemoveHeaderSpec>,
}

/// The header rules of one subgraph.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubgraphHeaderRulesSpec {
    /// The subgraph's name, as in its Subgraph resource and the supergraph.
    #[schemars(length(min = 1, max = 253))]
    pub subgraph: String,
    /// Its rules, in order.
    #[schemars(length(max = 64))]
    pub rules: Vec<HeaderRuleSpec>,
}

/// Client headers to copy: one by name (optionally renamed, with a default), or every
/// header whose lower-case name a regular expression matches.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(
    validation = Rule::new("has(self.named) != has(self.matching)")
        .message("set exactly one of named and matching"),
    validation = Rule::new("has(self.named) || !(has(self.rename) || has(self.default))")
        .message("rename and default need named")
)]
#[serde(rename_all = "camelCase")]
pub struct PropagateHeaderSpec {
    /// The client header to copy (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub named: Option<String>,
    /// A regular expression over lower-case header names (`^x-flag-`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<String>,
    /// Send it under this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub rename: Option<String>,
    /// Send this value when the client sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A header to set: a fixed value, or a claim of the request's validated JWT (a name,
/// or a JSON pointer like `/realm_access/roles`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.value) != has(self.fromClaim)")
    .message("set exactly one of value and fromClaim"))]
#[serde(rename_all = "camelCase")]
pub struct InsertHeaderSpec {
    /// The header to set.
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub name: String,
    /// A fixed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// A claim of the validated JWT: its name (`sub`) or a JSON pointer; without a
    /// token or that claim the header is not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub from_claim: Option<String>,
}

/// Headers to drop: one by name, or every one a regular expression matches.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.named) != has(self.matching)")
    .message("set exactly one of named and matching"))]
#[serde(rename_all = "camelCase")]
pub struct RemoveHeaderSpec {
    /// The header to drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub named: Option<String>,
    /// A regular expression over lower-case header names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<String>,
}

/// `@override(label:)` labels fixed on or off. Other labels are off, except
/// `percent(N)` ones, which are on for N % of requests.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProgressiveOverrideSpec {
    /// Labels on for every request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled_labels: Vec<String>,
    /// Labels off for every request, `percent(N)` ones included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_labels: Vec<String>,
}
