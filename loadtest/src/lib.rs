//! Benchmark subgraphs, monolith oracles and the load-test runner.
