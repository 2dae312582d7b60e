//! graphfleet operator: Subgraph, GraphGateway and LoadTest resources → a rolled-out gateway fleet.

pub mod build;
pub mod crd;
