//! Persisted documents (`persisted_documents`: an allow-list of operations by id, read
//! from a file) and automatic persisted queries (`apq`: a bounded cache clients fill).
//! The list file is parsed here at load time too, so a bad file fails the start with
//! the key and the problem; the gateway parses it again when it builds its list.

use super::size;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Persisted documents (trusted documents): operations registered ahead of time,
/// which clients run by id. Off unless `path` is set.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PersistedDocumentsConfig {
    /// The list file (a relative path is relative to the config file); the operator
    /// mounts the GraphGateway's ConfigMap here.
    pub path: Option<PathBuf>,
    /// The file's format; `auto` tells them apart by their shape.
    pub format: ManifestFormat,
    /// What happens to operations that are not in the list.
    pub mode: PersistedMode,
    /// Reload the list when the file (or a ConfigMap symlink swap) changes; a bad file
    /// keeps the last good list.
    pub watch: bool,
    /// How often the file is re-checked in addition to filesystem events.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub poll_interval: Duration,
}

impl Default for PersistedDocumentsConfig {
    fn default() -> Self {
        Self {
            path: None,
            format: ManifestFormat::Auto,
            mode: PersistedMode::AllowArbitrary,
            watch: true,
            poll_interval: Duration::from_secs(5),
        }
    }
}

impl PersistedDocumentsConfig {
    pub fn enabled(&self) -> bool {
        self.path.is_some()
    }
}

/// `persisted_documents.format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManifestFormat {
    /// An object with `"format": "apollo-persisted-query-manifest"` is Apollo's, any
    /// other object of strings is a key-value map (Relay's and Hive's shape).
    #[default]
    Auto,
    /// Apollo's persisted query manifest (`{"format", "version": 1, "operations": [...]}`).
    Apollo,
    /// Relay's `persisted_queries.json`: `{"<id>": "<document>"}`.
    Relay,
    /// Hive's app deployment documents: `{"<hash>": "<document>"}`; clients may send
    /// `appName~appVersion~hash`.
    Hive,
}

/// `persisted_documents.mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PersistedMode {
    /// Listed documents by id, and any operation sent as text (and APQ, when on).
    #[default]
    AllowArbitrary,
    /// Only listed documents: by id, or sent as text exactly as listed (compared by
    /// SHA-256 of the text). APQ registration is off.
    Safelist,
    /// Only listed documents, and only by id.
    RequireId,
}

/// Automatic persisted queries: a client sends the SHA-256 of its operation, and the
/// text only when the gateway does not have it yet.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ApqConfig {
    /// On by default, as in Apollo Router and Apollo Server; inactive when
    /// `persisted_documents.mode` is `safelist` or `require_id`.
    pub enabled: bool,
    /// Most operations kept; the least recently used go first.
    pub max_entries: usize,
    /// Most operation text kept, in bytes (`32MiB`).
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub max_bytes: usize,
}

impl Default for ApqConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_entries: 10_000,
            max_bytes: 32 * 1024 * 1024,
        }
    }
}

pub(crate) fn validate(config: &super::Config, report: &mut impl FnMut(&[&str], String)) {
    let docs = &config.persisted_documents;
    if docs.poll_interval.is_zero() {
        report(
            &["persisted_documents", "poll_interval"],
            "must be positive".to_owned(),
        );
    }
    match &docs.path {
        // The gateway reads the list at start-up.
        Some(_) => {}
        None if docs.mode != PersistedMode::AllowArbitrary => report(
            &["persisted_documents", "mode"],
            "needs persisted_documents.path: without a list every operation would be refused"
                .to_owned(),
        ),
        None => {}
    }
    let apq = &config.apq;
    if apq.enabled && apq.max_entries == 0 {
        report(
            &["apq", "max_entries"],
            "must be at least 1 (or set apq.enabled: false)".to_owned(),
        );
    }
    if apq.enabled && apq.max_bytes == 0 {
        report(
            &["apq", "max_bytes"],
            "must be at least 1 (or set apq.enabled: false)".to_owned(),
        );
    }
}
