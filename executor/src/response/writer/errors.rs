//! What the response carries besides data: errors and the paths they name.

use serde::Serialize;

/// `extensions.code` of a field removed by authorization (Apollo Router's code).
pub const UNAUTHORIZED_CODE: &str = "UNAUTHORIZED_FIELD_OR_TYPE";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// A [`PathSeg`] borrowed from the shapes, for the path the writer is at.
#[derive(Debug, Clone, Copy)]
pub(super) enum PathRef<'a> {
    Key(&'a str),
    Index(usize),
}

impl PathRef<'_> {
    pub(super) fn owned(&self) -> PathSeg {
        match self {
            PathRef::Key(k) => PathSeg::Key((*k).to_owned()),
            PathRef::Index(i) => PathSeg::Index(*i),
        }
    }

    pub(super) fn is(&self, seg: &PathSeg) -> bool {
        match (self, seg) {
            (PathRef::Key(a), PathSeg::Key(b)) => *a == b,
            (PathRef::Index(a), PathSeg::Index(b)) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResponseError {
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<PathSeg>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<serde_json::Value>,
}

impl ResponseError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            locations: Vec::new(),
            path: None,
            extensions: None,
        }
    }
}
