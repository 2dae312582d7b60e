//! What the pipeline needs from a request's head ([`RequestMeta`]): the claims of its
//! valid token, the headers subgraphs get, the trace context and the client. HTTP
//! requests take it from their head at once; a WebSocket takes it from its upgrade and
//! again, with other claims, from a token in `connection_init`.

use crate::auth::{AuthError, Claims};
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::RequestMeta;
use hyper::StatusCode;
use hyper::header::WWW_AUTHENTICATE;
use std::net::IpAddr;

/// How a request may be answered, as its transport allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delivery {
    pub(crate) allow_mutation: bool,
    pub(crate) incremental: bool,
    pub(crate) stream: bool,
}

/// The claims of the token in `headers` (`None` without one); an invalid token, or a
/// missing one where required, is the 401 the client gets.
pub(crate) async fn authenticate<T: Transport>(
    gateway: &Gateway<T>,
    headers: &hyper::HeaderMap,
) -> Result<Option<Claims>, AuthError> {
    gateway.auth.authenticate(headers).await
}

/// The 401 answering a refused token.
pub(crate) fn unauthorized(e: &AuthError) -> RequestError {
    RequestError::http(StatusCode::UNAUTHORIZED, Some(e.code()), &e.to_string())
        .with_header(WWW_AUTHENTICATE, "Bearer")
}

/// The meta of a request with `headers` from TCP peer `peer`, holding `claims`.
pub(crate) fn build<T: Transport>(
    gateway: &Gateway<T>,
    headers: &hyper::HeaderMap,
    peer: Option<IpAddr>,
    claims: Option<Claims>,
    how: Delivery,
) -> RequestMeta {
    let forward_headers = gateway.header_rules.apply(headers, claims.as_deref());
    // Behind a trusted proxy, the client it names (the quotas are per client).
    let client = peer.map(|ip| gateway.client_addressing.client_of(ip, headers));
    let rate_key = gateway
        .rate_limiter
        .as_ref()
        .and_then(|l| l.client_key())
        .and_then(|key| rate_key(key, client, headers, claims.as_deref()));
    let app = gateway
        .usage
        .as_ref()
        .and_then(|_| crate::usage::ClientApp::from_headers(headers));
    RequestMeta {
        app,
        allow_mutation: how.allow_mutation,
        forward_headers,
        trace_context: crate::telemetry::tracing::trace_headers(headers),
        claims,
        incremental: how.incremental,
        stream: how.stream,
        client,
        rate_key,
        // An HTTP request's is set by its caller; a WebSocket's operations time their own.
        deadline: None,
        init_payload: None,
        coprocessor: None,
    }
}

/// The client as `key` tells them apart: its address, a header's value or a claim
/// (a string claim as it is, another as its JSON text).
fn rate_key(
    key: &graphfleet_config::ClientKey,
    client: Option<std::net::IpAddr>,
    headers: &hyper::HeaderMap,
    claims: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Option<Box<str>> {
    use graphfleet_config::ClientKey;
    match key {
        ClientKey::Ip => client.map(|ip| ip.to_string().into()),
        ClientKey::Header(name) => headers
            .get(name.as_str())
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into()),
        ClientKey::Claim(name) => claims?.get(name).map(|v| match v {
            serde_json::Value::String(s) => s.as_str().into(),
            other => other.to_string().into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::rate_key;
    use graphfleet_config::ClientKey;

    #[test]
    fn rate_keys_come_from_the_address_a_header_or_a_claim() {
        let ip = Some("10.1.2.3".parse().expect("an address"));
        let mut headers = hyper::HeaderMap::new();
        headers.insert("x-api-key", "k1".parse().expect("a value"));
        let claims = serde_json::json!({ "sub": "user-7", "tenant": 42 });
        let claims = claims.as_object();
        let key = |k: &ClientKey| rate_key(k, ip, &headers, claims).map(String::from);
        assert_eq!(key(&ClientKey::Ip).as_deref(), Some("10.1.2.3"));
        assert_eq!(
            key(&ClientKey::Header("x-api-key".into())).as_deref(),
            Some("k1")
        );
        assert_eq!(
            key(&ClientKey::Claim("sub".into())).as_deref(),
            Some("user-7")
        );
        assert_eq!(
            key(&ClientKey::Claim("tenant".into())).as_deref(),
            Some("42")
        );
        assert_eq!(key(&ClientKey::Claim("missing".into())), None);
        assert_eq!(
            rate_key(&ClientKey::Claim("sub".into()), ip, &headers, None),
            None
        );
    }
}
