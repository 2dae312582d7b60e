//! Why an operation has no plan.

/// An operation that cannot be planned against the supergraph.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no subgraph resolves {ty}.{field}")]
    NoResolver { ty: String, field: String },
    #[error(
        "cannot reach {ty}.{field}: no subgraph resolving it has a key that subgraph {from} can provide"
    )]
    NoKey {
        ty: String,
        field: String,
        from: String,
    },
    #[error("unknown field {ty}.{field} in the supergraph")]
    UnknownField { ty: String, field: String },
    #[error("the fetches to subgraph {subgraph} depend on each other in a cycle")]
    Cycle { subgraph: String },
}
