//! Benchmark subgraphs, monolith oracles and the load-test runner.
//!
//! [`spawn`] starts a set's subgraphs (each at `/<subgraph>`) or its monolith (at
//! `/graphql`) on a listener, with request counters at `/stats`.

pub mod engine;
mod server;
pub mod sets;

pub use server::{Handle, Mode, Options, ServeError, serve, spawn};
pub use sets::Set;
