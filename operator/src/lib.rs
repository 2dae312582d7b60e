//! graphfleet operator: Subgraph, GraphGateway and LoadTest resources → a rolled-out gateway fleet.
//!
//! Kubernetes I/O happens only in `controller` (and `schema` for ConfigMaps/introspection,
//! `lease` for leader election); `build` and `status` are pure and unit-tested.

pub mod build;
pub mod controller;
pub mod crd;
pub mod diagnose;
pub mod lease;
pub mod loadtest;
pub mod metrics;
pub mod ops;
pub mod schema;
pub mod status;
