//! The gateway's admin listener on the wire: what it answers and what the operator
//! reads. Types only (serde, no I/O), so the gateway writes and the operator reads the
//! same shapes.
//!
//! - `GET /health/ready` → [`Readiness`]: 200 when serving, 503 otherwise, with the
//!   SHA-256 of the supergraph it serves (the operator counts "N/N pods serve <hash>"
//!   from it, not from what the pod template asked for).
//! - `GET /usage/operations` → [`UsageReport`]: the operations served since start.
//! - `GET /metrics`: the Prometheus text, as on the GraphQL port's metrics path.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Readiness, on the admin listener and the GraphQL listener alike.
pub const READY_PATH: &str = "/health/ready";
/// Liveness.
pub const LIVE_PATH: &str = "/health/live";
/// The recorded operations.
pub const USAGE_PATH: &str = "/usage/operations";
/// Prometheus metrics (the canary analysis reads them).
pub const METRICS_PATH: &str = "/metrics";
/// The admin port the operator gives its gateway pods.
pub const DEFAULT_ADMIN_PORT: u16 = 9180;

/// What `/health/ready` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// `UP` or `DOWN`.
    pub status: String,
    /// Why: `ready`, `draining`, `no_supergraph`, ...
    pub reason: String,
    /// The first 12 hex digits of the served supergraph's SHA-256 (`none` before one).
    pub supergraph: String,
    /// The whole SHA-256 of the served supergraph text, hex; absent before one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph_sha256: Option<String>,
    pub failed_reloads: u64,
    pub reload_error: Option<String>,
}

impl Readiness {
    /// Whether it serves the revision named by `hash` (a prefix of the SHA-256, as the
    /// operator names revisions).
    pub fn serves(&self, hash: &str) -> bool {
        !hash.is_empty()
            && self
                .supergraph_sha256
                .as_deref()
                .is_some_and(|full| full.starts_with(hash))
    }
}

/// The operations one gateway has served since it started (or since recording began).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReport {
    /// SHA-256 of the supergraph it serves now (hex), if any.
    pub supergraph_sha256: Option<String>,
    /// The gateway's clock when it answered, Unix seconds: the report's times are read
    /// against it, so the reader's clock skew does not matter.
    pub now: u64,
    /// When recording began, Unix seconds.
    pub since: u64,
    /// Requests of recorded operations, including those since dropped for room.
    pub requests: u64,
    /// Requests whose document was too long to record.
    pub skipped: u64,
    /// Operations dropped when the recorder was full.
    pub dropped: u64,
    pub operations: Vec<OperationUsage>,
}

/// One operation (document and operation name) and how it was used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationUsage {
    /// SHA-256 (hex) of the operation name, a NUL, and the document.
    pub id: String,
    pub name: Option<String>,
    pub document: String,
    pub count: u64,
    /// Unix seconds.
    pub first_seen: u64,
    /// Unix seconds.
    pub last_seen: u64,
    /// By client (the `graphql-client-name`/`-version` or
    /// `apollographql-client-name`/`-version` headers); requests without one are not
    /// listed.
    #[serde(default)]
    pub clients: Vec<ClientUsage>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClientUsage {
    pub name: String,
    pub version: Option<String>,
    pub count: u64,
}

/// Operations merged across gateway pods, times made relative (seconds ago) so pods'
/// clocks need not agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetUsage {
    /// Requests of all recorded operations, over all reports.
    pub requests: u64,
    /// By operation id.
    pub operations: BTreeMap<String, FleetOperation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetOperation {
    pub name: Option<String>,
    pub document: String,
    pub count: u64,
    /// Seconds between its last request and the report that saw it, least over pods.
    pub last_seen_ago: u64,
    pub clients: Vec<ClientUsage>,
}

impl FleetUsage {
    /// Merge one pod's report in.
    pub fn add(&mut self, report: &UsageReport) {
        self.requests += report.requests;
        for op in &report.operations {
            let ago = report.now.saturating_sub(op.last_seen);
            let entry = self
                .operations
                .entry(op.id.clone())
                .or_insert_with(|| FleetOperation {
                    name: op.name.clone(),
                    document: op.document.clone(),
                    count: 0,
                    last_seen_ago: ago,
                    clients: Vec::new(),
                });
            entry.count += op.count;
            entry.last_seen_ago = entry.last_seen_ago.min(ago);
            for client in &op.clients {
                match entry
                    .clients
                    .iter_mut()
                    .find(|c| c.name == client.name && c.version == client.version)
                {
                    Some(known) => known.count += client.count,
                    None => entry.clients.push(client.clone()),
                }
            }
            entry.clients.sort();
        }
    }

    /// The share of all recorded requests that `op` had (0.0 when none were recorded).
    pub fn share(&self, op: &FleetOperation) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        op.count as f64 / self.requests as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: &str, count: u64, last_seen: u64, clients: Vec<ClientUsage>) -> OperationUsage {
        OperationUsage {
            id: id.to_owned(),
            name: Some("Q".to_owned()),
            document: "query Q { a }".to_owned(),
            count,
            first_seen: 0,
            last_seen,
            clients,
        }
    }

    fn client(name: &str, count: u64) -> ClientUsage {
        ClientUsage {
            name: name.to_owned(),
            version: Some("1".to_owned()),
            count,
        }
    }

    #[test]
    fn reports_merge_by_operation_with_times_relative_to_each_pod() {
        let mut fleet = FleetUsage::default();
        fleet.add(&UsageReport {
            now: 1_000,
            requests: 10,
            operations: vec![
                op("a", 7, 990, vec![client("web", 7)]),
                op("b", 3, 900, vec![]),
            ],
            ..UsageReport::default()
        });
        // A pod whose clock runs 500 s ahead saw `a` 2 s before it answered.
        fleet.add(&UsageReport {
            now: 1_500,
            requests: 5,
            operations: vec![op("a", 5, 1_498, vec![client("web", 2), client("ios", 3)])],
            ..UsageReport::default()
        });
        assert_eq!(fleet.requests, 15);
        let a = &fleet.operations["a"];
        assert_eq!(a.count, 12);
        assert_eq!(a.last_seen_ago, 2);
        assert_eq!(a.clients, vec![client("ios", 3), client("web", 9)]);
        assert_eq!(fleet.operations["b"].last_seen_ago, 100);
        assert!((fleet.share(a) - 0.8).abs() < 1e-9);
    }

    #[test]
    fn readiness_names_a_revision_by_a_prefix_of_its_hash() {
        let ready: Readiness = serde_json::from_str(
            r#"{"status":"UP","reason":"ready","supergraph":"0123456789ab",
                "supergraph_sha256":"0123456789abcdef00","failed_reloads":0,"reload_error":null}"#,
        )
        .expect("a readiness body");
        assert!(ready.serves("0123456789abcdef"));
        assert!(!ready.serves("0123456789abcdee"));
        assert!(!ready.serves(""));
        let older: Readiness = serde_json::from_str(
            r#"{"status":"UP","reason":"ready","supergraph":"0123456789ab","failed_reloads":0,"reload_error":null}"#,
        )
        .expect("a body without the whole hash");
        assert!(!older.serves("0123456789ab"));
    }
}
