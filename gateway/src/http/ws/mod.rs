//! GraphQL over WebSocket: the upgrade, which agrees on one of two subprotocols by
//! `Sec-WebSocket-Protocol` ([`wire`]): `graphql-transport-ws` (the graphql-ws
//! library's, [`transport_ws`]) or the legacy `graphql-ws` (subscriptions-transport-ws,
//! [`legacy`]); then one [`session`] per socket, whichever it speaks.

mod incoming;
mod init;
mod keepalive;
mod legacy;
mod operation;
mod session;
mod transport_ws;
mod wire;

use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::http::meta::Delivery;
use crate::http::multipart::HandlerBody;
use crate::pipeline::request::RequestMeta;
use hyper::header::{
    CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use wire::Protocol;

/// Whether `req` asks to become a WebSocket.
pub(super) fn is_upgrade<B>(req: &Request<B>) -> bool {
    let has = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    req.method() == hyper::Method::GET && has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

fn refuse(status: StatusCode, message: &str) -> Response<HandlerBody> {
    let body = serde_json::to_vec(&serde_json::json!({ "errors": [{ "message": message }] }))
        .expect("static JSON serializes");
    let mut r = Response::new(HandlerBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Answer the upgrade (101) and serve the socket in a task once hyper hands it over;
/// `meta` (headers for subgraphs, claims, client address) is taken from the upgrade
/// request and holds for every operation on the socket unless `connection_init`
/// brings a token.
pub(super) fn upgrade<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    mut req: Request<hyper::body::Incoming>,
    meta: RequestMeta,
    how: Delivery,
) -> Response<HandlerBody> {
    let headers = req.headers();
    if headers.get(SEC_WEBSOCKET_VERSION).is_none_or(|v| v != "13") {
        return refuse(StatusCode::BAD_REQUEST, "Sec-WebSocket-Version must be 13");
    }
    let Some(key) = headers.get(SEC_WEBSOCKET_KEY) else {
        return refuse(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key is missing");
    };
    let offers = headers.get_all(SEC_WEBSOCKET_PROTOCOL).iter();
    let Some(protocol) = Protocol::negotiate(offers.filter_map(|v| v.to_str().ok())) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the WebSocket subprotocol must be graphql-transport-ws or graphql-ws",
        );
    };
    let slot = match gateway.admit_socket(meta.client) {
        Ok(slot) => slot,
        Err(message) => return refuse(StatusCode::TOO_MANY_REQUESTS, &message),
    };
    let accept = derive_accept_key(key.as_bytes());
    let kept = init::Upgrade {
        // Kept only when `connection_init` may rebuild the meta from them.
        headers: if init::may_rebuild(gateway) {
            headers.clone()
        } else {
            hyper::HeaderMap::new()
        },
        peer: req
            .extensions()
            .get::<crate::http::ClientAddr>()
            .map(|a| a.0),
        how,
    };
    let config = socket_config(gateway.config.limits.max_body_bytes);
    let upgraded = hyper::upgrade::on(&mut req);
    let gateway = gateway.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let Ok(upgraded) = upgraded.await else { return };
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        session::serve(gateway, socket, protocol, meta, kept).await;
    });
    let mut r = Response::new(HandlerBody::default());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = r.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a header value"),
    );
    headers.insert(
        SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(protocol.name()),
    );
    r
}

/// Client messages are small: a 4 KiB read buffer instead of tungstenite's eager
/// 128 KiB keeps an open subscription cheap; a message is a request, so it is held to
/// the request body limit (`max`).
fn socket_config(max: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4096)
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
}

/// Serve an accepted `graphql-transport-ws` WebSocket until it closes, with `meta` as
/// its upgrade's: what [`upgrade`] runs once hyper hands the connection over; public
/// for the fuzz target, which drives it over an in-memory stream.
pub async fn serve_socket<T, S>(
    gateway: Arc<Gateway<T>>,
    socket: WebSocketStream<S>,
    meta: RequestMeta,
) where
    T: Transport,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let upgrade = init::Upgrade {
        headers: hyper::HeaderMap::new(),
        peer: meta.client,
        how: Delivery {
            allow_mutation: true,
            incremental: false,
            stream: true,
        },
    };
    session::serve(gateway, socket, Protocol::TransportWs, meta, upgrade).await;
}
