//! Persisted documents (an allow-list of operations by id, from a file) and automatic
//! persisted queries (APQ): turning a request's id into the operation text before the
//! plan cache is asked, and refusing what the configured mode does not allow.
//!
//! Ids arrive as `documentId` (Hive, the GraphQL-over-HTTP persisted documents draft),
//! `doc_id` (Relay's documentation) or `extensions.persistedQuery.sha256Hash` (Apollo's
//! APQ and persisted queries). The error codes are the ones those clients and gateways
//! use; see "Persisted documents and APQ" in gateway/README.md.

pub mod apq;
pub mod manifest;

use crate::operation::RequestErrors;
use crate::operation::limits::error;
use apq::ApqCache;
use arc_swap::ArcSwap;
use graphfleet_config::{Config, ManifestFormat, PersistedMode};
use manifest::DocumentList;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A request's `extensions`; members other than `persistedQuery` are not read.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestExtensions {
    #[serde(default)]
    pub persisted_query: Option<PersistedQuery>,
}

/// `extensions.persistedQuery` (Apollo; `version` is 1 and not checked).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistedQuery {
    pub sha256_hash: String,
}

/// The operation text a request runs: its own, or a persisted one.
pub enum Query<'r> {
    Text(&'r str),
    Persisted(Arc<str>),
}

impl std::ops::Deref for Query<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Query::Text(t) => t,
            Query::Persisted(t) => t,
        }
    }
}

/// What a request carries that this module reads.
#[derive(Clone, Copy)]
pub struct Ids<'r> {
    pub query: Option<&'r str>,
    /// `documentId` or `doc_id`.
    pub document_id: Option<&'r str>,
    /// `extensions.persistedQuery.sha256Hash`.
    pub apq_hash: Option<&'r str>,
}

/// The persisted document list as loaded from its file, swapped whole on reload.
pub struct Documents {
    list: ArcSwap<DocumentList>,
    path: PathBuf,
    format: ManifestFormat,
    /// SHA-256 of the file content last tried (valid or not), so a change is acted on once.
    last_seen: Mutex<Option<[u8; 32]>>,
    /// The last read error, so a missing file is reported once.
    last_read_error: Mutex<Option<String>>,
}

impl Documents {
    /// The list in `path`; a file that does not load is logged and gives an empty list
    /// (config validation refuses it at start-up, so this is a race with a writer).
    pub fn load(path: &Path, format: ManifestFormat) -> Self {
        let docs = Self {
            list: ArcSwap::from_pointee(DocumentList::default()),
            path: path.to_owned(),
            format,
            last_seen: Mutex::new(None),
            last_read_error: Mutex::new(None),
        };
        docs.reload();
        docs
    }

    pub fn current(&self) -> Arc<DocumentList> {
        self.list.load_full()
    }

    /// Re-read the file; a changed file that parses replaces the list, one that does not
    /// is logged and the last good list stays. True when the list was replaced.
    pub fn reload(&self) -> bool {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) => {
                let error = e.to_string();
                let mut last = self.last_read_error.lock();
                if last.as_deref() != Some(error.as_str()) {
                    tracing::error!(
                        path = %self.path.display(),
                        "cannot read the persisted documents file ({error}); keeping the last \
                         good list ({} documents)",
                        self.list.load().len()
                    );
                    *last = Some(error);
                }
                // The next readable content counts as a change even if it is the old one.
                *self.last_seen.lock() = None;
                return false;
            }
        };
        *self.last_read_error.lock() = None;
        let hash: [u8; 32] = Sha256::digest(&bytes).into();
        {
            let mut seen = self.last_seen.lock();
            if *seen == Some(hash) {
                return false;
            }
            *seen = Some(hash);
        }
        match manifest::parse(&bytes, self.format) {
            Ok(list) => {
                tracing::info!(
                    path = %self.path.display(),
                    documents = list.len(),
                    format = ?list.format.unwrap_or(self.format),
                    "persisted documents loaded"
                );
                self.list.store(Arc::new(list));
                true
            }
            Err(e) => {
                let why = match e {
                    manifest::ParseError::Json(e) => format!("not valid JSON: {e}"),
                    manifest::ParseError::Shape(m) => m,
                };
                tracing::error!(
                    path = %self.path.display(),
                    "persisted documents file rejected, keeping the last good list \
                     ({} documents): {why}",
                    self.list.load().len()
                );
                false
            }
        }
    }
}

/// Persisted documents and APQ as configured; `None` in the gateway when both are off.
pub struct Persisted {
    pub documents: Option<Arc<Documents>>,
    mode: PersistedMode,
    /// `None` when APQ is off or the mode allows listed documents only.
    pub apq: Option<ApqCache>,
}

impl Persisted {
    /// The runtime for `config`, or `None` when neither feature is on.
    pub fn from_config(config: &Config) -> Option<Self> {
        let docs = &config.persisted_documents;
        let mode = docs.mode;
        let documents = docs
            .path
            .as_deref()
            .map(|p| Arc::new(Documents::load(p, docs.format)));
        let apq = (config.apq.enabled && mode == PersistedMode::AllowArbitrary)
            .then(|| ApqCache::new(&config.apq));
        if documents.is_none() && apq.is_none() {
            return None;
        }
        Some(Self {
            documents,
            mode,
            apq,
        })
    }

