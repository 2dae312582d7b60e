//! The API-schema diff: what changed between two GraphQL schemas, each change classified
//! as breaking, dangerous or safe for existing clients and named by its schema coordinate.
//!
//! Made for the operator to run before a rollout and for `graphfleet diff` in a subgraph
//! team's CI.
//! A supergraph is compared by its API schema, what clients can see.

mod change;
mod compare;
mod input;

pub use change::{Change, ChangeKind, Severity, max_severity, render};
pub use compare::diff;
pub use input::{DiffError, api_schema};

/// Diffs two SDL texts (schemas or supergraphs); errors call them `old schema` and
/// `new schema`.
pub fn diff_sdl(old: &str, new: &str) -> Result<Vec<Change>, DiffError> {
    Ok(diff(
        &api_schema(old, "old schema")?,
        &api_schema(new, "new schema")?,
    ))
}
