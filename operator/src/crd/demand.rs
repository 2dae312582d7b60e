//! Demand control: the gateway's static cost estimate of operations.

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Demand control: each operation's static cost estimate from the supergraph's `@cost`
/// and `@listSize`, exported as a metric and optionally enforced.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "!(has(self.enabled) && self.enabled && has(self.mode) && self.mode == 'enforce') || has(self.maxCost)"
).message("demandControl.maxCost is required when mode is enforce"))]
#[serde(rename_all = "camelCase")]
pub struct DemandControlSpec {
    /// Estimate each operation's cost; default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// measure (record only; the default) or enforce (also reject operations estimated
    /// over maxCost with COST_ESTIMATED_TOO_EXPENSIVE, before any subgraph request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<DemandControlMode>,
    /// The largest estimate an operation may have; required in enforce mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_cost: Option<u64>,
    /// Items assumed for a list field without `@listSize`; default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub list_size: Option<u64>,
    /// Add the estimate to responses as `extensions.cost.estimated`; default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose_in_extensions: Option<bool>,
}

/// What demand control does with an estimate.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DemandControlMode {
    Measure,
    Enforce,
}
