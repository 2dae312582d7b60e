//! Query planning: the operation is split into subgraph fetches (root fetches and
//! `_entities` fetches), grouped so sibling fields of one subgraph share one fetch,
//! then ordered into Sequence/Parallel/Flatten nodes by their dependencies.
//!
//! Fields are assigned to fetch groups while walking the operation (`fields`): a field
//! stays in the current subgraph when it can, otherwise the planner fetches the
//! entity's key (plus `@requires` fields, `requires`) here and continues in an
//! `_entities` group (`hops`), or re-plans the field inside its parent (`wrap`).
//! `finish` then merges sibling fetches (`merge`), prints the groups' subgraph
//! operations (`type_aliases`, `print`), batches entity fetches of one subgraph into
//! one request (`batch`) and orders the fetches (`order`).

mod batch;
mod context;
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

/// How much planning one operation may take. The planner's work grows with the
/// operation's merged size (its height), so bounding the height bounds the work; the
/// deadline is the backstop for anything else that is slow.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanBudget {
    /// Most distinct fields once fragments are merged (`None`: unlimited).
    pub max_height: Option<u32>,
    /// When to give up ([`PlanError::Timeout`]).
    pub deadline: Option<std::time::Instant>,
}

impl PlanBudget {
    /// An error once `height` fields exceed the budget or the deadline has passed.
    pub(crate) fn check(&self, height: u32) -> Result<(), PlanError> {
        if let Some(max) = self.max_height
            && height > max
        {
            return Err(PlanError::TooManyFields { max });
        }
        self.check_deadline()
    }

    pub(crate) fn check_deadline(&self) -> Result<(), PlanError> {
        match self.deadline {
            Some(deadline) if std::time::Instant::now() >= deadline => Err(PlanError::Timeout),
            _ => Ok(()),
        }
    }
}
pub use plan::{
    CONTEXT_BATCH, ContextBatch, ContextSource, ContextVariable, EntityFetch, EntityPart, Fetch,
    PathElem, PlanNode, QueryPlan, RepSpec, context_alias,
};

/// The plan of `ir` for requests whose condition variables take `values` (`None`:
/// fetch what any values could include, the response writer drops the rest).
pub fn build_plan(
    meta: &FederationMeta,
    ir: &OpIr,
    values: Option<ConditionValues>,
) -> Result<QueryPlan, PlanError> {
    build_plan_within(meta, ir, values, &PlanBudget::default())
}

/// [`build_plan`] giving up with an error once `budget` is spent.
pub fn build_plan_within(
    meta: &FederationMeta,
    ir: &OpIr,
    values: Option<ConditionValues>,
    budget: &PlanBudget,
) -> Result<QueryPlan, PlanError> {
    let mut planner = groups::Planner::new(meta, budget);
    planner.plan_root(ir, values)?;
    order::check_acyclic(meta, &planner.groups)?;
    Ok(planner.finish(ir))
}
