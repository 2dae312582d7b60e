//! graphfleet gateway: supergraph → API schema; parse/validate → plan → execute → respond.

pub mod config;
pub mod gateway;
pub mod http;
pub mod lifecycle;
pub mod reload;
pub mod runtime;
pub mod telemetry;

/// Execution and the response: their own crate, re-exported under their stage names.
pub use graphfleet_executor::{self as executor, response};
/// The supergraph model lives in its own crate (shared with tooling); re-exported so
/// `graphfleet_gateway::supergraph` keeps naming it.
pub use graphfleet_federation as supergraph;
/// Operations and plans: their own crate, re-exported under their stage names.
pub use graphfleet_planner::{operation, otel_span, query_planner};

/// Plan `query` and render the plan as text (the `plan` CLI command).
pub fn plan_text(
    supergraph: &supergraph::Supergraph,
    query: &str,
    operation_name: Option<&str>,
) -> anyhow::Result<String> {
    let prepared =
        operation::prepare(&supergraph.api_schema, query, operation_name).map_err(|e| {
            anyhow::anyhow!(
                "{}",
                e.0.iter()
                    .map(|e| e.message.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })?;
    let plan = query_planner::build_plan(&supergraph.meta, &prepared.ir, None)?;
    Ok(plan.to_string())
}
