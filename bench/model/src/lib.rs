//! The benchmark vocabulary shared by the operator, graphfleet-bench and the benchmark
//! subgraphs (graphfleet-bench-subgraphs): the sets' files, the scenarios, the duration grammar, the
//! mergeable latency histogram, the report pieces (tables, SVG charts) and the k6 scripts.
//! Data and pure functions only, so depending on it pulls in no server.

pub mod charts;
pub mod duration;
pub mod hostile;
pub mod latency_histogram;
pub mod report;
pub mod scenarios;
pub mod sets;

pub use sets::Set;

/// The k6 script every scenario runs (`bench/k6/scenario.js`), for the operator to ship in
/// LoadTest ConfigMaps without reading this crate's files by path.
pub const K6_SCENARIO_JS: &str = include_str!("../../k6/scenario.js");

/// The k6 script of the `subscriptions` scenario (`bench/k6/subscriptions.js`): its
/// rate is the number of graphql-transport-ws subscribers (k6/websockets).
pub const K6_SUBSCRIPTIONS_JS: &str = include_str!("../../k6/subscriptions.js");

/// The k6 script a built-in scenario runs.
pub fn k6_script(scenario: &str) -> &'static str {
    if scenario == scenarios::SUBSCRIPTIONS {
        K6_SUBSCRIPTIONS_JS
    } else {
        K6_SCENARIO_JS
    }
}
