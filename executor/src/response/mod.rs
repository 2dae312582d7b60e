//! The response store (flat object arena filled straight from subgraph bytes) and the
//! final writer (one pass over the precomputed shapes, null propagation, errors).

pub mod buffers;
pub mod parse;
pub mod store;
pub mod writer;

pub use graphfleet_planner::keys::{self, KeyId, KeyTable};
pub use store::{Store, Value};
