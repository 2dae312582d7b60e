//! The Kubernetes objects of an in-cluster run, as pure functions of what to run: the
//! set's subgraphs (one pod + Service each, subgraph pool), the supergraph ConfigMap, the
//! gateway pod (router pool, CPU requests = limits) and Service, and the k6 Job (client
//! pool) with its payload ConfigMap. Nothing here talks to a cluster.
//!
//! One module per job: `parts` (labels, names, shared builders) below `subgraphs`,
//! `gateway` and `k6`.

mod gateway;
mod k6;
mod parts;
mod subgraphs;

pub use gateway::*;
pub use k6::*;
pub use parts::*;
pub use subgraphs::*;

#[cfg(test)]
mod tests;
