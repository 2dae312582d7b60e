//! One fetch: build the request body (representations deduplicated), then merge the
//! subgraph's response into the store and remap its errors to client paths. One module per
//! job; `paths` and `representations` are shared below the request builders and the merge.

mod contextual;
mod merge;
mod paths;
mod representations;
mod request;

pub(super) use contextual::prepare_contextual;
pub(crate) use merge::{Budget, NotMerged, failed_fetch_paths, merge};
pub(super) use request::{PreparedFetch, prepare};
