//! Demand control (`demand_control`): a static cost estimate of every operation from
//! the supergraph's `@cost` and `@listSize`, recorded and optionally enforced.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DemandControlConfig {
    /// Estimate each operation's cost (off by default: nothing is computed).
    pub enabled: bool,
    /// `measure` records the estimate only; `enforce` also rejects operations whose
    /// estimate is over `max_cost` before any subgraph request.
    pub mode: DemandControlMode,
    /// The largest estimate an operation may have; required with `mode: enforce`.
    pub max_cost: Option<u64>,
    /// Items assumed for a list field without `@listSize` (or without an assumed size
    /// and slicing argument).
    pub list_size: u64,
    /// Add the estimate to each response as `extensions.cost.estimated`.
    pub expose_in_extensions: bool,
}

impl Default for DemandControlConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            mode: DemandControlMode::Measure,
            max_cost: None,
            list_size: 10,
            expose_in_extensions: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DemandControlMode {
    Measure,
    Enforce,
}

pub(crate) fn validate(config: &super::Config, report: &mut impl FnMut(&[&str], String)) {
    let dc = &config.demand_control;
    if !dc.enabled {
        return;
    }
    match dc.max_cost {
        None if dc.mode == DemandControlMode::Enforce => report(
            &["demand_control", "max_cost"],
            "is required when demand_control.mode is enforce".to_owned(),
        ),
        Some(0) => report(
            &["demand_control", "max_cost"],
            "must be at least 1 (0 would reject every operation)".to_owned(),
        ),
        _ => {}
    }
}
