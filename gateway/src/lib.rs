//! graphfleet gateway: supergraph → API schema; parse/validate → plan → execute → respond.

pub mod config;
pub mod executor;
pub mod gateway;
pub mod http;
pub mod lifecycle;
pub mod operation;
pub mod query_planner;
pub mod reload;
pub mod response;
pub mod runtime;
pub mod supergraph;
pub mod telemetry;

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
