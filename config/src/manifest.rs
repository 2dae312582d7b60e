//! Persisted document list files, parsed from bytes (the gateway reads the file, the
//! operator the ConfigMap or Secret it is mounted from): Apollo's persisted query
//! manifest, and the key-value map (`{"<id>": "<document>"}`) that Relay's compiler and
//! Hive's app deployments write.

use crate::ManifestFormat;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The `format` value of an Apollo persisted query manifest.
const APOLLO_FORMAT: &str = "apollo-persisted-query-manifest";

/// The documents of one list file, by id and by the SHA-256 of their text.
#[derive(Debug, Default)]
pub struct DocumentList {
    by_id: FxHashMap<Box<str>, Arc<str>>,
    by_text_hash: FxHashMap<[u8; 32], Arc<str>>,
    /// The format the file was read as (`auto` resolved).
    pub format: Option<ManifestFormat>,
}

impl DocumentList {
    /// The document registered under `id`. A Hive id `appName~appVersion~hash` is also
    /// looked up by its hash, as a list file holds one app version's documents.
    pub fn get(&self, id: &str) -> Option<&Arc<str>> {
        self.by_id.get(id).or_else(|| {
            let (_, hash) = hive_id(id)?;
            self.by_id.get(hash)
        })
    }

    /// The listed document whose text has this SHA-256 (APQ hashes, safelisted text).
    pub fn by_text_hash(&self, hash: &[u8; 32]) -> Option<&Arc<str>> {
        self.by_text_hash.get(hash)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Every listed document with its id, in no particular order.
    pub fn documents(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_id.iter().map(|(id, text)| (&**id, &**text))
    }

    fn insert(&mut self, id: String, text: String) {
        let text: Arc<str> = text.into();
        self.by_text_hash
            .insert(Sha256::digest(text.as_bytes()).into(), text.clone());
        self.by_id.insert(id.into_boxed_str(), text);
    }
}

/// `appName~appVersion~hash` split into the app and the hash.
fn hive_id(id: &str) -> Option<(&str, &str)> {
    let (app, hash) = id.rsplit_once('~')?;
    app.contains('~').then_some((app, hash))
}

/// Why a list file's bytes are not a document list.
#[derive(Debug)]
pub enum ParseError {
    Json(serde_json::Error),
    Shape(String),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Json(e) => write!(f, "not valid JSON: {e}"),
            ParseError::Shape(m) => f.write_str(m),
        }
    }
}

/// Parse a list file's bytes as `format`.
pub fn parse(bytes: &[u8], format: ManifestFormat) -> Result<DocumentList, ParseError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(ParseError::Json)?;
    let serde_json::Value::Object(object) = value else {
        return Err(ParseError::Shape(
            "the list must be a JSON object (an Apollo manifest or an id -> document map)"
                .to_owned(),
        ));
    };
    let format = match format {
        ManifestFormat::Auto if object.contains_key("format") => ManifestFormat::Apollo,
        ManifestFormat::Auto => ManifestFormat::Relay,
        f => f,
    };
    let mut list = match format {
        ManifestFormat::Apollo => apollo(object)?,
        _ => key_value(object)?,
    };
    list.format = Some(format);
    Ok(list)
}

fn shape(message: impl Into<String>) -> ParseError {
    ParseError::Shape(message.into())
}

fn apollo(
    mut object: serde_json::Map<String, serde_json::Value>,
) -> Result<DocumentList, ParseError> {
    match object.get("format").and_then(|f| f.as_str()) {
        Some(APOLLO_FORMAT) => {}
        Some(other) => {
            return Err(shape(format!(
                "format is {other:?}; an Apollo manifest has \"{APOLLO_FORMAT}\""
            )));
        }
        None => return Err(shape(format!("format: missing (\"{APOLLO_FORMAT}\")"))),
    }
    match object.get("version").and_then(serde_json::Value::as_u64) {
        Some(1) => {}
        _ => {
            return Err(shape(format!(
                "version is {}; only version 1 of the Apollo manifest is known",
                object
                    .get("version")
                    .map_or("missing".to_owned(), |v| v.to_string())
            )));
        }
    }
    let Some(serde_json::Value::Array(operations)) = object.remove("operations") else {
        return Err(shape("operations: missing or not an array"));
    };
    let mut list = DocumentList::default();
    for (i, operation) in operations.into_iter().enumerate() {
        let serde_json::Value::Object(mut op) = operation else {
            return Err(shape(format!("operations[{i}]: not an object")));
        };
        let mut field = |name: &str| match op.remove(name) {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s),
            _ => Err(shape(format!(
                "operations[{i}].{name}: missing or not a non-empty string"
            ))),
        };
        let (id, body) = (field("id")?, field("body")?);
        if list.by_id.contains_key(id.as_str()) {
            return Err(shape(format!("operations[{i}].id: {id:?} is listed twice")));
        }
        list.insert(id, body);
    }
    Ok(list)
}

fn key_value(
    object: serde_json::Map<String, serde_json::Value>,
) -> Result<DocumentList, ParseError> {
    let mut list = DocumentList::default();
    for (id, document) in object {
        let serde_json::Value::String(text) = document else {
            return Err(shape(format!(
                "{id:?}: the document must be a string (a key-value list maps ids to documents)"
            )));
        };
        if id.is_empty() || text.is_empty() {
            return Err(shape(format!("{id:?}: empty id or document")));
        }
        list.insert(id, text);
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apollo_manifest_is_detected_and_indexed() {
        let file = br#"{"format":"apollo-persisted-query-manifest","version":1,
            "operations":[{"id":"abc","name":"Me","type":"query","body":"query Me { me { id } }"}]}"#;
        let list = parse(file, ManifestFormat::Auto).expect("valid manifest");
        assert_eq!(list.format, Some(ManifestFormat::Apollo));
        assert_eq!(
            list.get("abc").map(|d| &**d),
            Some("query Me { me { id } }")
        );
        let hash: [u8; 32] = Sha256::digest(b"query Me { me { id } }").into();
        assert!(list.by_text_hash(&hash).is_some());
        assert!(list.get("abd").is_none());
    }

    #[test]
    fn key_value_lists_and_hive_ids() {
        let list = parse(br#"{"h1": "{ a }"}"#, ManifestFormat::Auto).expect("valid map");
        assert_eq!(list.format, Some(ManifestFormat::Relay));
        assert_eq!(list.get("app~1.0.0~h1").map(|d| &**d), Some("{ a }"));
        // Two parts are not a Hive id.
        assert!(list.get("app~h1").is_none());
    }

    #[test]
    fn errors_name_the_place() {
        let Err(ParseError::Json(e)) = parse(b"{\n  \"a\": \"{ a }\",\n}", ManifestFormat::Auto)
        else {
            panic!("trailing comma accepted");
        };
        assert_eq!((e.line(), e.column()), (3, 1));
        let Err(ParseError::Shape(m)) = parse(br#"{"a": 1}"#, ManifestFormat::Relay) else {
            panic!("number accepted as a document");
        };
        assert!(m.starts_with("\"a\": the document must be a string"), "{m}");
        let file = br#"{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"x"}]}"#;
        let Err(ParseError::Shape(m)) = parse(file, ManifestFormat::Auto) else {
            panic!("operation without body accepted");
        };
        assert_eq!(m, "operations[0].body: missing or not a non-empty string");
        let Err(ParseError::Shape(m)) =
            parse(br#"{"format":"x","version":1}"#, ManifestFormat::Auto)
        else {
            panic!("unknown format accepted");
        };
        assert!(m.starts_with("format is \"x\""), "{m}");
    }
}
