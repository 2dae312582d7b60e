//! Benchmark subgraphs and monolith oracles (the sets' files, scenarios and k6 scripts are
//! graphfleet-bench-model's).
//!
//! [`spawn`] starts a set's subgraphs (each at `/<subgraph>`) or its monolith (at
//! `/graphql`) on a listener, with request counters at `GET /stats` (reset with
//! `POST /stats/reset`). A gateway test typically does:
//!
//! ```text
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let subgraphs = spawn(Set::Fed, Mode::Subgraphs, listener, Options::default())?;
//! let supergraph = Set::Fed.supergraph_at(&subgraphs.base_url());
//! // ... start the gateway on `supergraph`, then for each (name, query) in
//! // Set::Fed.scenarios(), compare its response bytes with the monolith's
//! // (spawn(Set::Fed, Mode::Monolith, ..) at /graphql) ...
//! subgraphs.shutdown().await;
//! ```
//!
//! [`engine::Endpoint::handle`] runs one request body in-process, without HTTP
//! ([`sets::subgraph_endpoints`], [`sets::monolith_endpoint`]).

pub mod engine;
mod server;
pub mod sets;

pub use server::{
    DEFAULT_EVENT_INTERVAL, Handle, Mode, Options, ServeError, StreamOptions, serve, spawn,
    spawn_with,
};
