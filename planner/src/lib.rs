//! The planning half of a request: an operation is parsed, validated against the API
//! schema and lowered into flat vectors (`operation`), then planned into subgraph fetches
//! (`query_planner`). Pure functions of the supergraph and the operation, no I/O.

pub mod keys;
pub mod limits;
pub mod operation;
pub mod query_planner;
pub mod trace;

pub use keys::{KeyId, KeyTable};
pub use limits::OperationLimits;
