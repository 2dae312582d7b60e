//! Stage 5, demand control: the operation's cost estimate (compiled once per cached
//! operation, see `operation::demand`), recorded per operation name and, in enforce
//! mode, checked against `demand_control.max_cost` before any subgraph request.

use super::error::RequestError;
use super::operation::CachedOperation;
use super::plan_cache::State;
use crate::operation::demand::{CostPlan, INVALID_LIST_SIZE, TOO_EXPENSIVE};
use crate::operation::{ConditionValues, RequestErrors, limits};
use crate::telemetry::metrics::OperationMetrics;
use apollo_compiler::response::JsonMap;
use graphfleet_config::{DemandControlConfig, DemandControlMode};

/// The request's estimate (`None` when demand control is off), or the error rejecting
/// it: over `max_cost`, or a broken `@listSize` rule, both only in enforce mode.
pub fn check(
    config: &DemandControlConfig,
    state: &State,
    cached: &CachedOperation,
    variables: &JsonMap,
    values: ConditionValues,
    metrics: Option<&OperationMetrics>,
) -> Result<Option<f64>, RequestError> {
    if !config.enabled {
        return Ok(None);
    }
    let supergraph = &state.supergraph;
    let plan = cached
        .demand
        .get_or_init(|| CostPlan::compile(supergraph, &cached.prepared.ir, config.list_size));
    let enforce = config.mode == DemandControlMode::Enforce;
    let estimate = match plan.fixed() {
        Some(cost) => cost,
        None => match plan.estimate(supergraph, variables, values) {
            Ok(cost) => cost,
            Err(e) if enforce => {
                return Err(RequestError::coded(INVALID_LIST_SIZE, e.0));
            }
            Err(e) => {
                tracing::debug!(error = %e, "demand control cannot estimate this request");
                return Ok(None);
            }
        },
    };
    if let Some(metrics) = metrics {
        metrics.record_cost(estimate);
    }
    match config.max_cost {
        Some(max) if enforce && estimate > max as f64 => Err(too_expensive(estimate, max)),
        _ => Ok(Some(estimate)),
    }
}

fn too_expensive(estimate: f64, max: u64) -> RequestError {
    let mut error = limits::error(
        TOO_EXPENSIVE,
        format!("the operation's estimated cost {estimate} is over the maximum of {max}"),
    );
    error.extensions.insert("cost.estimated", estimate.into());
    error.extensions.insert("cost.max", max.into());
    RequestErrors(vec![error]).into()
}

/// `body` (a response object) with `"extensions":{"cost":{"estimated":N}}` added.
pub fn expose(mut body: Vec<u8>, estimate: f64) -> Vec<u8> {
    if body.last() != Some(&b'}') {
        return body;
    }
    body.pop();
    let sep = if body.len() > 1 { "," } else { "" };
    body.extend_from_slice(
        format!("{sep}\"extensions\":{{\"cost\":{{\"estimated\":{estimate}}}}}}}").as_bytes(),
    );
    body
}

#[cfg(test)]
mod tests {
    use super::expose;

    #[test]
    fn exposing_the_estimate_keeps_the_body_json() {
        let body = expose(br#"{"data":{"a":1}}"#.to_vec(), 12.0);
        let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(json["extensions"]["cost"]["estimated"], 12.0);
        assert_eq!(json["data"]["a"], 1);
    }
}
