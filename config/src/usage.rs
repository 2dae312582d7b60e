//! The operations a gateway records as it serves them, and the admin listener that hands
//! them (and its readiness) to the operator, which checks every new supergraph against
//! them before a pod changes.

use super::size;
use schemars::JsonSchema;
use serde::Deserialize;
use std::net::SocketAddr;

/// Recording of served operations (document, name, client, counts), bounded in memory.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct UsageConfig {
    /// Record the operations this gateway serves (shown on the admin listener).
    pub record: bool,
    /// Memory for recorded operations, documents included (`4MiB`); the least used are
    /// dropped first when it is full.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_bytes: usize,
    /// Longest document recorded; longer ones are counted as skipped.
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_document_bytes: usize,
    /// Distinct clients (name and version headers) kept per operation.
    #[schemars(range(min = 1, max = 64))]
    pub max_clients_per_operation: usize,
    /// Operations to plan at start, before the listener opens (a `/usage/operations`
    /// report, e.g. another pod's), so the first requests find their plans cached.
    pub warm_up_file: Option<std::path::PathBuf>,
    /// Longest the start-up planning of `warm_up_file` may take; what is left is
    /// planned on first use.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub warm_up_timeout: std::time::Duration,
}

impl Default for UsageConfig {
    fn default() -> Self {
        Self {
            record: true,
            max_bytes: 4 << 20,
            max_document_bytes: 64 << 10,
            max_clients_per_operation: 8,
            warm_up_file: None,
            warm_up_timeout: std::time::Duration::from_secs(10),
        }
    }
}

/// A second listener for the operator and probes only: readiness with the served
/// supergraph's hash, and the recorded operations. Not on the GraphQL port, so clients
/// never see what other clients send.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Address of the admin listener (health, readiness, metrics, recorded operations);
    /// when set, health and metrics leave the GraphQL listener. None when unset.
    pub listen: Option<SocketAddr>,
}
