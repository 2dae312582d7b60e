//! Query planning: the operation is split into subgraph fetches (root fetches and
//! `_entities` fetches), grouped so sibling fields of one subgraph share one fetch,
//! then ordered into Sequence/Parallel/Flatten nodes by their dependencies.

mod build;
mod display;
pub mod plan;

pub use build::{PlanError, build_plan};
pub use plan::{EntityFetch, Fetch, PathElem, PlanNode, QueryPlan, RepSpec};
