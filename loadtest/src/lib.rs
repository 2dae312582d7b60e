//! Benchmark subgraphs, monolith oracles and the load-test runner.
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
//! [`engine::Endpoint::handle`] runs one request body in-process, without HTTP.

pub mod duration;
pub mod engine;
pub mod latency_histogram;
pub mod report;
pub mod scenarios;
mod server;
pub mod sets;

pub use server::{
    DEFAULT_EVENT_INTERVAL, Handle, Mode, Options, ServeError, StreamOptions, serve, spawn,
    spawn_with,
};
pub use sets::Set;

/// The k6 script every scenario runs (`loadtest/k6/scenario.js`), for the operator to ship in
/// LoadTest ConfigMaps without reading this crate's files by path.
pub const K6_SCENARIO_JS: &str = include_str!("../k6/scenario.js");

/// The k6 script of the `subscriptions` scenario (`loadtest/k6/subscriptions.js`): its
/// rate is the number of graphql-transport-ws subscribers (k6/websockets).
pub const K6_SUBSCRIPTIONS_JS: &str = include_str!("../k6/subscriptions.js");

/// The k6 script a built-in scenario runs.
pub fn k6_script(scenario: &str) -> &'static str {
    if scenario == scenarios::SUBSCRIPTIONS {
        K6_SUBSCRIPTIONS_JS
    } else {
        K6_SCENARIO_JS
    }
}
