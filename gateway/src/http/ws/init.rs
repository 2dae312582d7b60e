//! `connection_init`: a token in its payload (`subscriptions.init_token_key`) is
//! validated like the HTTP header's and its claims become the connection's (header
//! rules and authorization see them); the payload keys `subscriptions.forward_init_keys`
//! names go on to the subgraphs' WebSocket `connection_init`.

use crate::auth::AuthError;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::http::meta::{self, Delivery};
use crate::pipeline::request::RequestMeta;
use graphfleet_ws_protocol::{Close, CloseCode};
use serde_json::{Map, Value};
use std::net::IpAddr;
use std::sync::Arc;

/// What the connection keeps of its upgrade request to build its meta again.
pub(super) struct Upgrade {
    pub(super) headers: hyper::HeaderMap,
    /// The TCP peer.
    pub(super) peer: Option<IpAddr>,
    pub(super) how: Delivery,
}

/// Whether a `connection_init` may change a connection's meta (a token read, keys
/// forwarded): only then is the upgrade's [`Upgrade`] kept whole.
pub(super) fn may_rebuild<T: Transport>(gateway: &Gateway<T>) -> bool {
    let config = &gateway.config.subscriptions;
    (gateway.auth.enabled() && config.init_token_key.is_some())
        || !config.forward_init_keys.is_empty()
}

/// The meta the connection's operations run with once `payload` (the
/// `connection_init` payload's JSON text) is accepted; `None`: `current` as it is.
/// A refused token is the close the client gets (4403).
pub(super) async fn accept<T: Transport>(
    gateway: &Gateway<T>,
    upgrade: &Upgrade,
    current: &RequestMeta,
    payload: Option<&str>,
) -> Result<Option<RequestMeta>, Close> {
    if !may_rebuild(gateway) {
        return Ok(None);
    }
    let config = &gateway.config.subscriptions;
    let token_key = config
        .init_token_key
        .as_deref()
        .filter(|_| gateway.auth.enabled());
    let forwards = !config.forward_init_keys.is_empty();
    let object = match payload {
        Some(text) => serde_json::from_str::<Map<String, Value>>(text)
            .map_err(|e| Close::bad_request(format_args!("the connection_init payload: {e}")))?,
        _ => Map::new(),
    };
    let claims = match token_key {
        Some(key) => token_claims(gateway, &object, key, current).await?,
        None => None,
    };
    let init_payload = forwards.then(|| forwarded(&object, &config.forward_init_keys));
    let init_payload = init_payload.flatten();
    if claims.is_none() && init_payload.is_none() {
        return Ok(None);
    }
    let claims = claims.or_else(|| current.claims.clone());
    let mut meta = meta::build(gateway, &upgrade.headers, upgrade.peer, claims, upgrade.how);
    meta.init_payload = init_payload;
    Ok(Some(meta))
}

/// The claims of the token at `key` (case-insensitive); `None` without one, which
/// `authentication.require_authentication` refuses unless the upgrade had a token.
async fn token_claims<T: Transport>(
    gateway: &Gateway<T>,
    object: &Map<String, Value>,
    key: &str,
    current: &RequestMeta,
) -> Result<Option<crate::auth::Claims>, Close> {
    let found = object.iter().find(|(k, _)| k.eq_ignore_ascii_case(key));
    match found.map(|(_, v)| v) {
        Some(Value::String(value)) => gateway
            .auth
            .authenticate_value(value)
            .await
            .map_err(|e| forbidden(&e)),
        Some(_) => Err(forbidden(&AuthError::Invalid(format!(
            "the connection_init payload's {key} is not a string"
        )))),
        None if gateway.auth.required() && current.claims.is_none() => {
            Err(forbidden(&AuthError::Missing(format!(
                "connection_init payload's {key} (or the upgrade's header)"
            ))))
        }
        None => Ok(None),
    }
}

/// 4403 saying why (the client reads the reason: graphql-ws reports it).
fn forbidden(e: &AuthError) -> Close {
    Close::new(CloseCode::FORBIDDEN, format!("Forbidden: {e}"))
}

/// The payload's `keys` as a JSON object's text; `None` when it has none of them.
fn forwarded(object: &Map<String, Value>, keys: &[String]) -> Option<Arc<str>> {
    let picked: Map<String, Value> = keys
        .iter()
        .filter_map(|k| Some((k.clone(), object.get(k)?.clone())))
        .collect();
    if picked.is_empty() {
        return None;
    }
    let text = serde_json::to_string(&picked).expect("JSON values serialize");
    Some(text.into())
}

#[cfg(test)]
mod tests {
    use super::forwarded;
    use serde_json::json;

    #[test]
    fn only_the_named_keys_are_forwarded() {
        let payload = json!({ "Authorization": "Bearer t", "tenant": {"id": 7}, "x": 1 });
        let object = payload.as_object().expect("an object");
        let keys = [
            "tenant".to_owned(),
            "Authorization".to_owned(),
            "y".to_owned(),
        ];
        let text = forwarded(object, &keys).expect("two keys");
        let back: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            back,
            json!({ "Authorization": "Bearer t", "tenant": {"id": 7} })
        );
        assert_eq!(forwarded(object, &["y".to_owned()]), None);
    }
}
