//! Stage 1, persisted documents: the operation text a request runs, before the plan
//! cache is asked. A plain request's own `query` costs one check; an id (`documentId`,
//! `extensions.persistedQuery`) is resolved by [`crate::persisted`] (the document list
//! and APQ), which also refuses what the configured mode does not allow.

use super::error::RequestError;
use super::request::GraphQLRequest;
use crate::persisted::{Ids, Persisted, Query};

/// The operation text of `request`: its `query` when it names no persisted document,
/// else what `persisted` (`None`: both features off) resolves.
pub fn query_of<'r>(
    persisted: Option<&Persisted>,
    request: &'r GraphQLRequest,
) -> Result<Query<'r>, RequestError> {
    let apq_hash = request
        .extensions
        .as_ref()
        .and_then(|e| e.persisted_query.as_ref())
        .map(|p| p.sha256_hash.as_str());
    let document_id = request.document_id.as_deref();
    let query = request.query.as_deref();
    let Some(persisted) = persisted else {
        return match (query, document_id, apq_hash) {
            (_, Some(id), _) => Err(documents_off(id)),
            (Some(query), None, _) => Ok(Query::Text(query)),
            // Apollo clients stop sending hashes and send the text on this error.
            (None, None, Some(_)) => Err(RequestError::coded(
                "PERSISTED_QUERY_NOT_SUPPORTED",
                "PersistedQueryNotSupported",
            )),
            (None, None, None) => Err(RequestError::message("request has no query")),
        };
    };
    let ids = Ids {
        query,
        document_id,
        apq_hash,
    };
    Ok(persisted.resolve(ids)?)
}

/// A `documentId` when persisted documents are off.
fn documents_off(id: &str) -> RequestError {
    RequestError::coded(
        "PERSISTED_DOCUMENT_NOT_FOUND",
        format!(
            "persisted document '{id}' cannot be run: persisted documents are not enabled on this gateway"
        ),
    )
}
