//! The operations this gateway serves, recorded for the operator's checks: each new
//! supergraph is validated and planned against them before a pod changes. Bounded in
//! memory (documents included); the least used operations make room first.
//!
//! The hot path pays one relaxed atomic add and a clock read per request: a plan-cache
//! entry holds its operation's [`UsageEntry`] (see [`crate::pipeline::operation`]), so
//! only the first request of an operation after a supergraph swap looks it up here.

use graphfleet_admin_api::{ClientUsage, OperationUsage, UsageReport};
use graphfleet_config::UsageConfig;
use parking_lot::Mutex;
use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Fixed cost of an entry besides its document and name, in bytes (estimated).
const ENTRY_OVERHEAD: u64 = 256;

/// The client application a request names by header, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientApp {
    pub name: Box<str>,
    pub version: Option<Box<str>>,
}

impl ClientApp {
    /// From `graphql-client-name`/`-version` (Hive, Cosmo) or
    /// `apollographql-client-name`/`-version` (Apollo clients).
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        let header = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|n| headers.get(*n)?.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(|v| Box::from(truncate(v, 128)))
        };
        Some(Self {
            name: header(["graphql-client-name", "apollographql-client-name"])?,
            version: header(["graphql-client-version", "apollographql-client-version"]),
        })
    }
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One recorded operation.
pub struct UsageEntry {
    id: [u8; 32],
    name: Option<Box<str>>,
    document: Box<str>,
    count: AtomicU64,
    first_seen: u64,
    last_seen: AtomicU64,
    clients: Mutex<Vec<ClientUsage>>,
    max_clients: usize,
    /// Set when the recorder dropped it: a plan-cache entry still holding it records
    /// its next request anew instead of counting into nothing.
    dropped: AtomicBool,
}

impl UsageEntry {
    fn hit(&self, now: u64, app: Option<&ClientApp>) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.last_seen.store(now, Ordering::Relaxed);
        let Some(app) = app else { return };
        let mut clients = self.clients.lock();
        let known = clients
            .iter()
            .position(|c| *c.name == *app.name && c.version.as_deref() == app.version.as_deref());
        match known {
            Some(at) => clients[at].count += 1,
            None if clients.len() < self.max_clients => clients.push(ClientUsage {
                name: app.name.to_string(),
                version: app.version.as_deref().map(str::to_owned),
                count: 1,
            }),
            None => {}
        }
    }

    fn report(&self) -> OperationUsage {
        let mut clients = self.clients.lock().clone();
        clients.sort();
        OperationUsage {
            id: hex(&self.id),
            name: self.name.as_deref().map(str::to_owned),
            document: self.document.to_string(),
            count: self.count.load(Ordering::Relaxed),
            first_seen: self.first_seen,
            last_seen: self.last_seen.load(Ordering::Relaxed),
            clients,
        }
    }
}

/// What a plan-cache entry keeps of its operation's recording.
pub enum Recorded {
    Entry(Arc<UsageEntry>),
    /// Its document is longer than `usage.max_document_bytes`.
    TooLong,
}

#[derive(Clone)]
struct ByDocument;

impl Weighter<[u8; 32], Arc<UsageEntry>> for ByDocument {
    fn weight(&self, _key: &[u8; 32], entry: &Arc<UsageEntry>) -> u64 {
        let name = entry.name.as_deref().map_or(0, str::len);
        ENTRY_OVERHEAD + (entry.document.len() + name) as u64
    }
}

/// Marks dropped entries and counts them.
#[derive(Clone, Default)]
struct OnDrop {
    dropped: Arc<AtomicU64>,
}

impl Lifecycle<[u8; 32], Arc<UsageEntry>> for OnDrop {
    type RequestState = ();

