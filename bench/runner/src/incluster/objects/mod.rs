//! The Kubernetes objects of an in-cluster run, as pure functions of what to run: the
//! set's subgraphs (one pod + Service each, subgraph pool) and their `Subgraph` resources,
//! graphfleet's `GraphGateway`, the peers' Deployments and Services (router pool, CPU
//! requests = limits, serving the supergraph the operator composed), and the `LoadTest`
//! with every gateway a target. Nothing here talks to a cluster.
//!
//! One module per job: `parts` (labels, names, shared builders) below `subgraphs`,
//! `peers`, `fleet` and `loadtest`.

mod fleet;
mod loadtest;
mod parts;
mod peers;
mod subgraphs;

pub use fleet::*;
pub use loadtest::*;
pub use parts::*;
pub use peers::*;
pub use subgraphs::*;

#[cfg(test)]
mod tests;
