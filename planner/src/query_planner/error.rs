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
    #[error("the operation selects more than {max} distinct fields once its fragments are merged")]
    TooManyFields { max: u32 },
    #[error("planning the operation took longer than the request may take")]
    Timeout,
}

impl PlanError {
    /// The `extensions.code` of the request error, for the errors a client causes.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            PlanError::TooManyFields { .. } => Some("MAX_HEIGHT_EXCEEDED"),
            PlanError::Timeout => Some("PLANNING_TIMEOUT"),
            _ => None,
        }
    }
}
