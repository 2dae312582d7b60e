//! graphfleet gateway: supergraph → API schema; parse/validate → plan → execute → respond.

pub mod auth;
pub mod config;
pub mod coprocessor;
pub mod gateway;
pub mod http;
pub mod lifecycle;
pub mod memory;
pub mod persisted;
pub mod pipeline;
pub mod rate_limit;
pub mod reload;
pub mod runtime;
pub mod subscription;
pub mod telemetry;
pub mod usage;

/// Execution and the response: their own crate, re-exported under their stage names.
pub use graphfleet_executor::{self as executor, response};
/// The supergraph model lives in its own crate (shared with tooling); re-exported so
/// `graphfleet_gateway::supergraph` keeps naming it.
pub use graphfleet_federation as supergraph;
/// Operations and plans: their own crate, re-exported under their stage names.
pub use graphfleet_planner::{operation, otel_span, query_planner};

/// Plan `query` with no limits and render the plan as text (tests and tooling).
pub fn plan_text(
    supergraph: &supergraph::Supergraph,
    query: &str,
    operation_name: Option<&str>,
) -> anyhow::Result<String> {
    plan_text_with_limits(
        supergraph,
        query,
        operation_name,
        &config::LimitsConfig::unlimited(),
    )
}

/// Plan `query` under `limits`, as the server would, and render the plan as text (the
/// `plan` CLI command).
pub fn plan_text_with_limits(
    supergraph: &supergraph::Supergraph,
    query: &str,
    operation_name: Option<&str>,
    limits: &config::LimitsConfig,
) -> anyhow::Result<String> {
    let operation_limits = config::operation_limits(limits);
    let messages = |e: operation::RequestErrors| {
        anyhow::anyhow!(
            "{}",
            e.0.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    let prepared = operation::prepare_with_limits(
        &supergraph.api_schema,
        query,
        operation_name,
        &operation_limits,
    )
    .map_err(messages)?;
    let budget = query_planner::PlanBudget {
        max_height: operation_limits.max_height,
        deadline: None,
    };
    let plan = query_planner::build_plan_within(&supergraph.meta, &prepared.ir, None, &budget)?;
    Ok(plan.to_string())
}