    /// Whether `text` is in the persisted document list (APQ entries are not).
    pub fn lists(&self, text: &str) -> bool {
        let Some(documents) = &self.documents else {
            return false;
        };
        let hash: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        documents.current().by_text_hash(&hash).is_some()
    }

    /// The operation text `ids` stand for, or the error the client gets.
    pub fn resolve<'r>(&self, ids: Ids<'r>) -> Result<Query<'r>, RequestErrors> {
        let list = self.documents.as_ref().map(|d| d.current());
        if let Some(id) = ids.document_id {
            if ids.query.is_some() {
                return Err(id_and_body());
            }
            return match list.as_deref().and_then(|l| l.get(id)) {
                Some(text) => Ok(Query::Persisted(text.clone())),
                None => Err(one(
                    "PERSISTED_DOCUMENT_NOT_FOUND",
                    format!("persisted document '{id}' is not in the persisted documents list"),
                )),
            };
        }
        if let Some(hash) = ids.apq_hash {
            return self.resolve_hash(list.as_deref(), hash, ids.query);
        }
        let Some(query) = ids.query else {
            return Err(RequestErrors::message("request has no query"));
        };
        match self.mode {
            PersistedMode::AllowArbitrary => Ok(Query::Text(query)),
            PersistedMode::RequireId => Err(one(
                "PERSISTED_QUERY_ID_REQUIRED",
                "this gateway runs persisted documents only: send the operation's id \
                 (documentId, or extensions.persistedQuery.sha256Hash) instead of its text",
            )),
            PersistedMode::Safelist => {
                let hash: [u8; 32] = Sha256::digest(query.as_bytes()).into();
                match list.as_deref().and_then(|l| l.by_text_hash(&hash)) {
                    Some(_) => Ok(Query::Text(query)),
                    None => Err(one(
                        "QUERY_NOT_IN_SAFELIST",
                        "the operation's text is not in the persisted documents safelist \
                         (texts are compared exactly, whitespace included)",
                    )),
                }
            }
        }
    }

    /// `extensions.persistedQuery`: a listed id, a listed text's SHA-256, or an APQ entry;
    /// with a query, an APQ registration.
    fn resolve_hash<'r>(
        &self,
        list: Option<&DocumentList>,
        hash: &str,
        query: Option<&'r str>,
    ) -> Result<Query<'r>, RequestErrors> {
        let digest = parse_sha256(hash);
        if let Some(query) = query {
            let actual: [u8; 32] = Sha256::digest(query.as_bytes()).into();
            if digest != Some(actual) {
                return Err(one(
                    "PERSISTED_QUERY_HASH_MISMATCH",
                    "provided sha does not match query",
                ));
            }
            let listed = list.is_some_and(|l| l.by_text_hash(&actual).is_some());
            if listed {
                return Ok(Query::Text(query));
            }
            if self.mode != PersistedMode::AllowArbitrary {
                return Err(not_in_list(hash));
            }
            // APQ registration (a text with its hash runs as text when APQ is off).
            if let Some(apq) = &self.apq {
                apq.insert(actual, query);
            }
            return Ok(Query::Text(query));
        }
        let listed = list.and_then(|l| {
            l.get(hash)
                .or_else(|| digest.and_then(|d| l.by_text_hash(&d)))
        });
        if let Some(text) = listed {
            return Ok(Query::Persisted(text.clone()));
        }
        match &self.apq {
            Some(apq) => match digest.and_then(|d| apq.get(&d)) {
                Some(text) => Ok(Query::Persisted(text)),
                None => Err(apq_not_found()),
            },
            None => Err(not_in_list(hash)),
        }
    }
}

/// Reload `persisted`'s documents file when it changes (`persisted_documents.watch`);
/// `None` when there is nothing to watch.
pub fn watch(
    persisted: Option<&Persisted>,
    config: &Config,
) -> std::io::Result<Option<crate::reload::WatchHandle>> {
    let docs = persisted.and_then(|p| p.documents.clone());
    let (Some(docs), true) = (docs, config.persisted_documents.watch) else {
        return Ok(None);
    };
    let path = docs.path.clone();
    let poll = config.persisted_documents.poll_interval;
    crate::reload::watch_file(&path, poll, "persisted-documents", move || {
        docs.reload();
    })
    .map(Some)
}

fn apq_not_found() -> RequestErrors {
    one("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
}

fn not_in_list(id: &str) -> RequestErrors {
    one(
        "PERSISTED_QUERY_NOT_IN_LIST",
        format!("persisted query '{id}' is not in the persisted documents list"),
    )
}

fn id_and_body() -> RequestErrors {
    one(
        "CANNOT_SEND_PQ_ID_AND_BODY",
        "a request may carry a documentId or a query, not both",
    )
}

fn one(code: &str, message: impl Into<String>) -> RequestErrors {
    RequestErrors(vec![error(code, message)])
}

/// A lowercase or uppercase hex SHA-256; `None` for anything else.
fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_parses_both_cases() {
        let digest: [u8; 32] = Sha256::digest(b"{ a }").into();
        let hex = crate::supergraph::hex(&digest);
        assert_eq!(parse_sha256(&hex), Some(digest));
        assert_eq!(parse_sha256(&hex.to_uppercase()), Some(digest));
        assert_eq!(parse_sha256(&hex[..62]), None);
        assert_eq!(parse_sha256(&format!("{}zz", &hex[..62])), None);
    }
}
