//! graphfleet operator: Subgraph, GraphGateway and LoadTest resources → a rolled-out gateway fleet.
//!
//! Kubernetes I/O happens only in `controller` (one reconciler per file), `subgraph_sdl`
//! (ConfigMaps, introspection), `lease` (leader election) and `web` (the read-only web
//! view's reads; its pages are pure). What to write is computed by
//! pure, unit-tested modules: `resources` (desired objects), `status` (conditions and
//! phases), `diagnose` (why pods fail), `k6_summary` (load-test results), `thresholds`
//! (their pass/fail), `report` (a finished load test's report) and `canary` and
//! `canary_gate` (a canary step's judgement from metrics and from its LoadTest). Dependencies
//! point one way: `controller` uses the pure modules, never the reverse.

pub mod admin_server;
pub mod canary;
pub mod canary_gate;
pub mod controller;
pub mod diagnose;
pub mod gateway_probe;
pub mod http_server;
pub mod k6_summary;
pub mod lease;
pub mod metrics;
pub mod operations_check;
pub mod report;
pub mod resources;
pub mod schema_checks;
pub mod status;
pub mod subgraph_sdl;
pub mod thresholds;
pub mod web;
