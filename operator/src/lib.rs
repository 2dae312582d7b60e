//! graphfleet operator: Subgraph, GraphGateway and LoadTest resources → a rolled-out gateway fleet.

pub mod crd;
