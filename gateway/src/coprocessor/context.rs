//! What one client request's coprocessor calls share: the request id sent to every
//! stage, the context entries they read and write, and the client's headers as the
//! router stage left them. Made only when a coprocessor is configured.

use serde_json::{Map, Value};

/// The validated JWT's claims (written by the gateway; a coprocessor may set them).
pub const JWT_CLAIMS: &str = "apollo::authentication::jwt_claims";
/// `@policy` policies the operation touches, each `null`; answered `true` to grant.
pub const REQUIRED_POLICIES: &str = "apollo::authorization::required_policies";
pub const OPERATION_NAME: &str = "apollo::supergraph::operation_name";
pub const OPERATION_KIND: &str = "apollo::supergraph::operation_kind";

#[derive(Debug)]
pub struct RequestContext {
    /// The same for every stage of the request: 32 lowercase hex digits.
    pub id: String,
    pub entries: parking_lot::Mutex<Map<String, Value>>,
    /// The client's request headers (after the router stage).
    pub headers: parking_lot::Mutex<http::HeaderMap>,
    pub method: http::Method,
}

impl RequestContext {
    /// A request's context, holding its claims when it has any.
    pub fn new(
        headers: http::HeaderMap,
        method: http::Method,
        claims: Option<&Map<String, Value>>,
    ) -> Self {
        let id = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let mut entries = Map::new();
        if let Some(claims) = claims {
            entries.insert(JWT_CLAIMS.to_owned(), Value::Object(claims.clone()));
        }
        Self {
            id,
            entries: parking_lot::Mutex::new(entries),
            headers: parking_lot::Mutex::new(headers),
            method,
        }
    }

    /// The claims in the context (the gateway's, or a coprocessor's), if an object.
    pub fn claims(&self) -> Option<Map<String, Value>> {
        match self.entries.lock().get(JWT_CLAIMS) {
            Some(Value::Object(claims)) => Some(claims.clone()),
            _ => None,
        }
    }
}