    fn on_evict(&self, _state: &mut (), _key: [u8; 32], entry: Arc<UsageEntry>) {
        entry.dropped.store(true, Ordering::Relaxed);
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

type Entries = Cache<[u8; 32], Arc<UsageEntry>, ByDocument, DefaultHashBuilder, OnDrop>;

/// The recorded operations of this gateway (kept across supergraph swaps).
pub struct UsageRecorder {
    entries: Entries,
    lifecycle: OnDrop,
    max_document: usize,
    max_clients: usize,
    since: u64,
    /// Requests of operations too long to record.
    skipped: AtomicU64,
    /// Requests of recorded operations, dropped ones included.
    requests: AtomicU64,
}

impl UsageRecorder {
    /// A recorder for `config`, `None` when recording is off.
    pub fn new(config: &UsageConfig) -> Option<Self> {
        if !config.record {
            return None;
        }
        let lifecycle = OnDrop::default();
        let max_bytes = config.max_bytes.max(1) as u64;
        let options = OptionsBuilder::new()
            .estimated_items_capacity((max_bytes / 2048).clamp(16, 65_536) as usize)
            .weight_capacity(max_bytes)
            .build()
            .expect("item and weight capacities are set");
        let entries = Cache::with_options(
            options,
            ByDocument,
            DefaultHashBuilder::default(),
            lifecycle.clone(),
        );
        Some(Self {
            entries,
            lifecycle,
            max_document: config.max_document_bytes,
            max_clients: config.max_clients_per_operation,
            since: unix_now(),
            skipped: AtomicU64::new(0),
            requests: AtomicU64::new(0),
        })
    }

    /// Count one request of the operation `name` in `document`; `recorded` is the
    /// plan-cache entry's slot for it.
    pub fn record(
        &self,
        recorded: &std::sync::OnceLock<Recorded>,
        name: Option<&str>,
        document: &str,
        app: Option<&ClientApp>,
    ) {
        let slot = recorded.get_or_init(|| self.entry(name, document));
        let Recorded::Entry(entry) = slot else {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        let now = unix_now();
        if entry.dropped.load(Ordering::Relaxed) {
            // Dropped while its plan stayed cached: record it again, from here on.
            if let Recorded::Entry(fresh) = self.entry(name, document) {
                fresh.hit(now, app);
            }
            return;
        }
        entry.hit(now, app);
    }

    fn entry(&self, name: Option<&str>, document: &str) -> Recorded {
        if document.len() > self.max_document {
            return Recorded::TooLong;
        }
        let id = operation_id(name, document);
        let make = || {
            Ok::<_, std::convert::Infallible>(Arc::new(UsageEntry {
                id,
                name: name.map(Box::from),
                document: Box::from(document),
                count: AtomicU64::new(0),
                first_seen: unix_now(),
                last_seen: AtomicU64::new(0),
                clients: Mutex::default(),
                max_clients: self.max_clients,
                dropped: AtomicBool::new(false),
            }))
        };
        let Ok(entry) = self.entries.get_or_insert_with(&id, make);
        Recorded::Entry(entry)
    }

    /// Everything recorded, most used first.
    pub fn report(&self, supergraph: Option<&[u8; 32]>) -> UsageReport {
        let mut operations: Vec<OperationUsage> = self
            .entries
            .iter()
            .map(|(_, entry)| entry.report())
            .collect();
        operations.retain(|op| op.count > 0);
        operations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.id.cmp(&b.id)));
        UsageReport {
            supergraph_sha256: supergraph.map(|h| hex(h)),
            now: unix_now(),
            since: self.since,
            requests: self.requests.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            dropped: self.lifecycle.dropped.load(Ordering::Relaxed),
            operations,
        }
    }
}

/// An operation's id: SHA-256 of its name, a NUL, and its document.
pub fn operation_id(name: Option<&str>, document: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(name.unwrap_or_default().as_bytes());
    hasher.update([0]);
    hasher.update(document.as_bytes());
    hasher.finalize().into()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        write!(out, "{b:02x}").expect("writing to a String cannot fail");
        out
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    fn recorder(max_bytes: usize) -> UsageRecorder {
        UsageRecorder::new(&UsageConfig {
            max_bytes,
            max_document_bytes: 1024,
            max_clients_per_operation: 2,
            ..UsageConfig::default()
        })
        .expect("recording is on")
    }

    fn app(name: &str, version: &str) -> ClientApp {
        ClientApp {
            name: name.into(),
            version: Some(version.into()),
        }
    }

    #[test]
    fn requests_count_per_operation_and_client_with_a_bounded_client_list() {
        let usage = recorder(1 << 20);
        let slot = OnceLock::new();
        for client in [
            app("web", "1"),
            app("web", "1"),
            app("ios", "2"),
            app("cli", "3"),
        ] {
            usage.record(&slot, Some("Q"), "query Q { a }", Some(&client));
        }
        usage.record(&slot, Some("Q"), "query Q { a }", None);
        // Another cache entry (say, after a supergraph swap) finds the same record.
        usage.record(&OnceLock::new(), Some("Q"), "query Q { a }", None);
        let report = usage.report(None);
        assert_eq!(report.requests, 6);
        let [op] = report.operations.as_slice() else {
            panic!("one operation, got {:?}", report.operations)
        };
        assert_eq!((op.name.as_deref(), op.count), (Some("Q"), 6));
        assert_eq!(op.id, hex(&operation_id(Some("Q"), "query Q { a }")));
        let clients: Vec<_> = op.clients.iter().map(|c| (&*c.name, c.count)).collect();
        assert_eq!(
            clients,
            [("ios", 1), ("web", 2)],
            "at most two clients kept"
        );
        assert!(op.last_seen >= op.first_seen && op.first_seen >= report.since);
    }

    #[test]
    fn long_documents_are_counted_not_kept() {
        let usage = recorder(1 << 20);
        let long = format!("query {{ {} }}", "a ".repeat(1024));
        usage.record(&OnceLock::new(), None, &long, None);
        let report = usage.report(None);
        assert_eq!((report.skipped, report.operations.len()), (1, 0));
    }

    #[test]
    fn memory_stays_bounded_and_a_dropped_operation_is_recorded_again() {
        let usage = recorder(64 << 10);
        let hot = OnceLock::new();
        usage.record(&hot, Some("Hot"), "query Hot { a }", None);
        for i in 0..2_000 {
            let doc = format!("query Q{i} {{ field{i} }}");
            usage.record(&OnceLock::new(), None, &doc, None);
        }
        let report = usage.report(None);
        let kept: u64 = report
            .operations
            .iter()
            .map(|op| ENTRY_OVERHEAD + op.document.len() as u64)
            .sum();
        assert!(kept <= 64 << 10, "{kept} bytes kept");
        assert!(report.dropped > 0);
        assert_eq!(report.requests, 2_001);
        // Whether or not `Hot` was dropped, its next request shows up in the report.
        usage.record(&hot, Some("Hot"), "query Hot { a }", None);
        let again = usage.report(None);
        assert!(
            again
                .operations
                .iter()
                .any(|op| op.name.as_deref() == Some("Hot"))
        );
    }

    #[test]
    fn client_headers_of_either_convention_name_the_app() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(ClientApp::from_headers(&headers), None);
        headers.insert(
            "apollographql-client-name",
            "web".parse().expect("a header"),
        );
        headers.insert("graphql-client-version", "7".parse().expect("a header"));
        assert_eq!(ClientApp::from_headers(&headers), Some(app("web", "7")));
    }
}
