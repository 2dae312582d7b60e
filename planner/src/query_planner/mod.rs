//! Query planning: the operation is split into subgraph fetches (root fetches and
//! `_entities` fetches), grouped so sibling fields of one subgraph share one fetch,
//! then ordered into Sequence/Parallel/Flatten nodes by their dependencies.
//!
//! Fields are assigned to fetch groups while walking the operation (`fields`): a field
//! stays in the current subgraph when it can, otherwise the planner fetches the
//! entity's key (plus `@requires` fields, `requires`) here and continues in an
//! `_entities` group (`hops`), or re-plans the field inside its parent (`wrap`).
//! `finish` then merges sibling fetches (`merge`), orders the groups (`order`) and
//! prints their subgraph operations (`type_aliases`, `print`).

mod cost;
mod display;
mod error;
mod fields;
mod finish;
mod groups;
mod hops;
mod merge;
mod order;
pub mod plan;
mod print;
mod requires;
mod selection;
mod type_aliases;
mod wrap;

use crate::operation::{ConditionValues, OpIr};
use graphfleet_federation::meta::FederationMeta;

pub use error::PlanError;
pub use plan::{EntityFetch, Fetch, PathElem, PlanNode, QueryPlan, RepSpec};

/// The plan of `ir` for requests whose condition variables take `values` (`None`:
/// fetch what any values could include, the response writer drops the rest).
pub fn build_plan(
    meta: &FederationMeta,
    ir: &OpIr,
    values: Option<ConditionValues>,
) -> Result<QueryPlan, PlanError> {
    let mut planner = groups::Planner::new(meta);
    planner.plan_root(ir, values)?;
    order::check_acyclic(meta, &planner.groups)?;
    Ok(planner.finish(ir))
}
