//! Persisted document list files read from disk; the formats are parsed by
//! [`graphfleet_config::manifest`], which the operator uses too.

use graphfleet_config::ManifestFormat;
pub use graphfleet_config::manifest::{DocumentList, ParseError, parse};
use std::path::Path;

/// Why a list file cannot be used; the message names the entry or the line and column.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
}

/// Read and parse the list file at `path`.
pub fn load(path: &Path, format: ManifestFormat) -> Result<DocumentList, ManifestError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ManifestError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&bytes, format).map_err(|e| match e {
        ParseError::Json(source) => ManifestError::Json {
            path: shown,
            source,
        },
        ParseError::Shape(message) => ManifestError::Shape {
            path: shown,
            message,
        },
    })
}
